// Python isolates hold wasm the process must let go of: the spike saw an ExternalCopy of a
// WebAssembly.Module keep Node from exiting, and process.exit() right after disposing wasm
// isolates segfault in about half the runs. A soak of the whole cycle on the real server: start
// it, create Python graders, grade, delete them, kill a sandbox worker and grade on its
// replacement, stop it with SIGTERM — several times. Every stop must be clean: the server exits
// 0, and no sandbox worker exits by a signal it was not sent (a crash at exit shows as one).

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { childPids } from "../bench/proc.ts";
import { spawnServer } from "./support/helpers.ts";

const CYCLES = 3;
const SOURCE = (n: number) =>
  `import random\n\nSEEN = []\n\nasync def grade(thread):\n    SEEN.append(random.random())\n    return 1.0 if thread.completion() == "${n}" else 0.0\n`;
const said = (text: string) => ({
  turns: [
    { role: "user", content: "say a number" },
    { role: "assistant", content: text },
  ],
  metadata: {},
});

test(`${CYCLES} cycles of start, create, grade, delete, a worker killed and replaced, and SIGTERM end cleanly`, {
  timeout: 600_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), "gradebox-python-exit-"));
  try {
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const server = await spawnServer({ GRADEBOX_DB: join(dir, "g.db"), GRADEBOX_WORKERS: "2", GRADEBOX_LOG_LEVEL: "info" });
      const key = readFileSync(join(dir, "default.key"), "utf8").trim();
      const api = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${server.url}/v1/projects/default/graders${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await res.text();
        return { status: res.status, body: text ? JSON.parse(text) : undefined };
      };
      try {
        for (let n = 0; n < 2; n++) {
          const key = `py-${cycle}-${n}`;
          const created = await api("POST", "", { key, language: "python", source: SOURCE(n) });
          assert.equal(created.status, 201, JSON.stringify(created.body));
          const graded = await api("POST", `/${key}/grade-batch`, { threads: [said(String(n)), said("x")] });
          assert.deepEqual(graded.body.results, [
            { outcome: "scored", score: 1 },
            { outcome: "scored", score: 0 },
          ]);
        }
        // a worker killed: the pool starts another, and a Python grader grades on it
        const workers = childPids(server.child.pid as number);
        assert.ok(workers.length >= 2, `sandbox workers: ${workers}`);
        process.kill(workers[0], "SIGKILL");
        let regraded: { status: number; body?: { results?: unknown } } = { status: 0 };
        for (let tries = 0; tries < 3; tries++) {
          regraded = await api("POST", `/py-${cycle}-0/grade-batch`, { threads: [said("0")] });
          if (regraded.status === 200 && JSON.stringify(regraded.body?.results) === JSON.stringify([{ score: 1 }])) break;
        }
        assert.deepEqual(regraded.body?.results, [{ outcome: "scored", score: 1 }], JSON.stringify(regraded.body));
        for (let n = 0; n < 2; n++) assert.equal((await api("DELETE", `/py-${cycle}-${n}`)).status, 204);
      } finally {
        server.child.kill("SIGTERM");
      }
      const code = await server.exited;
      const logs = server.logs();
      assert.equal(code, 0, `cycle ${cycle}: the server exited ${code}\n${logs.slice(-3000)}`);
      // the one worker this test killed is the only one that may have ended by a signal
      const exits = logs.split("\n").filter((line) => line.includes('"workerPid"'));
      const signalled = exits.flatMap((line) => /"signal":"(SIG[A-Z]+)"/.exec(line)?.[1] ?? []);
      assert.ok(signalled.includes("SIGKILL"), `cycle ${cycle}: the killed worker's exit is logged\n${logs.slice(-3000)}`);
      assert.deepEqual(
        signalled.filter((s) => s !== "SIGKILL"),
        [],
        `cycle ${cycle}: a worker ended by a signal\n${logs.slice(-3000)}`,
      );
      assert.ok(signalled.filter((s) => s === "SIGKILL").length <= 1, `cycle ${cycle}: more than the killed worker died`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
