// The gradebox command on the files people have, against a real server: grader files that share
// code through local imports (bundled on the client, bounded by the project directory), several
// graders per file with keys derived or declared, the SDK's `file` path doing the same; threads as
// OpenAI chat lines and TRL lines with metadata columns; `test --threads` past the server's batch
// limit; and messages in the command line's words (--version, unlock, samples from 1).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Gradebox, keyFromFile, keyFromName, namedGraders, readThreadLine } from "../sdk/index.ts";
import { repoRoot, startServer, type TestServer } from "./support/helpers.ts";

/** The server's batch limit here: `test --threads` must stream past it. */
const MAX_BATCH = 40;

const root = mkdtempSync(join(tmpdir(), "gradebox-files-"));
/** The user's project: the directory the commands run in. */
const project = join(root, "project");
let s: TestServer;
let env: NodeJS.ProcessEnv;

before(async () => {
  s = await startServer({ listen: true, env: { GRADEBOX_MAX_BATCH: String(MAX_BATCH) } });
  env = { ...process.env, GRADEBOX_URL: s.url, GRADEBOX_API_KEY: await s.keyFor("files"), GRADEBOX_PROJECT: "files" };
  mkdirSync(join(project, "lib"), { recursive: true });
});
after(async () => {
  await s.close();
  rmSync(root, { recursive: true, force: true });
});

/** gradebox in the project directory: its output and exit code (never throws). */
function gradebox(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return gradeboxWithInput(undefined, ...args);
}

/** gradebox with `input` on its stdin (closed at once when undefined). */
function gradeboxWithInput(input: string | undefined, ...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [join(repoRoot, "bin/gradebox.js"), ...args], { cwd: project, env }, (error, stdout, stderr) =>
      resolve({ stdout, stderr, code: error ? (typeof error.code === "number" ? error.code : 1) : 0 }),
    );
    child.stdin?.end(input ?? "");
  });
}

const write = (path: string, text: string) => writeFileSync(join(project, path), text);
const lines = (...values: unknown[]) => `${values.map((v) => JSON.stringify(v)).join("\n")}\n`;
const jsonl = (text: string) =>
  text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));

const UTIL = `import { exactMatch } from "gradebox/graders";

/** Words of a text, as every grader here counts them. */
export function tokens(text: string): string[] {
  return text.split(/\\s+/).filter(Boolean);
}

export const same = (a: string, b: string): boolean => exactMatch(a, b) === 1;
export default 2;
`;

const SHARED = `import type { StringThread } from "gradebox";
import two, { tokens } from "./lib/util";
import { same as equal } from "./lib/util.ts";

export async function tokenCount(thread: StringThread): Promise<number> {
  return tokens(thread.completion() ?? "").length >= two ? 1 : 0;
}

export const exactFour = async (thread: StringThread): Promise<number> => {
  if (thread.metadata.boom) throw new Error("boom on line 10");
  return equal(thread.completion() ?? "", "4") ? 1 : 0;
};
`;

test("a grader file with local imports: bundled into one source the server accepts; get shows the file, its lines where they were", async () => {
  write("lib/util.ts", UTIL);
  write(
    "single.ts",
    'import type { StringThread } from "gradebox";\nimport { tokens } from "./lib/util";\n\nexport default async function (thread: StringThread): Promise<number> {\n  return Math.min(1, tokens(thread.completion() ?? "").length / 4);\n}\n',
  );
  const pushed = await gradebox("push", "single.ts");
  assert.equal(pushed.code, 0, pushed.stderr);
  // no --key: a one-grader file's key is its name; its types were kept, so no "not annotated" warnings
  assert.match(pushed.stdout, /^✓ created single \(version 1\) in typescript\n$/);
  const stored = JSON.parse((await gradebox("get", "single", "--json")).stdout).source as string;
  const storedLines = stored.split("\n");
  assert.match(
    storedLines[1],
    /^import \* as __gradebox_module_graders from "gradebox\/graders";var __gradebox_locals=/,
    "the local modules stand where the import was",
  );
  assert.match(storedLines[1], /const \{ tokens \} = __gradebox_locals\.m0;$/);
  assert.equal(storedLines[3], "export default async function (thread: StringThread): Promise<number> {", "every other line as written");
  assert.equal(storedLines.length, 7);
  const graded = await gradebox("grade", "single", "--thread", JSON.stringify({ turns: [{ role: "assistant", content: "one two" }] }));
  assert.equal(graded.stdout.trim(), "0.5");
});

test("several graders per file through named exports: keys derived from the export names, or declared with EXPORT=KEY", async () => {
  write("lib/util.ts", UTIL);
  write("shared.ts", SHARED);
  const pushed = await gradebox("push", "shared.ts");
  assert.equal(pushed.code, 0, pushed.stderr);
  assert.match(
    pushed.stdout,
    /^✓ created token-count \(version 1\) in typescript from tokenCount\n✓ created exact-four \(version 1\) in typescript from exactFour\n$/,
  );
  const thread = (content: string, metadata = {}) => JSON.stringify({ turns: [{ role: "assistant", content }], metadata });
  assert.equal((await gradebox("grade", "exact-four", "--thread", thread("4"))).stdout.trim(), "1");
  assert.equal((await gradebox("grade", "token-count", "--thread", thread("4"))).stdout.trim(), "0");
  assert.equal((await gradebox("grade", "token-count", "--thread", thread("four words"))).stdout.trim(), "1");
  // a grader error points into the user's file: line 10 is the throw
  const thrown = await gradebox("grade", "exact-four", "--thread", thread("4", { boom: true }));
  assert.equal(thrown.code, 1);
  assert.match(thrown.stderr, /GRADER_ERROR: Error: boom on line 10 \(line 10, column \d+\)/);
  assert.match(thrown.stderr, / 10 \| {3}if \(thread\.metadata\.boom\) throw new Error/);

  const declared = await gradebox("push", "shared.ts", "--key", "exactFour=four", "--key", "tokenCount=tokens");
  assert.equal(declared.code, 0, declared.stderr);
  assert.match(declared.stdout, /✓ created tokens \(version 1\)[^\n]*\n✓ created four \(version 1\)/);
  // pushing the same file again stores nothing: each is unchanged, still at its version
  assert.match(
    (await gradebox("push", "shared.ts")).stdout,
    /✓ token-count unchanged, still version 1 from tokenCount\n✓ exact-four unchanged, still version 1 from exactFour/,
  );

  const plain = await gradebox("push", "shared.ts", "--key", "one");
  assert.equal(plain.code, 2);
  assert.match(plain.stderr, /shared\.ts holds 2 graders \(tokenCount, exactFour\): name each one's key as --key EXPORT=KEY/);
  const unknown = await gradebox("push", "shared.ts", "--key", "nope=x");
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /--key nope=…: shared\.ts has no exported async function nope \(it has tokenCount, exactFour\)/);

  // test runs the checks of each
  const tested = await gradebox("test", "shared.ts");
  assert.equal(tested.code, 0, tested.stderr);
  assert.match(tested.stdout, /✓ token-count \(tokenCount\): all five checks passed\n✓ exact-four \(exactFour\): all five checks passed\n/);
});

test("a file with gradeGroup is one grader: test and push keep gradeGroup the entry point and take the key from the file's name", async () => {
  // docs/graders.md's group grader, verbatim
  write(
    "ranked.ts",
    `import { rankInGroup } from "gradebox/graders";

export async function gradeGroup(threads: StringThread[]) {
  const correct = threads.map((t) => (t.completion()?.trim() === t.metadata.expected ? 1 : 0));
  const short = threads.map((t) => -(t.completion()?.length ?? 0));
  // correct answers first, the shorter the better among equals
  return rankInGroup(correct.map((c, i) => c * 1e6 + short[i]));
}
`,
  );
  const turns = (content: string) => [{ role: "assistant", content }];
  write(
    "ranked.jsonl",
    lines({ turns: turns("4"), metadata: { expected: "4", q: 1 } }, { turns: turns("four"), metadata: { expected: "4", q: 1 } }),
  );
  const tested = await gradebox("test", "ranked.ts", "--threads", "ranked.jsonl", "--json");
  assert.equal(tested.code, 0, tested.stderr);
  // each thread alone is a group of one: rankInGroup of one value is the middle, 0.5
  assert.deepEqual(
    jsonl(tested.stdout).map((r) => [r.line, r.outcome, r.score]),
    [
      [1, "scored", 0.5],
      [2, "scored", 0.5],
    ],
  );
  const sdk = new Gradebox({ baseURL: s.url, apiKey: env.GRADEBOX_API_KEY, project: "files" });
  const source = readFileSync(join(project, "ranked.ts"), "utf8");
  assert.equal((await sdk.graders.validate({ source })).shape, "group");
  assert.equal((await sdk.graders.validate({ source: `${source}\nexport async function grade(t) { return 1; }\n` })).shape, "both");
  // a dry run compares a new version with the stored one: for a key not yet stored, test is the dry run
  const dry = await gradebox("push", "ranked.ts", "--dry-run");
  assert.equal(dry.code, 1);
  assert.match(
    dry.stderr,
    /GRADER_NOT_FOUND: .*--dry-run checks a new version of an existing grader: to check a new one, run `gradebox test FILE`/,
  );
  const pushed = await gradebox("push", "ranked.ts");
  assert.equal(pushed.code, 0, pushed.stderr);
  assert.match(pushed.stdout, /^✓ created ranked \(version 1\) in typescript\n$/);
  // without groups it is refused, in the command line's words
  const ungrouped = await gradebox("grade", "ranked", "--threads", "ranked.jsonl");
  assert.equal(ungrouped.code, 1);
  assert.match(ungrouped.stderr, /GROUP_REQUIRED: .*\(gradebox grade --threads FILE --group-by FIELD\)/);
  const noModel = await gradebox("judge", "create", "binary", "j", "--model", "nope", "--criteria", "answers");
  assert.match(noModel.stderr, /MODEL_NOT_FOUND: no model "nope" in project "files"; register it first \(gradebox models create\)/);
  // the same threads piped in: --threads - reads stdin
  const piped = await gradeboxWithInput(
    readFileSync(join(project, "ranked.jsonl"), "utf8"),
    "grade",
    "ranked",
    "--threads",
    "-",
    "--group-by",
    "q",
  );
  assert.equal(piped.code, 0, piped.stderr);
  assert.deepEqual(
    jsonl(piped.stdout).map((r) => [r.line, r.score]),
    [
      [1, 1],
      [2, 0],
    ],
  );
  const graded = await gradebox("grade", "ranked", "--threads", "ranked.jsonl", "--group-by", "q", "--json");
  assert.equal(graded.code, 0, graded.stderr);
  assert.deepEqual(
    jsonl(graded.stdout).map((r) => r.score),
    [1, 0],
  );
});

test("test --threads grades the given threads in place of the built-in sample thread, whose metadata is empty", async () => {
  write("needs-expected.py", 'async def grade(thread):\n    return float(thread.completion() == thread.metadata["expected"])\n');
  write("expected.jsonl", lines({ turns: [{ role: "assistant", content: "4" }], metadata: { expected: "4" } }));
  const tested = await gradebox("test", "needs-expected.py", "--threads", "expected.jsonl", "--json");
  assert.equal(tested.code, 0, tested.stderr);
  assert.deepEqual(jsonl(tested.stdout), [{ line: 1, outcome: "scored", score: 1 }]);
  // without threads the built-in sample thread is the test run, and the hint says how to give it real threads
  const alone = await gradebox("test", "needs-expected.py");
  assert.equal(alone.code, 1);
  assert.match(alone.stderr, /KeyError: 'expected'.*thread\.metadata\.get\("expected", ""\).*gradebox test FILE --threads threads\.jsonl/s);
});

test("local imports stay inside the project directory: a file outside it, a Node built-in and a package are refused with their code", async () => {
  writeFileSync(join(root, "outside.ts"), "export const secret = 1;\n");
  write("escape.ts", 'import { secret } from "../outside";\nexport default async function (t) {\n  return secret;\n}\n');
  write("lib/fs.ts", 'import { readFileSync } from "node:fs";\nexport const read = () => readFileSync("/etc/passwd", "utf8");\n');
  write("builtin.ts", 'import { read } from "./lib/fs";\nexport default async function (t) {\n  return read().length;\n}\n');
  write("package.ts", 'import { read } from "./lib/pkg";\nexport default async function (t) {\n  return read();\n}\n');
  write("lib/pkg.ts", 'import chalk from "chalk";\nexport const read = () => chalk.length;\n');
  for (const [file, code, message] of [
    [
      "escape.ts",
      "LOCAL_IMPORT_OUTSIDE_PROJECT",
      /outside\.ts is outside the project directory .*project: a grader may import files inside it only/,
    ],
    ["builtin.ts", "NODE_BUILTIN_IMPORT", /lib\/fs\.ts:1:\d+: "node:fs" is a Node built-in module, which a grader cannot use/],
    [
      "package.ts",
      "PACKAGE_IMPORT",
      /lib\/pkg\.ts:1:\d+: "chalk" is a package: a grader may import "gradebox", "gradebox\/graders" and files inside the project directory/,
    ],
  ] as const) {
    const failed = await gradebox("push", file);
    assert.equal(failed.code, 1, file);
    assert.match(failed.stderr, message);
    const json = await gradebox("push", file, "--json");
    assert.equal(JSON.parse(json.stdout).error.code, code);
  }
  const listed = JSON.parse((await gradebox("ls", "--json")).stdout).map((g: { key: string }) => g.key);
  assert.ok(!listed.includes("escape") && !listed.includes("builtin") && !listed.includes("package"), "nothing stored");
});

test("the SDK's file path bundles local imports too, and `export` picks one named export", async () => {
  write("lib/util.ts", UTIL);
  write("shared.ts", SHARED);
  const client = new Gradebox({ baseURL: s.url, apiKey: env.GRADEBOX_API_KEY, project: "files" });
  const cwd = process.cwd();
  process.chdir(project);
  try {
    const g = await client.graders.create.function({ key: "sdk-four", file: "shared.ts", export: "exactFour" });
    assert.deepEqual(g.warnings, []);
    assert.equal(
      (await client.graders.grade({ graderKey: "sdk-four", thread: { turns: [{ role: "assistant", content: "4" }] } })).score,
      1,
    );
    await assert.rejects(client.graders.create.function({ key: "sdk-x", file: "shared.ts", export: "nope" }), {
      name: "GraderFileError",
      code: "NO_SUCH_EXPORT",
    });
  } finally {
    process.chdir(cwd);
  }
});

test("a Python file's key is its file name (no bundling: the file is sent as written)", async () => {
  // what the command sends: a stand-in records the body (the real server checks Python only with its runtime)
  const bodies: Array<Record<string, unknown>> = [];
  const stand = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text || "{}") as Record<string, unknown>;
    bodies.push(body);
    const at = "2026-01-01T00:00:00.000Z";
    res.setHeader("content-type", "application/json");
    res.writeHead(201).end(
      JSON.stringify({
        project: "files",
        key: body.key,
        kind: "function",
        version: 1,
        language: body.language,
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
  try {
    const source = "from .helpers import x\n\nasync def grade(thread):\n    return 1.0\n";
    write("exact_answer.py", source);
    const pushed = await gradebox("push", "exact_answer.py", "--url", `http://127.0.0.1:${(stand.address() as AddressInfo).port}`);
    assert.equal(pushed.code, 0, pushed.stderr);
    assert.match(pushed.stdout, /✓ created exact-answer \(version 1\) in python/);
    assert.deepEqual(bodies, [{ key: "exact-answer", source, language: "python", description: "" }]);
  } finally {
    stand.closeAllConnections();
    await new Promise((resolve) => stand.close(resolve));
  }
});

test("grade --threads reads OpenAI chat lines and TRL lines (standard and conversational), says which, and names the formats a bad line is not in", async () => {
  write(
    "echo.ts",
    "export default async function (t) {\n  return { score: t.completion() === '4' ? 1 : 0, metadata: { turns: t.getTurns().length, meta: t.metadata } };\n}\n",
  );
  assert.equal((await gradebox("push", "echo.ts")).code, 0);
  write(
    "openai.jsonl",
    lines(
      {
        messages: [
          { role: "developer", content: "be brief" },
          { role: "user", content: "2+2?" },
          { role: "assistant", content: "4" },
        ],
        id: 7,
        split: "a",
      },
      {
        messages: [
          { role: "user", content: [{ type: "text", text: "2+2?" }] },
          { role: "assistant", content: [{ type: "text", text: "5" }] },
        ],
      },
    ),
  );
  const openai = await gradebox("grade", "echo", "--threads", "openai.jsonl");
  assert.equal(openai.code, 0, openai.stderr);
  assert.match(openai.stderr, /^reading OpenAI chat lines\n/);
  assert.deepEqual(jsonl(openai.stdout), [
    { line: 1, outcome: "scored", score: 1, metadata: { turns: 3, meta: { id: 7, split: "a" } } },
    { line: 2, outcome: "scored", score: 0, metadata: { turns: 2, meta: {} } },
  ]);

  write(
    "trl.jsonl",
    lines(
      { prompt: "2+2?", completion: "4", label: true, source: "gsm" },
      { prompt: "3+1?", completion: "5", label: false, source: "gsm" },
    ),
  );
  const trl = await gradebox("grade", "echo", "--threads", "trl.jsonl", "--metadata-columns", "label");
  assert.match(trl.stderr, /^reading TRL standard lines\n/);
  assert.deepEqual(jsonl(trl.stdout), [
    { line: 1, outcome: "scored", score: 1, metadata: { turns: 2, meta: { label: true } } },
    { line: 2, outcome: "scored", score: 0, metadata: { turns: 2, meta: { label: false } } },
  ]);

  write(
    "conv.jsonl",
    lines(
      {
        prompt: [
          { role: "system", content: "s" },
          { role: "user", content: "2+2?" },
        ],
        completion: [{ role: "assistant", content: "4" }],
        id: "x",
      },
      { turns: [{ role: "assistant", content: "4" }] },
      { question: "2+2?", answer: "4" },
    ),
  );
  const conv = await gradebox("grade", "echo", "--threads", "conv.jsonl");
  assert.equal(conv.code, 1, "a line in no format fails the run");
  assert.match(conv.stderr, /^reading TRL conversational lines\nline 2: reading Gradebox threads too\n/m);
  assert.match(
    conv.stderr,
    /line 3: no "turns", "messages" or "prompt" and "completion": a line must be a Gradebox thread \{"turns".*an OpenAI chat line \{"messages".*or a TRL line \{"prompt", "completion", …\}/,
  );
  const results = jsonl(conv.stdout);
  assert.deepEqual(results[0], { line: 1, outcome: "scored", score: 1, metadata: { turns: 3, meta: { id: "x" } } });
  assert.deepEqual(results[1], { line: 2, outcome: "scored", score: 1, metadata: { turns: 1, meta: {} } });
  // a bad line is an error outcome like any other, so `select(.outcome == "error")` finds it
  assert.equal(results[2].outcome, "error");
  assert.equal(results[2].error.code, "BAD_LINE");
});

test(`test --threads streams any number of lines past the server's batch limit (${MAX_BATCH} here), in any accepted format`, async () => {
  write("four.ts", "export default async function (t) {\n  return t.completion() === '4' ? 1 : 0;\n}\n");
  const count = MAX_BATCH * 3 + 7;
  const many = Array.from({ length: count }, (_, i) => ({ prompt: "2+2?", completion: i % 2 ? "4" : "5" }));
  write("many.jsonl", lines(...many));
  const tested = await gradebox("test", "four.ts", "--threads", "many.jsonl");
  assert.equal(tested.code, 0, tested.stderr);
  assert.match(tested.stdout, /^✓ all five checks passed\n/);
  assert.equal(tested.stdout.match(/^ {2}line \d+: [01]$/gm)?.length, count);
  assert.match(tested.stdout, /^ {2}line 1: 0$/m);
  assert.match(tested.stdout, new RegExp(`^ {2}line ${count}: 0$`, "m"));
  assert.match(tested.stderr, /reading TRL standard lines/);
  assert.match(tested.stderr, new RegExp(`graded ${count}: ${count} scored, 0 errors, 0 abstained\\n {2}mean 0\\.4`));
  const json = await gradebox("test", "four.ts", "--threads", "many.jsonl", "--json");
  assert.equal(jsonl(json.stdout).length, count);
  assert.deepEqual(jsonl(json.stdout)[1], { line: 2, outcome: "scored", score: 1 });
});

test("the CLI speaks CLI: --version, a locked grader's refusal names `gradebox unlock`, samples are numbered from 1", async () => {
  const version = await gradebox("--version");
  assert.equal(version.code, 0);
  assert.equal(version.stdout.trim(), JSON.parse(readFileSync(join(repoRoot, "packages/gradebox/package.json"), "utf8")).version);
  assert.equal(version.stdout.trim(), JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")).version);

  write("locked.ts", "export default async function (t) {\n  return 1;\n}\n");
  await gradebox("push", "locked.ts");
  await gradebox("lock", "locked");
  const refused = await gradebox("rm", "locked");
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /grader "locked" is locked; unlock it \(gradebox unlock locked\) before deleting it/);
  assert.doesNotMatch(refused.stderr, /PUT|…\//);

  write("expects.ts", "export default async function (t) {\n  return t.completion() === '4' ? 1 : 0;\n}\n");
  const sample = (content: string, expected?: number) => ({
    thread: { turns: [{ role: "assistant", content }] },
    ...(expected === undefined ? {} : { expected }),
  });
  write("samples.jsonl", lines(sample("4", 1), sample("5", 0), sample("4")));
  assert.equal((await gradebox("push", "expects.ts", "--samples", "samples.jsonl")).code, 0);
  write("expects.ts", "export default async function (t) {\n  return t.completion() === '5' ? 1 : 0;\n}\n");
  write("samples.jsonl", lines(sample("4"), sample("5"), sample("6")));
  const dry = await gradebox("push", "expects.ts", "--samples", "samples.jsonl", "--dry-run");
  assert.match(dry.stdout, /samples: 3, 2 changed\n {4}sample 1: 1 → 0\n {4}sample 2: 0 → 1\n/);
  write("samples.jsonl", lines(sample("4"), sample("5", 0)));
  const failed = await gradebox("push", "expects.ts", "--samples", "samples.jsonl");
  assert.match(failed.stderr, /test_run check failed: sample 2 should score 0 but scored 1/);
});

test("keys from names, the named graders of a file, and a line read in each format (the SDK's pure parts)", () => {
  assert.deepEqual(["exactMatch", "length_ok", "HTTPStatus", "already-kebab", "v2Score", "_private"].map(keyFromName), [
    "exact-match",
    "length-ok",
    "http-status",
    "already-kebab",
    "v2-score",
    "private",
  ]);
  assert.equal(keyFromFile("graders/exact_match.py"), "exact-match");
  assert.throws(() => keyFromName("__"), { name: "GraderFileError", code: "NO_KEY" });
  assert.deepEqual(namedGraders("export async function a(t) {}\nexport const b = async (t) => 1;\nexport function helper() {}\n"), [
    "a",
    "b",
  ]);
  assert.deepEqual(
    namedGraders("export async function a(t) {}\nexport default async function (t) {}\n"),
    [],
    "a default export: one grader",
  );
  assert.deepEqual(namedGraders("export async function a(t) {}\nasync function grade(t) {}\n"), [], "a top-level grade: one grader");
  assert.deepEqual(
    namedGraders("export async function gradeGroup(threads) {}\nexport async function helper(t) {}\n"),
    [],
    "an exported gradeGroup: one grader, whose entry point the server picks (not a named grader `grade-group`)",
  );
  assert.deepEqual(readThreadLine({ messages: [{ role: "tool", content: null }] }), {
    format: "openai",
    thread: { turns: [{ role: "tool", content: "" }], metadata: {} },
  });
  assert.match(
    String((readThreadLine({ messages: [{ role: "", content: "x" }] }) as { problem: string }).problem),
    /messages\[0\]\.role is "": a role is 1 to 64 characters .*developer is read as system/,
  );
  // any other role is kept as it is
  assert.deepEqual(readThreadLine({ messages: [{ role: "ipython", content: "x" }] }), {
    format: "openai",
    thread: { turns: [{ role: "ipython", content: "x" }], metadata: {} },
  });
  assert.match(String((readThreadLine({ prompt: "x" }) as { problem: string }).problem), /needs both "prompt" and "completion"/);
  assert.match(
    String((readThreadLine({ prompt: "x", completion: [] }) as { problem: string }).problem),
    /must both be strings \(standard\) or both lists/,
  );
});
