// Every shell block of the README runs as written, against a real server, in the README's
// order. The one substitution: the key comes from this test's server, not data/default.key.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { repoRoot, type SpawnedServer, spawnServer } from "./helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "gradebox-readme-"));
const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
const KEY_EXPORT = "export GRADEBOX_API_KEY=$(cat data/default.key)";
const userPath = (process.env.PATH ?? "")
  .split(delimiter)
  .filter((p) => !p.endsWith("/.node/bin"))
  .join(delimiter);
let server: SpawnedServer;
let key: string;

before(async () => {
  // started as the README says for judges that call a model on this machine
  server = await spawnServer({ GRADEBOX_DB: join(dir, "gradebox.db"), GRADEBOX_LOG_LEVEL: "warn", GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32" });
  key = readFileSync(join(dir, "default.key"), "utf8").trim();
});
after(async () => {
  server.child.kill("SIGTERM");
  await server.exited;
  rmSync(join(repoRoot, "scores.jsonl"), { force: true });
  rmSync(dir, { recursive: true, force: true });
});

test("the README opens with the two front-door commands", () => {
  assert.match(
    blocks[0],
    /^make run\b[^\n]*\nmake test\b/,
    "make run, then make test (CI runs the second; the server tests run the first's entry point)",
  );
});

for (const [i, block] of blocks.slice(1).entries()) {
  test(`README shell block ${i + 2}: ${block.split("\n")[0].slice(0, 60)}`, async () => {
    const script = block.replace(KEY_EXPORT, `export GRADEBOX_API_KEY=${key}`);
    const { stdout, stderr } = await promisify(execFile)("bash", ["-euo", "pipefail", "-c", script], {
      cwd: repoRoot,
      // as a user's shell has it: the machine's own Node first, not the project's .node/bin
      env: { ...process.env, PATH: userPath, GRADEBOX_URL: server.url, GRADEBOX_DB: join(dir, "gradebox.db"), GRADEBOX_API_KEY: key },
      timeout: 120_000,
    });
    assert.ok(stdout.length + stderr.length > 0, "the block printed something");
  });
}
