// What the hostile suites watch on the host while graders attack it: a marker path no grader may
// write, a loopback listener no grader may reach, and a canary in this process's environment (set
// before the server starts, so its workers inherit it) that no grader may change.

import assert from "node:assert/strict";
import { existsSync, mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface HostWatch {
  /** a path on the host a grader would write to if it escaped */
  marker: string;
  /** the listener's port on 127.0.0.1 */
  port: number;
  /** fails when a file was written, the environment changed or anything connected */
  assertUntouched(): void;
  close(): void;
}

export async function watchHost(): Promise<HostWatch> {
  const canary = `canary-${process.pid}`;
  process.env.GRADEBOX_TEST_CANARY = canary;
  const marker = join(mkdtempSync(join(tmpdir(), "gradebox-marker-")), "escaped");
  let connections = 0;
  const listener = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  return {
    marker,
    port: (listener.address() as { port: number }).port,
    assertUntouched() {
      assert.equal(existsSync(marker), false, "no file was written on the host");
      assert.equal(process.env.GRADEBOX_TEST_CANARY, canary, "the environment is untouched");
      assert.equal(connections, 0, "nothing connected to the host network");
    },
    close: () => listener.close(),
  };
}
