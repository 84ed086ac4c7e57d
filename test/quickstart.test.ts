// The front door: the server entry point (as `make run` starts it) and the README quickstart,
// run verbatim as a user would, in separate processes on a real port.

import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

const root = new URL("..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "gradebox-qs-"));
let server: ChildProcess;
let url = "";
let logs = "";

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

before(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  server = spawn(process.execPath, ["--no-node-snapshot", "--import", "tsx", "server/main.ts"], {
    cwd: root,
    env: { ...process.env, GRADEBOX_PORT: String(port), GRADEBOX_DB: join(dir, "g.db"), GRADEBOX_WORKERS: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  server.stdout?.on("data", (d) => (logs += d));
  server.stderr?.on("data", (d) => (logs += d));
  const end = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {}
    if (Date.now() > end) throw new Error(`server did not start:\n${logs}`);
    await new Promise((r) => setTimeout(r, 100));
  }
});
after(() => {
  server.kill("SIGKILL");
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
  assert.match(stdout, /^created exact-match/m);
  assert.match(stdout, /^score 1$/m);
  assert.match(stdout, /^batch \[\{"score":1\},\{"score":0\}\]$/m);
  assert.match(stdout, /^delete while locked: 409 GRADER_LOCKED/m);
  assert.match(stdout, /^deleted$/m);
  const second = await run();
  assert.match(second.stdout, /^deleted$/m, "it can be run again");
});

test("the first start created project default with a key, printed once and saved with mode 0600", async () => {
  const key = readFileSync(join(dir, "default.key"), "utf8").trim();
  assert.match(key, /^gbx_[\w-]{32}$/);
  assert.equal(statSync(join(dir, "default.key")).mode & 0o777, 0o600);
  assert.ok(logs.includes(key), "the key is printed at first start");
  const unauthorized = await fetch(`${url}/v1/projects/default/graders`);
  assert.equal(unauthorized.status, 401);
  const ok = await fetch(`${url}/v1/projects/default/graders`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(ok.status, 200);
});

test("SIGTERM shuts the server down cleanly (exit code 0)", async () => {
  const exited = new Promise<number | null>((resolve) => server.once("exit", (code) => resolve(code)));
  server.kill("SIGTERM");
  assert.equal(await exited, 0, logs);
  assert.match(logs, /shutting down/);
});
