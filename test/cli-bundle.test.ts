// The standalone client command: cli/client-main.ts bundled with esbuild as its package will be,
// reaches nothing of the server (no server/, sandbox/, native module, tsx) and runs with plain
// node from a directory outside the repository, against a real server.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import * as esbuild from "esbuild";
import { repoRoot, type SpawnedServer, spawnServer } from "./support/helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "gradebox-cli-bundle-"));
const bundle = join(dir, "gradebox.mjs");
let inputs: string[] = [];
let server: SpawnedServer;

before(async () => {
  const built = await esbuild.build({
    entryPoints: [join(repoRoot, "cli/client-main.ts")],
    absWorkingDir: repoRoot,
    bundle: true,
    platform: "node",
    format: "esm",
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  inputs = Object.keys(built.metafile.inputs);
  writeFileSync(bundle, built.outputFiles[0].text);
  server = await spawnServer({ GRADEBOX_DB: join(dir, "g.db"), GRADEBOX_WORKERS: "1", GRADEBOX_LOG_LEVEL: "warn" });
});
after(async () => {
  server.child.kill("SIGTERM");
  await server.exited;
  rmSync(dir, { recursive: true, force: true });
});

/** The bundle under plain node, in the temp dir, with nothing of the repository on its paths. */
async function runBundle(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, GRADEBOX_URL: server.url };
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [bundle, ...args], { cwd: dir, env });
    return { stdout, stderr, code: 0 };
  } catch (error) {
    return error as { stdout: string; stderr: string; code: number };
  }
}

test("the client command's import graph holds only cli/, sdk/, commander and diff", () => {
  assert.ok(inputs.includes("cli/client-main.ts"), inputs.join("\n"));
  const foreign = inputs.filter((p) => !/^(cli|sdk)\/[^/]+\.ts$|^node_modules\/(commander|diff)\//.test(p));
  assert.deepEqual(foreign, [], "nothing of server/, sandbox/, better-sqlite3, tsx or any other package");
  assert.ok(!inputs.some((p) => p.startsWith("server/") || p.startsWith("sandbox/")));
  assert.ok(!inputs.includes("cli/server-commands.ts") && !inputs.includes("cli/main.ts"));
  // no import.meta outside comments: nothing resolves a path into the repository when it runs
  const code = readFileSync(bundle, "utf8")
    .split("\n")
    .filter((l) => !/^\s*(\*|\/\/|\/\*)/.test(l));
  assert.deepEqual(
    code.filter((l) => l.includes("import.meta")),
    [],
  );
});

test("the bundle runs --help with plain node outside the repository; serve points to the server, keys is over HTTP", async () => {
  const help = await runBundle("--help");
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^Usage: gradebox \[options\] \[command\]/);
  assert.match(help.stdout, /^ {2}push \[options\] <file> /m);
  assert.match(help.stdout, /^ {2}grade \[options\] <key> /m);
  assert.doesNotMatch(help.stdout, /^ {2}serve\b/m, "not listed as a command");
  assert.match(help.stdout, /^ {2}keys\b/m, "keys is: over HTTP");
  assert.match(help.stdout, /`serve` \(the server\) comes with the server/);
  assert.match(help.stdout, /\nExit status:\n/);
  const serve = await runBundle("serve", "--port", "1");
  assert.deepEqual([serve.code, serve.stdout], [2, ""]);
  assert.match(serve.stderr, /^error: `serve` comes with the server: run it from a gradebox checkout/);
  const bad = await runBundle("grade", "k", "--bogus");
  assert.deepEqual(
    [bad.code, bad.stderr],
    [2, "error: unknown option '--bogus'\nUsage: gradebox grade [options] <key>\nRun 'gradebox grade --help' for its options.\n"],
  );
});

test("the bundle talks to a real server: push, grade --thread inline, ls, keys", async () => {
  const key = readFileSync(join(dir, "default.key"), "utf8").trim();
  const grader = join(dir, "g.ts");
  writeFileSync(grader, "async function grade(t) {\n  return t.completion() === 'yes' ? 1 : 0;\n}\n");
  const pushed = await runBundle("push", grader, "--key", "yes", "--api-key", key);
  assert.match(pushed.stdout, /✓ created yes \(version 1\)/, pushed.stderr);
  const graded = await runBundle("grade", "yes", "--api-key", key, "--thread", '{"turns":[{"role":"assistant","content":"yes"}]}');
  assert.equal(graded.stdout.trim(), "1", graded.stderr);
  const listed = await runBundle("ls", "--json", "--api-key", key);
  assert.deepEqual(
    JSON.parse(listed.stdout).map((g: { key: string }) => g.key),
    ["yes"],
  );
  // the default project's first key is its admin: it manages the project's keys from here
  const made = await runBundle("keys", "create", "--label", "from the package", "--json", "--api-key", key);
  assert.equal(made.code, 0, made.stderr);
  const { id, role } = JSON.parse(made.stdout);
  assert.equal(role, "grader");
  assert.match((await runBundle("keys", "list", "--api-key", key)).stdout, new RegExp(`^${id} .* from the package$`, "m"));
  assert.equal((await runBundle("keys", "revoke", id, "--api-key", key)).stdout, `revoked ${id}\n`);
});
