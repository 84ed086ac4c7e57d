// The gradebox command against the real server: push (with a caret under a syntax error),
// test, ls, get, lock/unlock, rm, and grade streaming a JSONL file with bad lines in it; models
// and judge graders against the scripted OpenAI-compatible server of test/support/fake-openai.ts; an
// endpoint grader against the example reward server (examples/reward-server/server.ts); secrets
// set from a pipe, a file and a terminal, and used by a model and an endpoint.

import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { FakeOpenAI } from "./support/fake-openai.ts";
import { freePort, repoRoot, type SpawnedServer, spawnServer } from "./support/helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "gradebox-cli-"));
let server: SpawnedServer;
let env: NodeJS.ProcessEnv;
let fake: FakeOpenAI;
let reward: { child: ChildProcess; url: string };
before(async () => {
  fake = await new FakeOpenAI().start();
  reward = await startRewardServer();
  fake.fallback = { json: { reasoning: "ok", verdict: "PASS" } };
  server = await spawnServer({
    GRADEBOX_DB: join(dir, "g.db"),
    GRADEBOX_WORKERS: "2",
    GRADEBOX_LOG_LEVEL: "warn",
    // the fake model listens on loopback, which the egress policy refuses by default
    GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32",
  });
  env = { ...process.env, GRADEBOX_URL: server.url, GRADEBOX_API_KEY: readFileSync(join(dir, "default.key"), "utf8").trim() };
});
after(async () => {
  server.child.kill("SIGTERM");
  await server.exited;
  await fake.close();
  reward.child.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
});

/** The example reward server in its own process, on a free port it prints. */
async function startRewardServer(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "examples/reward-server/server.ts"], {
    cwd: repoRoot,
    env: { ...process.env, PORT: "0" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on("data", (d) => {
      out += d;
      const m = /reward server on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once("exit", (code) => reject(new Error(`the reward server exited (${code}): ${out}`)));
  });
  return { child, url };
}

const run = (...args: string[]) => runIn({}, ...args);
/** gradebox in another directory, or with other environment variables (undefined removes one). */
const runIn = (where: { cwd?: string; env?: Record<string, string | undefined> }, ...args: string[]) =>
  promisify(execFile)(process.execPath, [join(repoRoot, "bin/gradebox.js"), ...args], {
    cwd: where.cwd ?? repoRoot,
    env: { ...env, ...where.env },
  });
async function runFail(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return runFailIn({}, ...args);
}
async function runFailIn(
  where: { cwd?: string; env?: Record<string, string | undefined> },
  ...args: string[]
): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    await runIn(where, ...args);
  } catch (error) {
    const e = error as { stdout: string; stderr: string; code: number };
    return e;
  }
  throw new Error(`expected gradebox ${args.join(" ")} to fail`);
}

test("push creates a grader and prints its warnings; a bad file shows the check, the line and a caret", async () => {
  const { stdout } = await run("push", "examples/keywords.ts", "--key", "kw", "--description", "keyword credit");
  assert.match(stdout, /✓ created kw/);
  const bad = join(dir, "bad.ts");
  writeFileSync(bad, "async function grade(t) {\n  const x = t.completion(;\n  return 1\n}\n");
  const failed = await runFail("push", bad, "--key", "bad");
  assert.equal(failed.code, 1);
  assert.match(failed.stderr, /syntax check failed: Unexpected ";" \(line 2, column 26\)/);
  assert.match(failed.stderr, / {2}2 \| {3}const x = t\.completion\(;\n {4}\| {26}\^/);
  const json = JSON.parse((await runFail("push", bad, "--key", "bad", "--json")).stdout);
  assert.deepEqual([json.error.code, json.error.check, json.error.line], ["VALIDATION_FAILED", "syntax", 2]);
});

test("ls, get, lock, rm refused while locked, unlock, rm", async () => {
  const listed = JSON.parse((await run("ls", "--json")).stdout);
  assert.deepEqual(
    listed.map((g: { key: string }) => g.key),
    ["kw"],
  );
  assert.match((await run("get", "kw")).stdout, /keyword credit[\s\S]*async function grade/);
  await run("lock", "kw");
  const refused = await runFail("rm", "kw");
  assert.match(refused.stderr, /GRADER_LOCKED/);
  await run("unlock", "kw");
  await run("push", "examples/json-shape.ts", "--key", "gone");
  assert.match((await run("rm", "gone")).stdout, /deleted gone/);
  assert.match((await runFail("get", "gone")).stderr, /404 GRADER_NOT_FOUND/);
});

test("grade --threads streams a JSONL file: results per line, bad lines reported, a summary", async () => {
  const lines: string[] = [];
  for (let i = 0; i < 1500; i++) {
    const completion = i % 2 ? "Paris and JSON" : "nothing here";
    lines.push(JSON.stringify({ turns: [{ role: "assistant", content: completion }], metadata: { keywords: ["paris", "json"] } }));
  }
  lines.splice(100, 0, "{broken");
  lines.splice(200, 0, JSON.stringify({ turns: [{ role: "", content: "x" }] }));
  const input = join(dir, "in.jsonl");
  const output = join(dir, "out.jsonl");
  writeFileSync(input, `${lines.join("\n")}\n`);
  // the bad lines fail the run: exit 1, after every other line was graded
  const { stdout, stderr, code } = await runFail("grade", "kw", "--threads", input, "--out", output, "--batch", "100");
  assert.equal(code, 1);
  // the summary: counts by outcome, mean ± sem (√(0.25·1500/1499)/√1500), min, max, median, and a histogram
  assert.match(
    stdout,
    /graded 1502: 1500 scored, 2 errors, 0 abstained\n {2}mean 0\.5000 ± 0\.0129 \(sem\), min 0, max 1, p50 0\.5\n {2}errors: BAD_LINE 2\n/,
  );
  assert.match(stdout, /scores:\n {2}\[0, 0\.1\) +█{40} 750\n {2}\[0\.1, 0\.2\) +0\n[\s\S]*\n {2}\[0\.9, 1\] +█{40} 750$/m);
  assert.match(stderr, /line 101: not JSON/);
  assert.match(stderr, /line 201: turns\[0\]\.role is "": a role is 1 to 64 characters/);
  assert.match(stderr, /1502\/1502 100%/, "progress reaches the end (plain lines when stderr is not a terminal)");
  const results = readFileSync(output, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  assert.equal(results.length, 1502);
  assert.deepEqual(
    results.find((r) => r.line === 1),
    { line: 1, outcome: "scored", score: 0 },
  );
  assert.deepEqual(
    results.find((r) => r.line === 2),
    { line: 2, outcome: "scored", score: 1 },
  );
  assert.equal(results.find((r) => r.line === 101).error.code, "BAD_LINE");
  assert.deepEqual(
    results.map((r) => r.line),
    [...Array(1502).keys()].map((i) => i + 1),
    "one result per line, in the input's order",
  );
  // --json: stdout has the results only (here none: they went to --out); the summary is on stderr
  const json = await runFail("grade", "kw", "--threads", input, "--out", output, "--json");
  assert.equal(json.code, 1);
  assert.equal(json.stdout, "");
  const { sem, ...summary } = JSON.parse(json.stderr).summary;
  assert.ok(Math.abs(sem - Math.sqrt((0.25 * 1500) / 1499 / 1500)) < 1e-12);
  assert.deepEqual(summary, {
    count: 1502,
    outcomes: { scored: 1500, error: 2, abstained: 0 },
    mean: 0.5,
    std: 0.5,
    min: 0,
    max: 1,
    quantiles: { p5: 0, p25: 0, p50: 0.5, p75: 1, p95: 1 },
    histogram: { edges: [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1], counts: [750, 0, 0, 0, 0, 0, 0, 0, 0, 750] },
    errors: { BAD_LINE: 2 },
    abstentions: {},
  });
});

test("grade --threads: exit 1 when a line fails (a bad line or a grade error), 0 when all scored; results in the input's order; --json keeps stdout JSONL", async () => {
  const file = join(dir, "boom.ts");
  writeFileSync(file, 'async function grade(t) {\n  if (t.metadata.boom) throw new Error("boom");\n  return 1;\n}\n');
  await run("push", file, "--key", "boom");
  const line = (metadata: Record<string, unknown> = {}) => JSON.stringify({ turns: [{ role: "assistant", content: "x" }], metadata });
  const input = join(dir, "boom.jsonl");

  writeFileSync(input, `${line()}\n${line()}\n`);
  const ok = await run("grade", "boom", "--threads", input);
  assert.deepEqual(
    ok.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l)),
    [
      { line: 1, outcome: "scored", score: 1 },
      { line: 2, outcome: "scored", score: 1 },
    ],
  );
  assert.match(ok.stderr, /graded 2: 2 scored/);

  // a grade error fails the run, though every line was graded
  writeFileSync(input, `${line()}\n${line({ boom: true })}\n${line()}\n`);
  const thrown = await runFail("grade", "boom", "--threads", input);
  assert.equal(thrown.code, 1);
  assert.deepEqual(
    thrown.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l).error?.code ?? "scored"),
    ["scored", "GRADER_ERROR", "scored"],
  );
  assert.match(thrown.stderr, /graded 3: 2 scored, 1 error, 0 abstained\n[\s\S]*errors: GRADER_ERROR 1/);

  // a bad line waits for the lines before it: results come out in the input's order
  writeFileSync(input, `${line()}\n{broken\n${line()}\n\n${line()}\n`);
  const json = await runFail("grade", "boom", "--threads", input, "--json", "--batch", "2");
  assert.equal(json.code, 1);
  const results = json.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    results.map((r) => [r.line, r.score ?? r.error.code]),
    [
      [1, 1],
      [2, "BAD_LINE"],
      [3, 1],
      [5, 1],
    ],
    "stdout holds the results only, one JSON per line, in order",
  );
  assert.deepEqual(JSON.parse(json.stderr), {
    summary: {
      count: 4,
      outcomes: { scored: 3, error: 1, abstained: 0 },
      mean: 1,
      std: 0,
      sem: 0,
      min: 1,
      max: 1,
      quantiles: { p5: 1, p25: 1, p50: 1, p75: 1, p95: 1 },
      histogram: { edges: [1, 1], counts: [3] },
      errors: { BAD_LINE: 1 },
      abstentions: {},
    },
  });
  await run("rm", "boom");
});

test("grade --thread takes inline JSON (starting with {) or a file", async () => {
  const inline = JSON.stringify({ turns: [{ role: "assistant", content: "paris" }], metadata: { keywords: ["paris", "rome"] } });
  assert.equal((await run("grade", "kw", "--thread", inline)).stdout.trim(), "0.5");
  assert.equal((await run("grade", "kw", "--thread", ` ${inline}`)).stdout.trim(), "0.5", "leading spaces");
  const broken = await runFail("grade", "kw", "--thread", '{"turns": [');
  assert.equal(broken.code, 2);
  assert.match(broken.stderr, /^error: --thread is not JSON: /);
  const missing = await runFail("grade", "kw", "--thread", "no-such-thread.json");
  assert.deepEqual([missing.code, missing.stderr], [2, "error: cannot read no-such-thread.json: no such file\n"]);
});

test("an input file that cannot be read, or a bad number: one error line, exit 2", async () => {
  const [tested, graded, pushed, samples, batch, version, out] = await Promise.all([
    runFail("test", "examples/json-shape.ts", "--threads", "missing.jsonl"),
    runFail("grade", "kw", "--threads", "missing.jsonl"),
    runFail("push", "missing.ts", "--key", "x"),
    runFail("push", "examples/keywords.ts", "--key", "x", "--samples", "examples"),
    runFail("grade", "kw", "--threads", "examples/threads.jsonl", "--batch", "abc"),
    runFail("grade", "kw@0", "--threads", "examples/threads.jsonl"),
    runFail("grade", "kw", "--threads", "examples/threads.jsonl", "--out", join(dir, "no-dir", "out.jsonl")),
  ]);
  assert.deepEqual([tested.code, tested.stdout, tested.stderr], [2, "", "error: cannot read missing.jsonl: no such file\n"]);
  assert.deepEqual([graded.code, graded.stderr], [2, "error: cannot read missing.jsonl: no such file\n"]);
  assert.deepEqual([pushed.code, pushed.stderr], [2, "error: cannot read missing.ts: no such file\n"]);
  assert.deepEqual([samples.code, samples.stderr], [2, "error: cannot read examples: it is a directory\n"]);
  assert.equal(out.code, 2);
  assert.match(out.stderr, /^error: cannot write \S+out\.jsonl: no such directory\n$/);
  // a bad value is an argument error: the option (or argument) named on one line, then the usage
  assert.equal(batch.code, 2);
  assert.equal(batch.stderr.split("\n")[0], "error: option '--batch <n>' argument 'abc' is invalid. it must be a whole number from 1");
  assert.equal(version.code, 2);
  assert.match(
    version.stderr.split("\n")[0],
    /^error: .*'kw@0' is invalid for argument 'key'\. the version after @ must be a whole number from 1$/,
  );
});

test("argument errors, on any subcommand however deep: one error line and that subcommand's usage, exit 2", async () => {
  const cases: Array<[string[], string, string]> = [
    [["grade", "kw", "--bogus"], "error: unknown option '--bogus'", "gradebox grade [options] <key>"],
    [["grade"], "error: missing required argument 'key'", "gradebox grade [options] <key>"],
    [["grade", "kw"], "error: pass exactly one of --thread <json> or --threads <jsonl>", "gradebox grade [options] <key>"],
    [
      ["judge", "create", "binary", "j", "-m", "m", "-c", "c", "--bogus"],
      "error: unknown option '--bogus'",
      "gradebox judge create binary [options] <key>",
    ],
    [
      ["judge", "create", "binary", "-m", "m", "-c", "c"],
      "error: missing required argument 'key'",
      "gradebox judge create binary [options] <key>",
    ],
    [
      ["judge", "create", "binary", "j", "-m", "m", "-c", "c", "--var", "x"],
      "error: option '--var <name=value>' argument 'x' is invalid. it must be name=value",
      "gradebox judge create binary [options] <key>",
    ],
    [["models", "get"], "error: missing required argument 'key'", "gradebox models get [options] <key>"],
    // the server's commands, added after the client's, behave alike
    [["keys", "revoke"], "error: missing required argument 'id'", "gradebox keys revoke [options] <id>"],
    [["keys", "create", "-p", "p", "--bogus"], "error: unknown option '--bogus'", "gradebox keys create [options]"],
  ];
  const results = await Promise.all(cases.map(([args]) => runFail(...args)));
  for (const [i, [args, error, usage]] of cases.entries()) {
    const { code, stdout, stderr } = results[i];
    const name = usage.replace(/ \[options\].*/, "");
    assert.deepEqual(
      { code, stdout, stderr },
      { code: 2, stdout: "", stderr: `${error}\nUsage: ${usage}\nRun '${name} --help' for its options.\n` },
      `gradebox ${args.join(" ")}`,
    );
  }
  const help = await run("--help");
  assert.match(help.stdout, /\nExit status:\n {2}0 {2}done\n {2}1 {2}the command failed[\s\S]*\n {2}2 {2}a usage error/);
});

test("keys: refuses a database that does not exist unless --init; every keys command names the database it opened", async () => {
  const elsewhere = mkdtempSync(join(tmpdir(), "gradebox-cli-keys-"));
  try {
    const where = { cwd: elsewhere, env: { GRADEBOX_DB: undefined } };
    const looked = join(elsewhere, "data", "gradebox.db");
    const commands = [
      ["keys", "list"],
      ["keys", "create", "--project", "p"],
      ["keys", "revoke", "key_x"],
    ];
    const refused = await Promise.all(commands.map((args) => runFailIn(where, ...args)));
    for (const [i, { code, stdout, stderr }] of refused.entries()) {
      assert.deepEqual([code, stdout], [2, ""], commands[i].join(" "));
      assert.match(
        stderr,
        new RegExp(`^error: no database at ${looked.replaceAll(".", "\\.")}: .*server's directory.*GRADEBOX_DB.*--init`),
      );
    }
    assert.ok(!existsSync(join(elsewhere, "data")), "nothing created");
    const init = await runIn(where, "keys", "create", "--project", "p", "--init", "--json");
    assert.equal(init.stderr, `database ${looked} (created)\n`);
    assert.equal(JSON.parse(init.stdout).project, "p");
    assert.ok(existsSync(looked));

    // the server's database, by GRADEBOX_DB (relative to the directory it is run in): its keys work against the server
    const atServer = { cwd: elsewhere, env: { GRADEBOX_DB: relative(elsewhere, join(dir, "g.db")) } };
    const created = await runIn(atServer, "keys", "create", "--project", "cli-keys", "--json");
    assert.equal(created.stderr, `database ${join(dir, "g.db")}\n`);
    const { key, id } = JSON.parse(created.stdout);
    assert.equal((await run("ls", "--api-key", key, "--project", "cli-keys")).stdout.trim(), "no graders");
    const listed = await runIn(atServer, "keys", "list", "--project", "cli-keys");
    assert.equal(listed.stderr, `database ${join(dir, "g.db")}\n`);
    assert.match(listed.stdout, new RegExp(`^${id} +cli-keys +gbx_\\S*… {2}active`));
    const revoked = await runIn(atServer, "keys", "revoke", id);
    assert.deepEqual([revoked.stdout, revoked.stderr], [`revoked ${id}\n`, `database ${join(dir, "g.db")}\n`]);
    assert.match((await runFail("ls", "--api-key", key, "--project", "cli-keys")).stderr, /401 UNAUTHORIZED/);
  } finally {
    rmSync(elsewhere, { recursive: true, force: true });
  }
});

test("grade --thread and test (the five checks plus sample threads, nothing saved)", async () => {
  const one = join(dir, "one.json");
  writeFileSync(one, JSON.stringify({ turns: [{ role: "assistant", content: "paris" }], metadata: { keywords: ["paris", "rome"] } }));
  assert.equal((await run("grade", "kw", "--thread", one)).stdout.trim(), "0.5");
  const sample = join(dir, "sample.jsonl");
  writeFileSync(sample, `${JSON.stringify({ turns: [{ role: "assistant", content: '{"name":"a","email":"b","age":1}' }] })}\n`);
  const tested = await run("test", "examples/json-shape.ts", "--threads", sample);
  assert.match(tested.stdout, /all five checks passed[\s\S]*line 1: 1/);
  assert.deepEqual(
    JSON.parse((await run("ls", "--json")).stdout).map((g: { key: string }) => g.key),
    ["kw"],
    "test saved nothing",
  );
});

test("flags override the environment, and a wrong key is a clear error", async () => {
  const failed = await runFail("ls", "--api-key", "gbx_wrong");
  assert.match(failed.stderr, /401 UNAUTHORIZED/);
});

test("push on an existing key stores a new version and says so; versions, diff and grade key@n", async () => {
  const file = join(dir, "ver.ts");
  writeFileSync(file, "async function grade(t) {\n  return 0.25;\n}\n");
  assert.match((await run("push", file, "--key", "ver", "--description", "v1")).stdout, /✓ created ver \(version 1\)/);
  writeFileSync(file, "async function grade(t) {\n  const half = 0.5;\n  return half;\n}\n");
  assert.match((await run("push", file, "--key", "ver")).stdout, /✓ updated ver to version 2/);
  // the same file again (as CI pushes on every run): no version 3
  assert.equal((await run("push", file, "--key", "ver")).stdout, "✓ ver unchanged, still version 2\n");
  assert.equal(JSON.parse((await run("push", file, "--key", "ver", "--json")).stdout).unchanged, true);

  const listed = (await run("versions", "ver")).stdout.trimEnd().split("\n");
  assert.equal(listed.length, 2);
  assert.match(listed[0], /^ {2} {3}1 .* v1$/);
  assert.match(listed[1], /^\* {4}2 .* v1$/, "the current version is starred; the description was kept");

  const { stdout: patch } = await run("diff", "ver@1", "ver@2");
  assert.match(patch, /^--- ver@1\n\+\+\+ ver@2\n/m);
  assert.match(patch, /^- {2}return 0\.25;$/m);
  assert.match(patch, /^\+ {2}const half = 0\.5;$/m);
  assert.match((await run("diff", "ver@1", "ver")).stdout, /\+\+\+ ver@2/, "a bare key is the current version");
  assert.equal((await run("diff", "ver@2", "ver")).stdout, "ver@2 and ver@2 have the same source\n");

  const thread = join(dir, "one.json");
  writeFileSync(thread, JSON.stringify({ turns: [{ role: "assistant", content: "x" }] }));
  assert.equal((await run("grade", "ver@1", "--thread", thread)).stdout.trim(), "0.25");
  assert.equal((await run("grade", "ver", "--thread", thread)).stdout.trim(), "0.5");
  assert.match((await runFail("grade", "ver@x", "--thread", thread)).stderr, /whole number/);

  // rm key@version deletes one old version (to free quota); the current one is refused, the grader stays
  assert.match((await runFail("rm", "ver@2")).stderr, /current/);
  assert.equal((await run("rm", "ver@1")).stdout, "✓ deleted ver@1\n");
  const left = (await run("versions", "ver")).stdout.trimEnd().split("\n");
  assert.equal(left.length, 1);
  assert.match(left[0], /^\* {4}2 /);
  assert.equal((await run("grade", "ver", "--thread", thread)).stdout.trim(), "0.5");
});

test("push --samples: test_run grades the samples; --dry-run reports how their scores change and stores nothing", async () => {
  const file = join(dir, "expects.ts");
  writeFileSync(file, "async function grade(t) {\n  return t.completion() === t.metadata.expected ? 1 : 0;\n}\n");
  const samples = join(dir, "samples.jsonl");
  const line = (content: string, expected?: number) =>
    JSON.stringify({
      thread: { turns: [{ role: "assistant", content }], metadata: { expected: "4" } },
      ...(expected === undefined ? {} : { expected }),
    });
  writeFileSync(samples, `${line("4", 1)}\n${line(" 4")}\n`);
  assert.match((await run("push", file, "--key", "expects", "--samples", samples)).stdout, /✓ created expects \(version 1\)/);
  writeFileSync(file, "async function grade(t) {\n  return (t.completion() ?? '').trim() === t.metadata.expected ? 1 : 0;\n}\n");
  const dry = (await run("push", file, "--key", "expects", "--dry-run")).stdout;
  assert.match(dry, /dry run: nothing stored/);
  assert.match(dry, /samples: 2, 1 changed\n {4}sample 2: 0 → 1/);
  assert.match((await run("versions", "expects")).stdout, /^\* {4}1 /m, "still at version 1");
  writeFileSync(samples, `${line("4", 0)}\n`);
  const failed = await runFail("push", file, "--key", "expects", "--samples", samples);
  assert.match(failed.stderr, /test_run check failed: sample 1 should score 0 but scored 1/);
});

test("a grader error: grade --thread prints the line with a caret under the column; test --threads gives each error's line and column", async () => {
  const file = join(dir, "throws.ts");
  const source = "async function grade(t) {\n  if (!t.metadata.k) return 0;\n  return t.metadata.k.filter((x) => x).length;\n}\n";
  writeFileSync(file, source);
  await run("push", file, "--key", "throws");
  const bad = JSON.stringify({ turns: [{ role: "assistant", content: "x" }], metadata: { k: 3 } });
  const good = JSON.stringify({ turns: [{ role: "assistant", content: "x" }] });
  const thread = join(dir, "k.json");
  writeFileSync(thread, bad);
  // column 23: `filter`, where V8 says the TypeError was thrown
  const caret = / {2}3 \| {3}return t\.metadata\.k\.filter\(\(x\) => x\)\.length;\n {4}\| {23}\^/;
  for (const ref of ["throws", "throws@1"]) {
    const failed = await runFail("grade", ref, "--thread", thread);
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /GRADER_ERROR: TypeError: t\.metadata\.k\.filter is not a function \(line 3, column 23\)/);
    assert.match(failed.stderr, caret);
  }
  const json = JSON.parse((await runFail("grade", "throws", "--thread", thread, "--json")).stdout);
  assert.deepEqual([json.error.code, json.error.line, json.error.column], ["GRADER_ERROR", 3, 23]);

  const threads = join(dir, "k.jsonl");
  writeFileSync(threads, `${good}\n${bad}\n`);
  // a thread that errors fails the run (exit 1), as it does for grade --threads
  const { stdout, code } = await runFail("test", file, "--threads", threads);
  assert.equal(code, 1);
  assert.match(stdout, /line 1: 0\n/);
  assert.match(stdout, /line 2: GRADER_ERROR: TypeError: t\.metadata\.k\.filter is not a function \(line 3, column 23\)\n/);
  assert.match(stdout, / {6}3 \| {3}return t\.metadata\.k\.filter\(\(x\) => x\)\.length;\n {8}\| {23}\^/);
});

test("models create, list; judge create binary, shown as a judge by ls, graded by grade; judge prompt shows the criteria", async () => {
  assert.match(
    (await run("models", "create", "jm", "--base-url", fake.url, "--model", "judge-1", "--max-concurrency", "2")).stdout,
    /✓ created model jm: judge-1 at http:\/\/127\.0\.0\.1:\d+\/v1/,
  );
  assert.match((await run("models", "list")).stdout, /^jm +judge-1 +http:\S+\/v1 {2}\(concurrency 2, timeout 60000ms, no key\)$/m);
  assert.deepEqual(
    JSON.parse((await run("models", "list", "--json")).stdout).map((m: { key: string; model: string }) => [m.key, m.model]),
    [["jm", "judge-1"]],
  );

  const created = await run("judge", "create", "binary", "polite", "--model", "jm", "--criteria", "answers the question politely");
  assert.match(created.stdout, /✓ created polite \(binary judge, model jm\)/);
  assert.match((await run("ls")).stdout, /^polite +judge /m);
  // --var, repeated: each name=value in order, a value may hold "="
  await run("judge", "create", "binary", "styled", "--model", "jm", "--criteria", "c", "--var", "tone=warm", "--var", "rule=a=b");
  assert.deepEqual(JSON.parse((await run("get", "styled", "--json")).stdout).judge.templateVariables, { tone: "warm", rule: "a=b" });
  await run("rm", "styled");

  const thread = join(dir, "qa.json");
  const qa = (answer: string) =>
    JSON.stringify({
      turns: [
        { role: "user", content: "Is the sky blue?" },
        { role: "assistant", content: answer },
      ],
    });
  writeFileSync(thread, qa("Yes, it is."));
  assert.equal((await run("grade", "polite", "--thread", thread)).stdout.trim(), "1  (ok)");
  fake.on(/Whatever/, { json: { reasoning: "rude", verdict: "FAIL" } });
  writeFileSync(thread, qa("Whatever."));
  assert.equal((await run("grade", "polite", "--thread", thread)).stdout.trim(), "0  (rude)");
  assert.equal(fake.requests.at(-1)?.body.model, "judge-1");

  const prompt = (await run("judge", "prompt", "polite", "--thread", thread)).stdout;
  assert.match(prompt, /^── system ──\n/);
  assert.match(prompt, /answers the question politely/);
  assert.match(prompt, /\n── user ──\n[\s\S]*Whatever\./);
  const messages = JSON.parse((await run("judge", "prompt", "polite", "--thread", thread, "--json")).stdout).messages;
  assert.equal(messages.length, prompt.match(/^── \w+ ──$/gm)?.length);
  assert.equal((await run("judge", "prompt", "polite", "--thread", readFileSync(thread, "utf8"))).stdout, prompt, "the thread inline");
});

test("judge create rubric from a criteria file; grade scores it with the --cannot-assess strategy", async () => {
  const criteria = join(dir, "criteria.json");
  writeFileSync(
    criteria,
    JSON.stringify([
      { name: "accurate", requirement: "States facts correctly" },
      { name: "cited", requirement: "Cites a source", weight: 10 },
    ]),
  );
  const created = await run("judge", "create", "rubric", "facts", "--model", "jm", "--criteria-file", criteria, "--cannot-assess", "zero");
  assert.match(created.stdout, /✓ created facts \(rubric judge, model jm\)/);
  assert.match((await run("get", "facts")).stdout, /rubric judge, model jm, cannot assess: zero\n +10 {2}accurate: States facts correctly/);
  fake.on(/Cites a source/, {
    json: {
      criteria: [
        { name: "accurate", reason: "right", verdict: "MET" },
        { name: "cited", reason: "no idea", verdict: "CANNOT_ASSESS" },
      ],
    },
  });
  const thread = join(dir, "fact.json");
  writeFileSync(thread, JSON.stringify({ turns: [{ role: "assistant", content: "The sky is blue." }] }));
  // zero: CANNOT_ASSESS counts as unmet → 10 / 20
  assert.match((await run("grade", "facts", "--thread", thread)).stdout, /^0\.5\b/);
  writeFileSync(criteria, "{}");
  assert.match(
    (await runFail("judge", "create", "rubric", "bad", "--model", "jm", "--criteria-file", criteria)).stderr,
    /must hold a JSON array/,
  );
});

test("a broken template is refused with the template check, its line and a caret; nothing stored", async () => {
  const template = join(dir, "judge.hbs");
  writeFileSync(template, "Judge this:\n  {{#if completion}}x{{/each}}\n");
  const failed = await runFail("judge", "create", "binary", "broken", "--model", "jm", "--criteria", "x", "--template-file", template);
  assert.equal(failed.code, 1);
  assert.match(failed.stderr, /✗ template check failed: .*doesn't match.* \(line 2, column \d+\)/);
  assert.match(failed.stderr, / {2}2 \| {3}\{\{#if completion\}\}x\{\{\/each\}\}\n {4}\| +\^/);
  const json = JSON.parse(
    (await runFail("judge", "create", "binary", "broken", "--model", "jm", "--criteria", "x", "--template-file", template, "--json"))
      .stdout,
  );
  assert.deepEqual([json.error.code, json.error.check, json.error.line], ["VALIDATION_FAILED", "template", 2]);
  assert.match((await runFail("get", "broken")).stderr, /404 GRADER_NOT_FOUND/);
});

test("models delete is refused while a judge uses the model; once the judges are gone it deletes", async () => {
  const refused = await runFail("models", "delete", "jm");
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /409 MODEL_IN_USE: .*grader "polite"/);
  await run("rm", "polite");
  await run("rm", "facts");
  assert.match((await run("models", "delete", "jm")).stdout, /✓ deleted model jm/);
  assert.match((await runFail("models", "get", "jm")).stderr, /404 MODEL_NOT_FOUND/);
  assert.equal((await run("models", "list")).stdout.trim(), "no models");
});

test("endpoint create registers a reward server (its /info shown); get shows it; grade scores through it", async () => {
  const created = await run("endpoint", "create", "exact-ep", "--url", reward.url, "--batch-size", "16", "-d", "exact match");
  assert.equal(created.stdout.trim(), `✓ created exact-ep (endpoint exact-match 1.0.0 at ${reward.url})`);
  const shown = (await run("get", "exact-ep")).stdout;
  assert.match(shown, /^exact-ep \(endpoint, version 1\) {2}exact match$/m);
  assert.match(shown, new RegExp(`endpoint ${reward.url}\n {2}batch 16 per /batch_score call, concurrency 8, timeout 30000ms\n`));
  assert.match(shown, /info: exact-match 1\.0\.0 \(1 when the last turn equals metadata\.expected\)\n {2}metadata schema: yes/);

  const thread = join(dir, "ep.json");
  const write = (content: string, expected: string) =>
    writeFileSync(thread, JSON.stringify({ turns: [{ role: "assistant", content }], metadata: { expected } }));
  write("42", "42");
  assert.equal((await run("grade", "exact-ep", "--thread", thread)).stdout.trim(), "1");
  write("41", "42");
  assert.equal((await run("grade", "exact-ep", "--thread", thread)).stdout.trim(), "0");
});

test("endpoint create against a closed port: the endpoint check fails and nothing is stored", async () => {
  const closed = `http://127.0.0.1:${await freePort()}`;
  const failed = await runFail("endpoint", "create", "gone-ep", "--url", closed, "--no-batch");
  assert.equal(failed.code, 1);
  assert.match(failed.stderr, /^✗ endpoint check failed: /);
  assert.match((await runFail("get", "gone-ep")).stderr, /404 GRADER_NOT_FOUND/);
});

test("code create makes a code grader from its options; get shows its definition; out-of-bounds is refused", async () => {
  const created = await run(
    "code",
    "create",
    "unit-tests",
    "--language",
    "python",
    "javascript",
    "--compare",
    "float",
    "--abs-tol",
    "0.01",
    "--all-or-nothing",
    "--cpu-ms",
    "700",
    "-d",
    "tests in metadata",
  );
  assert.match(
    created.stdout,
    /^✓ created unit-tests \(code grader\)\n {2}code grader: python, javascript; program: fenced_or_whole; tests: auto\n/,
  );
  assert.match(
    created.stdout,
    /stdout compared float \(abs 0\.01, rel 0\.000001\); score: all_or_nothing; at most 32 tests an item\n {2}per test: 700 ms CPU, 256 MB, 65536 bytes of output/,
  );
  const shown = (await run("get", "unit-tests")).stdout;
  assert.match(shown, /^unit-tests \(code, version 1\) {2}tests in metadata$/m);
  assert.match(shown, /per test: 700 ms CPU/);
  const refused = await runFail("code", "create", "too-slow", "--cpu-ms", "60000");
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /cpuMs.*at most 10000/);
  const badMode = await runFail("code", "create", "bad-mode", "--compare", "fuzzy");
  assert.match(badMode.stderr, /it must be one of exact, whitespace, float/);
  await run("rm", "unit-tests");
});

/** gradebox with `input` on its stdin (execFile leaves stdin open: a command reading it would wait forever). */
function runWithStdin(input: string, ...args: string[]): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const child = spawn(process.execPath, [join(repoRoot, "bin/gradebox.js"), ...args], { cwd: repoRoot, env });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  child.stdin.end(input);
  return new Promise((resolve) => child.once("close", (code) => resolve({ stdout, stderr, code })));
}

test("secrets set from stdin or --value-file (never argv), ls, get; a model's --api-key-secret and an endpoint's --header-secret use it; rm refused while in use", async () => {
  const created = await runWithStdin("sk-cli-1\n", "secrets", "set", "cli-key");
  assert.deepEqual([created.code, created.stdout, created.stderr], [0, "✓ created secret cli-key\n", ""]);
  assert.match((await run("secrets", "ls")).stdout, /^cli-key +\(unbound\) +set \d{4}-/m);

  const registered = await run("models", "create", "km", "--base-url", fake.url, "--model", "judge-1", "--api-key-secret", "cli-key");
  assert.match(registered.stdout, /✓ created model km/);
  assert.match((await run("models", "get", "km")).stdout, /\(concurrency 8, timeout 60000ms, key from secret cli-key\)$/m);
  await run("judge", "create", "binary", "keyed", "--model", "km", "--criteria", "answers");
  const thread = JSON.stringify({ turns: [{ role: "assistant", content: "Yes." }] });
  await run("grade", "keyed", "--thread", thread);
  assert.equal(fake.requests.at(-1)?.headers.authorization, "Bearer sk-cli-1", "the value as piped, without its final line break");
  assert.match((await run("secrets", "get", "cli-key")).stdout, /^cli-key +127\.0\.0\.1 +set /);

  // a rotation from a file: the next call sends the new value
  const file = join(dir, "cli-key.txt");
  writeFileSync(file, "sk-cli-2\r\n");
  assert.match(
    (await runWithStdin("", "secrets", "set", "cli-key", "--value-file", file)).stdout,
    /^✓ replaced the value of secret cli-key/,
  );
  await run("grade", "keyed", "--thread", thread);
  assert.equal(fake.requests.at(-1)?.headers.authorization, "Bearer sk-cli-2");

  // an endpoint's header from a secret, shown by get
  await runWithStdin("ep-token", "secrets", "set", "ep-token");
  await run("endpoint", "create", "keyed-ep", "--url", reward.url, "--header-secret", "X-Api-Key=ep-token");
  assert.match((await run("get", "keyed-ep")).stdout, /timeout 30000ms\n {2}header X-Api-Key from secret ep-token\n {2}info: /);

  const inUse = await runFail("secrets", "rm", "cli-key");
  assert.equal(inUse.code, 1);
  assert.match(inUse.stderr, /^✗ 409 SECRET_IN_USE: secret "cli-key" is used by model "km"/);
  const listed = JSON.parse((await run("secrets", "ls", "--json")).stdout) as Array<{ name: string; host: string }>;
  assert.deepEqual(
    listed.map((x) => [x.name, x.host]),
    [
      ["cli-key", "127.0.0.1"],
      ["ep-token", "127.0.0.1"],
    ],
  );
  assert.doesNotMatch(JSON.stringify(listed), /sk-cli|ep-token"?:/);

  await run("rm", "keyed");
  await run("rm", "keyed-ep");
  await run("models", "delete", "km");
  assert.equal((await run("secrets", "rm", "cli-key")).stdout, "✓ deleted secret cli-key\n");
  assert.equal((await run("secrets", "delete", "ep-token")).stdout, "✓ deleted secret ep-token\n");
  assert.match((await runFail("secrets", "get", "cli-key")).stderr, /404 SECRET_NOT_FOUND/);
  assert.equal((await run("secrets", "list")).stdout, "no secrets\n");
});

test("secrets set refuses what cannot be a value: nothing on stdin, an unreadable file (exit 2); a line break inside (the server's 400, exit 1)", async () => {
  const empty = await runWithStdin("", "secrets", "set", "nothing");
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /^error: no value for secret nothing: pipe it on stdin .* or pass --value-file FILE\n$/);
  const missing = await runWithStdin("", "secrets", "set", "nothing", "--value-file", join(dir, "absent.txt"));
  assert.deepEqual([missing.code, missing.stderr], [2, `error: cannot read ${join(dir, "absent.txt")}: no such file\n`]);
  const twoLines = await runWithStdin("line one\nline two\n", "secrets", "set", "nothing");
  assert.equal(twoLines.code, 1);
  assert.match(twoLines.stderr, /400 INVALID_REQUEST: .*no line breaks/);
  assert.match((await runFail("secrets", "get", "nothing")).stderr, /404 SECRET_NOT_FOUND/);
  // a model names its key once
  const both = await runFail(
    "models",
    "create",
    "m",
    "--base-url",
    fake.url,
    "--model",
    "x",
    "--api-key-secret",
    "a",
    "--api-key-env",
    "GRADEBOX_SECRET_A",
  );
  assert.equal(both.code, 2);
  assert.match(both.stderr, /^error: option '--api-key-env <var>' cannot be used with option '--api-key-secret <name>'/);
});

test("secrets set on a terminal prompts for the value without echoing it", {
  skip: existsSync("/usr/bin/script") ? false : "needs util-linux's script for a terminal",
}, async () => {
  // script runs the command on a pseudo-terminal and relays our pipe to it as typed input
  const child = spawn(
    "/usr/bin/script",
    ["-qec", `${process.execPath} ${join(repoRoot, "bin/gradebox.js")} secrets set typed`, "/dev/null"],
    {
      cwd: repoRoot,
      env,
    },
  );
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  const closed = new Promise((resolve) => child.once("close", resolve));
  await new Promise<void>((resolve) => {
    const check = () => (out.includes("(not shown): ") ? resolve() : child.stdout.once("data", check));
    check();
  });
  child.stdin.write("typed-secret-value\r");
  await closed;
  assert.match(out, /value of secret typed \(not shown\): /);
  assert.match(out, /✓ created secret typed/);
  assert.doesNotMatch(out, /typed-secret-value/, "not echoed");
  // the value that arrived is the one typed: a model's calls carry it
  await run("models", "create", "typed-m", "--base-url", fake.url, "--model", "judge-1", "--api-key-secret", "typed");
  await run("judge", "create", "binary", "typed-j", "--model", "typed-m", "--criteria", "answers");
  await run("grade", "typed-j", "--thread", JSON.stringify({ turns: [{ role: "assistant", content: "Yes." }] }));
  assert.equal(fake.requests.at(-1)?.headers.authorization, "Bearer typed-secret-value");
  await run("rm", "typed-j");
  await run("models", "delete", "typed-m");
  await run("secrets", "rm", "typed");
});

test("a grader's language: push and test infer python from a .py name (--language forces one, a bad one exits 2); ls, get and versions show it", async () => {
  // what the command sends, whatever a server makes of it: a stand-in that records each body
  // (the real server checks Python only with its runtime: test/python-graders.test.ts)
  const bodies: Array<{ url: string; body: Record<string, unknown> }> = [];
  const stand = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text || "{}") as Record<string, unknown>;
    bodies.push({ url: req.url ?? "", body });
    res.setHeader("content-type", "application/json");
    if (req.url?.endsWith("/validate")) return void res.end(JSON.stringify({ valid: true, warnings: [] }));
    const at = "2026-01-01T00:00:00.000Z";
    res.writeHead(201).end(
      JSON.stringify({
        project: "default",
        key: body.key,
        kind: "function",
        version: 1,
        language: body.language ?? "typescript",
        description: "",
        locked: false,
        quarantinedAt: null,
        recentFaults: 0,
        warnings: [],
        sourceSha256: "",
        createdAt: at,
        updatedAt: at,
        source: body.source,
      }),
    );
  });
  await new Promise<void>((resolve) => stand.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(stand.address() as AddressInfo).port}`;
  try {
    const py = join(dir, "grade.py");
    writeFileSync(py, "async def grade(thread):\n    return 1.0\n");
    const ts = join(dir, "grade.ts");
    writeFileSync(ts, "async function grade(t) { return 1 }\n");
    const noSuffix = join(dir, "grader");
    writeFileSync(noSuffix, "async def grade(thread):\n    return 1.0\n");
    assert.match((await run("push", py, "--key", "py", "--url", url)).stdout, /✓ created py \(version 1\) in python/);
    await run("push", ts, "--key", "ts", "--url", url);
    await run("push", noSuffix, "--key", "bare", "--url", url);
    await run("push", noSuffix, "--key", "forced", "--language", "python", "--url", url);
    await run("test", py, "--url", url);
    await run("test", py, "--language", "typescript", "--url", url);
    assert.deepEqual(
      bodies.map((b) => [b.url.replace(/^.*\/graders/, ""), b.body.key ?? "", b.body.language ?? "absent"]),
      [
        ["", "py", "python"],
        ["", "ts", "typescript"],
        ["", "bare", "absent"],
        ["", "forced", "python"],
        ["/validate", "", "python"],
        ["/validate", "", "typescript"],
      ],
    );
    assert.equal(bodies[0].body.source, "async def grade(thread):\n    return 1.0\n");
    const bad = await runFail("push", py, "--key", "x", "--language", "ruby", "--url", url);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--language <language>' argument 'ruby' is invalid\. Allowed choices are typescript, python/);
  } finally {
    stand.closeAllConnections();
    await new Promise((resolve) => stand.close(resolve));
  }

  // the real server: a TypeScript grader shows its language everywhere
  const file = join(dir, "lang.ts");
  writeFileSync(file, "async function grade(t) {\n  return 1;\n}\n");
  assert.match((await run("push", file, "--key", "lang")).stdout, /✓ created lang \(version 1\) in typescript/);
  const line = (await run("ls")).stdout.split("\n").find((l) => l.startsWith("lang "));
  assert.match(line ?? "", /^lang\s+function\s+typescript\s/);
  assert.match((await run("get", "lang")).stdout, /^lang \(function, typescript, version 1\)/);
  assert.match((await run("versions", "lang")).stdout, /\* {4}1 {2}\S+ {2}[0-9a-f]{12} {2}typescript/);
  assert.equal(JSON.parse((await run("get", "lang", "--json")).stdout).language, "typescript");
  await run("rm", "lang");
});
