// The packages as a user gets them: `npm pack` of packages/gradebox, installed into a project of
// its own outside the repository, used from plain Node (the machine's Node 20 when it has one), a
// type-checked TypeScript file (moduleResolution bundler and node16), a browser bundle, and the
// `gradebox` command (npx, and a global install run from another directory).

import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import * as esbuild from "esbuild";
import { repoRoot, startServer, type TestServer } from "./support/helpers.ts";

const tsc = join(repoRoot, "node_modules/typescript/bin/tsc");
// plain Node ≥ 20 as a user has it: the machine's own Node when there is one, else this one
const userNode = ["/usr/local/bin/node", "/usr/bin/node"].find((p) => existsSync(p)) ?? process.execPath;
// npm is the machine's (.node/ holds only the node binary)
const npm = "npm";

let s: TestServer;
let dir: string;
let env: NodeJS.ProcessEnv;
let tarball: string;

/** Runs a command without blocking this process, which serves the server the command talks to. */
function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(cmd, args, { cwd: opts.cwd ?? dir, env: opts.env ?? env, encoding: "utf8", timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

before(async () => {
  s = await startServer({ listen: true });
  execFileSync(process.execPath, ["--import", "tsx", join(repoRoot, "scripts/build-package.ts")], { cwd: repoRoot, stdio: "pipe" });
  dir = mkdtempSync(join(tmpdir(), "gradebox-user-"));
  const packed = execFileSync(npm, ["pack", "--pack-destination", dir, "--json"], {
    cwd: join(repoRoot, "packages/gradebox"),
    encoding: "utf8",
  });
  tarball = join(dir, JSON.parse(packed)[0].filename);
  env = {
    PATH: `${join(process.execPath, "..")}:/usr/local/bin:/usr/bin:/bin`,
    HOME: dir,
    npm_config_cache: join(dir, ".npm"),
    GRADEBOX_URL: s.url,
    GRADEBOX_PROJECT: "outside",
    GRADEBOX_API_KEY: await s.keyFor("outside"),
  };
  for (const [cmd, args] of [
    [npm, ["init", "-y"]],
    [npm, ["install", "--no-audit", "--no-fund", "--offline", tarball]],
  ] as const) {
    const r = await run(cmd, [...args]);
    assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
  }
  // the user's project is an ES module project, as `npm init` leaves it, plus "type": "module" for .ts
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ ...pkg, type: "module" }, null, 2));
});
after(() => {
  s?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the gradebox package, installed from its tarball outside the repository", () => {
  test("the tarball holds compiled JS and declarations, and no runtime dependencies", () => {
    const installed = JSON.parse(readFileSync(join(dir, "node_modules/gradebox/package.json"), "utf8"));
    assert.equal(installed.dependencies, undefined);
    for (const f of ["index.js", "index.d.ts", "graders.js", "graders.d.ts", "cli.js"]) {
      assert.ok(existsSync(join(dir, "node_modules/gradebox/dist", f)), f);
    }
    assert.ok(!existsSync(join(dir, "node_modules/gradebox/dist/client.ts")), "no TypeScript sources");
    assert.deepEqual(
      readFileSync(join(dir, "package-lock.json"), "utf8").match(/"node_modules\/[^"]+"/g),
      ['"node_modules/gradebox"'],
      "installing it brings nothing else",
    );
  });

  test("plain Node (.mjs) registers a grader and grades with it", async () => {
    writeFileSync(
      join(dir, "app.mjs"),
      `import { Gradebox, StringThread } from "gradebox";
import { exactMatch } from "gradebox/graders";
const client = new Gradebox();
await client.graders.create.function({ key: "mjs-exact", source: "async (t) => t.completion() === String(t.metadata.expected ?? '') ? 1 : 0" });
const thread = new StringThread([["user", "2+2?"], ["assistant", "4"]], { expected: "4" });
const one = await client.graders.grade({ graderKey: "mjs-exact", thread });
const batch = await client.graders.gradeBatch({ graderKey: "mjs-exact", threads: [thread, { turns: [{ role: "assistant", content: "5" }], metadata: { expected: "4" } }] });
console.log(JSON.stringify({ node: process.version, score: one.score, batch: batch.results, local: exactMatch("a", "a") }));
`,
    );
    const r = await run(userNode, ["app.mjs"]);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.ok(Number(out.node.slice(1).split(".")[0]) >= 20);
    assert.deepEqual(out, {
      node: out.node,
      score: 1,
      batch: [
        { outcome: "scored", score: 1 },
        { outcome: "scored", score: 0 },
      ],
      local: 1,
    });
  });

  const typed = `import { APIError, Gradebox, StringThread, type GradeResponse } from "gradebox";
import { combine } from "gradebox/graders";
const client = new Gradebox();
async function grade(thread: StringThread): Promise<number> {
  return (thread.completion() ?? "").includes("4") ? 1 : 0;
}
await client.graders.create.function({ key: "ts-has-four", fn: grade });
const res: GradeResponse = await client.graders.grade({ graderKey: "ts-has-four", thread: new StringThread([["assistant", "it is 4"]]) }, { timeout: 10_000 });
const keys: string[] = [];
for await (const g of client.graders.list()) keys.push(g.key);
const failed = await client.graders.grade({ graderKey: "missing", thread: { turns: [{ role: "assistant", content: "x" }] } }).catch((e: unknown) => e);
const code = failed instanceof APIError ? failed.code : "not an APIError";
console.log(JSON.stringify({ score: res.score, version: res.version, keys, code, reward: combine([{ name: "a", value: 1 }]).reward }));
`;

  for (const [module, resolution] of [
    ["esnext", "bundler"],
    ["node16", "node16"],
  ]) {
    test(`TypeScript resolves the types under moduleResolution ${resolution}, and a type error is caught`, async () => {
      const project = mkdtempSync(join(dir, `ts-${resolution}-`));
      writeFileSync(join(project, "app.ts"), typed);
      writeFileSync(
        join(project, "wrong.ts"),
        `import { Gradebox } from "gradebox";\nawait new Gradebox().graders.grade({ graderKey: 1 });\n`,
      );
      // no @types/node: the package's declarations need only the standard and DOM libraries
      const config = {
        compilerOptions: {
          noEmit: true,
          strict: true,
          target: "es2022",
          module,
          moduleResolution: resolution,
          lib: ["es2022", "dom"],
          types: [],
        },
      };
      writeFileSync(join(project, "tsconfig.json"), JSON.stringify({ ...config, files: ["app.ts"] }));
      writeFileSync(join(project, "tsconfig.wrong.json"), JSON.stringify({ ...config, files: ["wrong.ts"] }));
      const ok = await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: project });
      assert.equal(ok.code, 0, ok.stdout + ok.stderr);
      const bad = await run(process.execPath, [tsc, "-p", "tsconfig.wrong.json"], { cwd: project });
      assert.notEqual(bad.code, 0);
      assert.match(bad.stdout, /wrong\.ts\(2,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/);
    });
  }

  test("the type-checked .ts runs (Node's type stripping) against the server", async () => {
    writeFileSync(join(dir, "app.ts"), typed);
    const r = await run(process.execPath, ["app.ts"]);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.score, 1);
    assert.equal(out.version, 1);
    assert.ok(out.keys.includes("ts-has-four") && out.keys.includes("mjs-exact"), out.keys.join());
    assert.equal(out.code, "GRADER_NOT_FOUND");
    assert.equal(out.reward, 1);
  });

  test("esbuild bundles it for a browser: no Node module in the bundle", async () => {
    writeFileSync(
      join(dir, "browser.mjs"),
      `import { Gradebox } from "gradebox";\nexport const client = new Gradebox({ baseURL: location.origin });\n`,
    );
    const result = await esbuild.build({
      entryPoints: [join(dir, "browser.mjs")],
      absWorkingDir: dir,
      bundle: true,
      platform: "browser",
      format: "esm",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const text = result.outputFiles[0]?.text ?? "";
    assert.doesNotMatch(text, /node:(http|https|fs)/);
    const inputs = Object.keys(result.metafile.inputs);
    assert.ok(
      inputs.some((i) => i.endsWith("gradebox/dist/node-browser.js")),
      inputs.join(),
    );
    assert.ok(!inputs.some((i) => i.endsWith("gradebox/dist/node.js")), inputs.join());
  });

  test("npx gradebox ls in the user's project, and a global install run from another directory", async () => {
    const r = await run("npx", ["gradebox", "ls"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /mjs-exact/);

    const prefix = join(dir, "global");
    const installed = await run(npm, ["install", "-g", "--offline", "--no-audit", "--no-fund", "--prefix", prefix, tarball]);
    assert.equal(installed.code, 0, installed.stderr);
    const elsewhere = await run(join(prefix, "bin/gradebox"), ["ls"], { cwd: "/", env: { ...env, PATH: `/usr/local/bin:/usr/bin:/bin` } });
    assert.equal(elsewhere.code, 0, elsewhere.stderr);
    assert.match(elsewhere.stdout, /ts-has-four/);
    const help = await run(join(prefix, "bin/gradebox"), ["--help"], { cwd: "/" });
    assert.doesNotMatch(help.stdout, /^\s+serve\b/m, "serve comes with the server, not the package");
  });
});
