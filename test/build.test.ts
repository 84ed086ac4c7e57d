// The compiled server (`make build`: scripts/build.ts) laid out as the image has it — package.json,
// bin/, dist/app/ and node_modules/ in one directory — and run as the image runs it: package.json's
// start with plain node. Its node_modules lacks tsx, so anything of the server, its sandbox workers
// or the `gradebox` command that still reached for the TypeScript loader would fail to start.

import assert from "node:assert/strict";
import { execFile, execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, globSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { bundlePrelude } from "../sandbox/validate/compile.ts";
import { freePort, repoRoot } from "./support/helpers.ts";

const work = mkdtempSync(join(tmpdir(), "gradebox-build-"));
const app = join(work, "dist/app");
const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, GRADEBOX_LOG_LEVEL: "warn", GRADEBOX_WORKERS: "1" };
let url = "";
let server: ReturnType<typeof spawn>;
let logs = "";
let built = "";

/** The process and every descendant of it, by pid. */
function processTree(pid: number): number[] {
  let children: number[] = [];
  try {
    children = execFileSync("pgrep", ["-P", String(pid)])
      .toString()
      .trim()
      .split("\n")
      .filter(Boolean)
      .map(Number);
  } catch {} // none
  return [pid, ...children.flatMap(processTree)];
}
const procFile = (pid: number, name: string) => readFileSync(`/proc/${pid}/${name}`, "utf8").split("\0").filter(Boolean);

before(async () => {
  built = execFileSync(process.execPath, ["--import", "tsx", "scripts/build.ts", app], { cwd: repoRoot, encoding: "utf8" });
  copyFileSync(join(repoRoot, "package.json"), join(work, "package.json"));
  mkdirSync(join(work, "bin"));
  copyFileSync(join(repoRoot, "bin/gradebox.js"), join(work, "bin/gradebox.js"));
  mkdirSync(join(work, "node_modules"));
  for (const name of readdirSync(join(repoRoot, "node_modules"))) {
    if (name !== "tsx" && name !== ".bin") symlinkSync(join(repoRoot, "node_modules", name), join(work, "node_modules", name));
  }

  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const start = (JSON.parse(readFileSync(join(work, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start.split(" ");
  assert.equal(start[0], "node");
  // a process group of its own, so that after() can end whatever of it a failed start leaves behind
  server = spawn(process.execPath, start.slice(1), {
    cwd: work,
    env: { ...env, GRADEBOX_PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  server.stdout?.on("data", (d) => (logs += d));
  server.stderr?.on("data", (d) => (logs += d));
  const end = Date.now() + 30_000;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`the compiled server exited:\n${logs}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {}
    if (Date.now() > end) throw new Error(`the compiled server did not start:\n${logs}`);
    await new Promise((r) => setTimeout(r, 100));
  }
});
after(async () => {
  if (server && server.exitCode === null) {
    server.kill("SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
  }
  if (server?.pid) {
    try {
      process.kill(-server.pid, "SIGKILL"); // a worker orphaned by a server that died starting
    } catch {} // none left
  }
  server?.stdout?.destroy();
  server?.stderr?.destroy();
  rmSync(work, { recursive: true, force: true });
});

test("the build writes JavaScript for every module, the prelude bundled, the console, the migrations", () => {
  assert.match(built, /^built .+ in \d+ ms: \d+ modules, the prelude, the console \(4 files\), the migrations\n$/);
  for (const file of ["server/main.js", "sandbox/worker/worker.js", "sandbox/worker/watchdog.js", "cli/main.js", "sdk/index.js"]) {
    assert.ok(existsSync(join(app, file)), file);
  }
  // TypeScript only where esbuild reads it at run time: the library graders import
  assert.deepEqual(globSync("**/*.ts", { cwd: app }), ["sdk/graders.ts"]);
  assert.equal(
    readFileSync(join(app, "sandbox/isolate/prelude.js"), "utf8"),
    bundlePrelude(),
    "the prelude a worker from the sources bundles",
  );
  assert.deepEqual(readdirSync(join(app, "console")).sort(), ["app.js", "hljs.css", "index.html", "style.css"]);
  assert.ok(existsSync(join(app, "migrations/0001_init.sql")) && existsSync(join(app, "migrations/postgres/0001_init.sql")));
  assert.equal(JSON.parse(readFileSync(join(app, "package.json"), "utf8")).type, "module");
});

test("the compiled command makes a key; the compiled server registers and grades with it on a compiled worker", async () => {
  // bin/gradebox.js finds no cli/ sources here and runs dist/app/cli/main.js
  const { stdout } = await promisify(execFile)(process.execPath, ["bin/gradebox.js", "keys", "create", "--project", "demo", "--json"], {
    cwd: work,
    env,
  });
  const { key } = JSON.parse(stdout) as { key: string };
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const source = [
    'import { exactMatch } from "gradebox/graders";',
    'import type { StringThread } from "gradebox";',
    "export default async function grade(thread: StringThread): Promise<number> {",
    '  return exactMatch(thread.completion(), "Four");',
    "}",
  ].join("\n");
  const created = await fetch(`${url}/v1/projects/demo/graders`, {
    method: "POST",
    headers,
    body: JSON.stringify({ key: "four", source }),
  });
  assert.equal(created.status, 201, await created.clone().text());
  const graded = await fetch(`${url}/v1/projects/demo/graders/four/grade-batch`, {
    method: "POST",
    headers,
    body: JSON.stringify({
      threads: ["four", "five"].map((answer) => ({
        turns: [
          { role: "user", content: "2 + 2?" },
          { role: "assistant", content: answer },
        ],
      })),
    }),
  });
  assert.equal(graded.status, 200);
  assert.deepEqual(((await graded.json()) as { results: unknown[] }).results, [
    { outcome: "scored", score: 1 },
    { outcome: "scored", score: 0 },
  ]);
});

test("/healthz and the console page answer", async () => {
  const health = await fetch(`${url}/healthz`);
  assert.equal(health.status, 200);
  assert.equal(((await health.json()) as { status: string }).status, "ok");
  const page = await fetch(`${url}/`);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<title>Gradebox<\/title>/);
  const script = await fetch(`${url}/console/app.js`);
  assert.equal(await script.text(), readFileSync(join(app, "console/app.js"), "utf8"));
});

test("no process of the server's tree runs tsx; the workers are the compiled ones and grading ones bundle nothing", () => {
  const tree = processTree(server.pid as number);
  const workers: Array<{ pid: number; role: string }> = [];
  for (const pid of tree) {
    const argv = procFile(pid, "cmdline");
    const environ = procFile(pid, "environ");
    assert.ok(!argv.some((a) => /tsx|--import|--loader/.test(a)), `pid ${pid}: ${argv.join(" ")}`);
    assert.ok(!environ.some((e) => e.startsWith("NODE_OPTIONS=")), `pid ${pid} has NODE_OPTIONS`);
    if (argv.some((a) => a.endsWith("/sandbox/worker/worker.js"))) {
      assert.equal(argv.at(-1), join(app, "sandbox/worker/worker.js"));
      workers.push({ pid, role: environ.find((e) => e.startsWith("GRADEBOX_SANDBOX_ROLE="))?.split("=")[1] ?? "" });
    }
  }
  assert.equal(server.exitCode, null);
  assert.deepEqual(workers.map((w) => w.role).sort(), ["grade", "validate"], "one grading worker and the validation worker");
  // a worker run from the sources bundles the prelude with esbuild, whose service is a child process
  const grading = workers.find((w) => w.role === "grade");
  assert.deepEqual(processTree(grading?.pid as number).slice(1), [], "the grading worker started no esbuild");
});

test("`gradebox serve` starts the compiled server, without tsx", async () => {
  const port = await freePort();
  const serve = spawn(process.execPath, ["bin/gradebox.js", "serve"], {
    cwd: work,
    env: { ...env, GRADEBOX_PORT: String(port), GRADEBOX_DB: join(work, "serve.db") },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  serve.stderr?.on("data", (d) => (stderr += d));
  const exited = new Promise((resolve) => serve.once("exit", resolve));
  try {
    let status = 0;
    for (let i = 0; i < 300 && serve.exitCode === null && status !== 200; i++) {
      status = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.status,
        () => 0,
      );
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(status, 200, stderr);
    const [, child] = processTree(serve.pid as number);
    assert.deepEqual(procFile(child, "cmdline").slice(1), ["--no-node-snapshot", join(app, "server/main.js")]);
  } finally {
    serve.kill("SIGTERM");
    assert.equal(await exited, 0, stderr);
  }
});

test("SIGTERM: the compiled server drains and exits 0", async () => {
  server.kill("SIGTERM");
  const code = await new Promise((resolve) => server.once("exit", resolve));
  assert.equal(code, 0, logs);
});
