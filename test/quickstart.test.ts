// The front door: the server entry point (as `make run` starts it) and the README quickstart,
// run verbatim as a user would, in separate processes on a real port.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { repoRoot, type SpawnedServer, spawnServer } from "./support/helpers.ts";

const root = repoRoot;
const dir = mkdtempSync(join(tmpdir(), "gradebox-qs-"));
let server: SpawnedServer;
let url = "";

before(async () => {
  // as docs/judges.md starts it for the judges example: judges may call a model on this machine
  server = await spawnServer({ GRADEBOX_DB: join(dir, "g.db"), GRADEBOX_WORKERS: "1", GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32" });
  url = server.url;
});
after(() => {
  server.child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

test("the README quickstart runs verbatim against the server", async () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  assert.match(readme, /npx tsx examples\/quickstart\.ts/, "the README runs this very file");
  const source = readFileSync(join(root, "examples/quickstart.ts"), "utf8");
  assert.ok(readme.includes(`\`\`\`ts\n${source}\`\`\``), "the README shows the quickstart file verbatim");
  const run = () =>
    promisify(execFile)("npx", ["tsx", "examples/quickstart.ts"], {
      cwd: root,
      env: { ...process.env, GRADEBOX_URL: url, GRADEBOX_API_KEY: readFileSync(join(dir, "default.key"), "utf8").trim() },
    });
  const { stdout } = await run();
  assert.match(stdout, /^created exact-match warnings: \[\]$/m, "the first output is not a warning");
  assert.match(stdout, /^score 1$/m);
  assert.match(stdout, /^batch \[\{"score":1,"outcome":"scored"\},\{"score":0,"outcome":"scored"\}\]$/m);
  assert.match(stdout, /^delete while locked: 409 GRADER_LOCKED/m);
  assert.match(stdout, /^deleted$/m);
  const second = await run();
  assert.match(second.stdout, /^deleted$/m, "it can be run again");
});

// The other examples (versions, judges, endpoint) are run by test/docs.test.ts, which checks that
// their pages show them verbatim and show what they print; here, that one can be run twice.
test("the judges example can be run again (it starts clean)", async () => {
  const judges = readFileSync(join(root, "docs/judges.md"), "utf8");
  assert.match(judges, /GRADEBOX_EGRESS_ALLOW=127\.0\.0\.1\/32 make run/, "the judges page says how to let judges reach this machine");
  const run = () =>
    promisify(execFile)("npx", ["tsx", "examples/judges.ts"], {
      cwd: root,
      env: { ...process.env, GRADEBOX_URL: url, GRADEBOX_API_KEY: readFileSync(join(dir, "default.key"), "utf8").trim() },
    });
  const first = (await run()).stdout;
  assert.match(first, /^combined \[1,0\.25,0\.75\]$/m);
  assert.equal((await run()).stdout, first, "it can be run again");
});

test("the first start created project default with a key, printed once and saved with mode 0600", async () => {
  const key = readFileSync(join(dir, "default.key"), "utf8").trim();
  assert.match(key, /^gbx_[\w-]{32}$/);
  assert.equal(statSync(join(dir, "default.key")).mode & 0o777, 0o600);
  assert.ok(server.logs().includes(key), "the key is printed at first start");
  const unauthorized = await fetch(`${url}/v1/projects/default/graders`);
  assert.equal(unauthorized.status, 401);
  const ok = await fetch(`${url}/v1/projects/default/graders`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(ok.status, 200);
});

test("SIGTERM shuts the server down cleanly (exit code 0)", async () => {
  server.child.kill("SIGTERM");
  assert.equal(await server.exited, 0, server.logs());
  assert.match(server.logs(), /shutting down/);
});
