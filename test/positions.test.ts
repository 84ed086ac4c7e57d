// Runtime errors carry where the grader threw, in the user's own source (issue 12): the prelude
// reads the first grader.js frame of the error's stack, the reply carries it, and the engine
// maps it back through the grader's source map (esbuild's, corrected for the analyser's edit).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { encodeError } from "../sandbox/isolate/reply.ts";
import { decodeReply, ReplyViolation } from "../sandbox/worker/reply-reader.ts";
import { Gradebox, GraderRuntimeError } from "../sdk/index.ts";
import { call, startServer, type TestServer } from "./support/helpers.ts";

let s: TestServer;
const base = "/v1/projects/where/graders";
before(async () => {
  s = await startServer({ listen: true });
});
after(async () => {
  await s.close();
});

/** metadata.k is a number, so `k.filter(…)` throws a TypeError; the built-in sample thread has no k */
const thread = { turns: [{ role: "assistant" as const, content: "an answer" }], metadata: { k: 3 } };

async function push(key: string, source: string): Promise<void> {
  const res = await call(s.app, "POST", base, { key, source });
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

async function gradeBatch(key: string) {
  const res = await call(s.app, "POST", `${base}/${key}/grade-batch`, { threads: [thread] });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.results[0] as { error?: { code: string; message: string; line?: number; column?: number }; score?: number };
}

/** 1-based line and column of the first `needle` in the source */
function positionIn(source: string, needle: string, line: number): { line: number; column: number } {
  const text = source.split("\n")[line - 1];
  const at = text.indexOf(needle);
  assert.ok(at >= 0, `line ${line} has no ${needle}: ${text}`);
  return { line, column: at + 1 };
}

describe("a grader whose line 3 throws: the outcome has line 3 and the column in the user's source", () => {
  const cases: Array<[string, string, string]> = [
    ["plain", "async function grade(t) {\n  if (!t.metadata.k) return 0;\n  return t.metadata.k.filter((x) => x).length;\n}", "filter"],
    [
      "default",
      "// the default export\nexport default async function (t) {\n  return t.metadata.k ? t.metadata.k.filter((x) => x).length : 0;\n}",
      "filter",
    ],
    [
      // the analyser puts `const __gradebox_entry = ` in front of this line: 25 columns more
      "arrow",
      "// an arrow, on the line that throws\n// so its columns are shifted\nasync (t) => (t.metadata.k ? t.metadata.k.filter((x) => x).length : 0)",
      "filter",
    ],
    [
      // here `export default ` (15 columns) becomes the 25 of the prefix
      "default-arrow",
      "const helperValue = 1;\n\nexport default async (t) => (t.metadata.k ? t.metadata.k.filter((x) => x).length + helperValue : 0);",
      "filter",
    ],
    [
      // the annotations before the throw on its line are stripped from the compiled script
      "typescript",
      "interface Meta { k?: unknown }\nasync function grade(thread: StringThread): Promise<number> {\n  const meta: Meta = thread.metadata as Meta; const list: Array<string> = meta.k as unknown as string[]; if (!list) return 0; const n: number = (list as Array<string>).filter((x: string): boolean => !!x).length; return n;\n}",
      ".filter",
    ],
    [
      // the first frame in the grader's code is the helper's
      "helper",
      "function count(list: string[]): number {\n  let n = 0;\n  for (const x of list.filter(Boolean)) n += x.length;\n  return n;\n}\nasync function grade(t) {\n  if (!t.metadata.k) return 0;\n  return count(t.metadata.k as string[]);\n}",
      "filter",
    ],
    [
      "thrown error",
      'async function grade(t) {\n  if (!t.metadata.k) return 0;\n  if (t.metadata.k > 2) throw new Error("too many");\n  return 1;\n}',
      "new Error",
    ],
    [
      "after await",
      "async function grade(t) {\n  await null;\n  if (t.metadata.k) { await Promise.resolve(); return t.metadata.k.filter(Boolean).length; }\n  return 0;\n}",
      "filter",
    ],
  ];
  for (const [name, source, needle] of cases) {
    test(name, async () => {
      const key = name.replace(/\s+/g, "-");
      await push(key, source);
      const outcome = await gradeBatch(key);
      assert.equal(outcome.error?.code, "GRADER_ERROR", JSON.stringify(outcome));
      const expected = positionIn(source, needle, 3);
      // `.filter`: V8 points at the property name
      if (needle === ".filter") expected.column += 1;
      assert.deepEqual({ line: outcome.error?.line, column: outcome.error?.column }, expected, JSON.stringify(outcome));
    });
  }

  test("grade (one thread) answers 422 with the line and column", async () => {
    const res = await call(s.app, "POST", `${base}/plain/grade`, { thread });
    assert.equal(res.status, 422);
    assert.equal(res.body.code, "GRADER_ERROR");
    assert.deepEqual([res.body.line, res.body.column], [3, 23]);
  });

  test("the SDK's GraderRuntimeError carries them", async () => {
    const client = new Gradebox({ baseURL: s.url, apiKey: await s.keyFor("where"), project: "where" });
    await assert.rejects(client.graders.grade({ graderKey: "plain", thread }), (e: unknown) => {
      assert.ok(e instanceof GraderRuntimeError);
      assert.deepEqual([e.code, e.line, e.column], ["GRADER_ERROR", 3, 23]);
      return true;
    });
  });

  test("a combined grader's failed part says where in the part's source", async () => {
    const res = await call(s.app, "POST", `${base}/combined`, { key: "both", mode: "all", graders: [{ graderKey: "plain" }] });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const outcome = await gradeBatch("both");
    assert.equal(outcome.error?.code, "COMPONENT_FAILED");
    assert.match(outcome.error?.message ?? "", /failed with GRADER_ERROR: TypeError: .* \(line 3, column 23 of plain\)$/);
    assert.equal(outcome.error?.line, undefined, "a position on the combined grader would point into another source");
  });

  test("test_run on the built-in sample thread says where it threw", async () => {
    const res = await call(s.app, "POST", base, {
      key: "mock-fails",
      source: "async function grade(t) {\n  const words: string[] = t.metadata.words as string[];\n  return words.length;\n}",
    });
    assert.equal(res.status, 422);
    assert.equal(res.body.check, "test_run");
    assert.deepEqual([res.body.line, res.body.column], [3, 16]);
  });
});

describe("no position, and still GRADER_ERROR, when the stack cannot be trusted", () => {
  const cases: Array<[string, string]> = [
    ["a stack getter that throws", 'Object.defineProperty(e, "stack", { get() { throw new Error("no stack for you"); } });'],
    ["a stack that is not a string", 'Object.defineProperty(e, "stack", { value: { toString() { return "at x (grader.js:1:1)"; } } });'],
    ["a stack that is a number", "e.stack = 42;"],
    ["a stack without a grader frame", 'e.stack = "Error: boom\\n    at somewhere (elsewhere.js:3:4)";'],
    ["a forged frame past the limits", 'e.stack = "Error: boom\\n    at grade (grader.js:99999999:1)";'],
  ];
  for (const [name, tamper] of cases) {
    test(name, async () => {
      const key = `stack-${name.replace(/\s+/g, "-")}`;
      await push(
        key,
        `async function grade(t) {\n  if (!t.metadata.k) return 0;\n  const e = new Error("boom");\n  ${tamper}\n  throw e;\n}`,
      );
      const outcome = await gradeBatch(key);
      assert.equal(outcome.error?.code, "GRADER_ERROR", JSON.stringify(outcome));
      assert.match(outcome.error?.message ?? "", /boom/);
      assert.equal(outcome.error?.line, undefined, JSON.stringify(outcome));
      assert.equal(outcome.error?.column, undefined);
    });
  }

  test("a thrown string or object has no position", async () => {
    await push(
      "throws-values",
      'async function grade(t) {\n  if (!t.metadata.k) return 0;\n  throw { message: "plain", stack: "at grade (grader.js:3:3)" };\n}',
    );
    const outcome = await gradeBatch("throws-values");
    assert.equal(outcome.error?.code, "GRADER_ERROR");
    assert.equal(outcome.error?.line, undefined, "a plain object's stack is not the script's: it maps to nothing there");
  });
});

describe("bounded", () => {
  test("a grader that throws from a deeply recursive call answers within its time limit, with the position", async () => {
    const source =
      "function down(n: number, k: unknown): number {\n  if (n === 0) return (k as string[]).filter(Boolean).length;\n  return down(n - 1, k) + 1;\n}\nasync function grade(t) {\n  if (!t.metadata.k) return 0;\n  return down(5000, t.metadata.k);\n}";
    await push("deep", source);
    const started = Date.now();
    const outcome = await gradeBatch("deep");
    assert.ok(Date.now() - started < s.config.timeoutMs + 2000, "answered in time");
    assert.equal(outcome.error?.code, "GRADER_ERROR", JSON.stringify(outcome));
    assert.deepEqual({ line: outcome.error?.line, column: outcome.error?.column }, positionIn(source, "filter", 2));
  });

  test("stack overflow: RangeError, in time", async () => {
    await push(
      "overflow",
      "function forever(n: number): number {\n  return forever(n + 1) + 1;\n}\nasync function grade(t) {\n  if (!t.metadata.k) return 0;\n  return forever(0);\n}",
    );
    const started = Date.now();
    const outcome = await gradeBatch("overflow");
    assert.ok(Date.now() - started < s.config.timeoutMs + 2000, "answered in time");
    assert.equal(outcome.error?.code, "GRADER_ERROR", JSON.stringify(outcome));
    assert.match(outcome.error?.message ?? "", /RangeError: Maximum call stack size exceeded/);
    assert.equal(outcome.error?.line, 2);
  });

  test("a 10 MB message and a huge function name: the stack is read under the limit", async () => {
    await push(
      "huge",
      'async function grade(t) {\n  if (!t.metadata.k) return 0;\n  const f = () => { throw new Error("m".repeat(10_000_000)); };\n  Object.defineProperty(f, "name", { value: "n".repeat(100_000) });\n  return f();\n}',
    );
    const started = Date.now();
    const outcome = await gradeBatch("huge");
    assert.ok(Date.now() - started < s.config.timeoutMs + 2000, "answered in time");
    assert.equal(outcome.error?.code, "GRADER_ERROR", JSON.stringify(outcome).slice(0, 300));
    assert.ok((outcome.error?.message.length ?? 0) <= 2001);
  });
});

describe("the error record", () => {
  test("carries a position as e<code>,<line>,<column>,<length>:<message>", () => {
    const record = encodeError("GRADER_ERROR", "TypeError: x", 7, 12);
    assert.equal(record, "e0,7,12,12:TypeError: x");
    assert.deepEqual(decodeReply(`${record}.`, 1).outcomes, [
      { error: { code: "GRADER_ERROR", message: "TypeError: x", line: 7, column: 12 } },
    ]);
    assert.deepEqual(decodeReply(`${encodeError("GRADER_ERROR", "no position")}.`, 1).outcomes, [
      { error: { code: "GRADER_ERROR", message: "no position" } },
    ]);
  });
  for (const [name, reply] of [
    ["half a position", "e0,7,0,1:x."],
    ["a position on an error the grader did not throw", `${encodeError("INVALID_SCORE", "x", 1, 1)}.`],
    ["a seven-digit line", "e0,1000000,1,1:x."],
    ["a missing column", "e0,7,1:x."],
    ["a signed line", "e0,-7,1,1:x."],
  ]) {
    test(`refuses ${name}`, () => {
      assert.throws(() => decodeReply(reply, 1), ReplyViolation);
    });
  }
});
