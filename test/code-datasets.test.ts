// Code graders on the rows public datasets and trainers actually carry, end to end on a real
// server with real workers: an item whose tests the grader refuses is that item's
// INVALID_METADATA error and costs nothing else of its batch (nor its worker); verl's own test
// formats (newline-separated JSON arguments, assert_case); MBPP's setup code before the
// program; JavaScript tests written for Node's assert (MultiPL-E); limits worded as limits.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";

let s: TestServer;

type Result = {
  outcome: string;
  score?: number;
  error?: { code: string; message: string };
  metadata?: { results: Array<{ verdict: string; message?: string; cpuMs?: number }> };
};

async function create(body: object) {
  const res = await call(s.app, "POST", "/v1/projects/data/graders/code", body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

async function gradeBatch(grader: string, threads: object[]): Promise<Result[]> {
  const res = await call(s.app, "POST", `/v1/projects/data/graders/${grader}/grade-batch`, { threads });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.results;
}
/** workers replaced since the server started */
async function restarts(): Promise<number> {
  const text = (await s.app.inject({ method: "GET", url: "/metrics", headers: { authorization: `Bearer ${s.metricsToken}` } })).body;
  return text
    .split("\n")
    .filter((l) => l.startsWith("gradebox_worker_restarts_total"))
    .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
}
const verdicts = (r: Result) => r.metadata?.results.map((v) => v.verdict);
const fence = (lang: string, code: string) => `\`\`\`${lang}\n${code}\n\`\`\`\n`;

const SUM = fence("python", "a, b = map(int, input().split())\nprint(a + b)");
const SUM_ROW = { inputs: ["1 2\n", "3 4\n"], outputs: ["3\n", "7\n"] };

before(async () => {
  s = await startServer({ listen: true });
  await create({ key: "py" });
  await create({ key: "call", tests: "call" });
  await create({ key: "js", languages: ["javascript"] });
  await create({ key: "ts", languages: ["typescript", "javascript"] });
  await create({ key: "tight", limits: { cpuMs: 1000, outputBytes: 1024 } });
  // the security report's grader; and one whose compile deadline is its floor, 500 ms
  await create({ key: "cg-ts", languages: ["typescript"], limits: { cpuMs: 2000 } });
  await create({ key: "cg-quick", languages: ["typescript", "javascript"], limits: { cpuMs: 100 } });
});
after(() => s?.close());

describe("an item whose tests are refused", () => {
  test("is its own INVALID_METADATA error with the reason; the items around it are graded, on the same workers", async () => {
    const restartsBefore = await restarts();
    const refused: [string, Record<string, unknown>, RegExp][] = [
      ["3 inputs, 2 outputs", { inputs: ["1 2", "3 4", "5 6"], outputs: ["3", "7"] }, /3 inputs but 2 outputs/],
      ["no tests", { question: "sum two numbers" }, /carries no tests/],
      [
        "40 tests over maxTests",
        { inputs: Array(40).fill("1 2"), outputs: Array(40).fill("3") },
        /40 tests; this grader runs at most 32 per item \(maxTests\)/,
      ],
      ["LiveCodeBench's compressed cases", { private_test_cases: "eJyLjgUAARUAuQ==" }, /compressed private_test_cases/],
    ];
    for (const [name, row, reason] of refused) {
      const results = await gradeBatch("py", [thread(SUM, SUM_ROW), thread(SUM, row), thread(SUM, SUM_ROW), thread(SUM, SUM_ROW)]);
      assert.deepEqual(
        results.map((r) => r.outcome),
        ["scored", "error", "scored", "scored"],
        `${name}: ${JSON.stringify(results)}`,
      );
      assert.deepEqual([results[0].score, results[2].score, results[3].score], [1, 1, 1], name);
      assert.equal(results[1].error?.code, "INVALID_METADATA", name);
      assert.match(results[1].error?.message ?? "", reason, name);
    }
    // a grader that runs call tests, given stdin/stdout data
    const [one, bad] = await gradeBatch("call", [
      thread(fence("python", "def add(a, b):\n    return a + b"), { inputs: [[1, 2]], outputs: [3], fn_name: "add" }),
      thread(SUM, SUM_ROW),
    ]);
    assert.equal(one.score, 1);
    assert.deepEqual([bad.outcome, bad.error?.code], ["error", "INVALID_METADATA"]);
    assert.match(bad.error?.message ?? "", /this grader runs call tests; the item's tests include stdin tests/);
    // a thread that does not end with the assistant's program
    const [noProgram, good] = await gradeBatch("py", [
      { turns: [{ role: "user", content: "hi" }], metadata: SUM_ROW },
      thread(SUM, SUM_ROW),
    ]);
    assert.deepEqual([noProgram.outcome, noProgram.error?.code, good.score], ["error", "INVALID_THREAD", 1]);
    assert.equal(await restarts(), restartsBefore, "no worker was killed for a refused item");
  });
});

describe("verl's own formats", () => {
  test("fn_name with newline-separated JSON arguments, the expected value as verl's wrapper prints it", async () => {
    const row = {
      fn_name: "add",
      inputs: ["1\n2", "[1, 2]\n[3]", '"ab"\n"c"'],
      outputs: ["3", "[1, 2, 3]", "abc"],
    };
    const program = "def add(a, b):\n    return a + b";
    const [right, wrong, underKey] = await gradeBatch("py", [
      thread(fence("python", program), row),
      thread(fence("python", "def add(a, b):\n    return b"), row),
      // verl's ground truth is a JSON text under reward_model.ground_truth
      thread(fence("python", program), { ground_truth: JSON.stringify(row) }),
    ]);
    assert.equal(right.score, 1, JSON.stringify(right));
    assert.deepEqual(verdicts(right), ["accepted", "accepted", "accepted"]);
    assert.deepEqual(verdicts(wrong), ["wrong_answer", "wrong_answer", "wrong_answer"]);
    // (the py grader reads metadata itself: ground_truth is not a test set there)
    assert.equal(underKey.error?.code, "INVALID_METADATA");
  });

  test("assert_case: verl's compute_score runs each case after the program", async () => {
    const row = { assert_case: ["assert add(1, 2) == 3", "assert add(2, 2) == 4"] };
    const withIo = { assert_case: ["print(add(int(input()), 1))"], inputs: ["41"], outputs: ["42"] };
    const [right, wrong, io, ioWrong] = await gradeBatch("py", [
      thread(fence("python", "def add(a, b):\n    return a + b"), row),
      thread(fence("python", "def add(a, b):\n    return a * b"), row),
      thread(fence("python", "def add(a, b):\n    return a + b"), withIo),
      thread(fence("python", "def add(a, b):\n    return a - b"), withIo),
    ]);
    assert.deepEqual(verdicts(right), ["accepted", "accepted"]);
    assert.deepEqual(verdicts(wrong), ["wrong_answer", "accepted"]);
    assert.deepEqual([io.score, ioWrong.score], [1, 0]);
  });
});

describe("MBPP's setup", () => {
  test("test_setup_code and test_imports run before the program, in its namespace", async () => {
    const row = {
      test_setup_code: "K = 5",
      test_imports: ["import math"],
      test_list: ["assert add_k(1) == 6", "assert root(16) == 4"],
    };
    const [r] = await gradeBatch("py", [
      thread(fence("python", "def add_k(x):\n    return x + K\ndef root(x):\n    return math.isqrt(x)"), row),
    ]);
    assert.deepEqual(verdicts(r), ["accepted", "accepted"], JSON.stringify(r.metadata?.results));
  });
});

describe("JavaScript tests written for Node", () => {
  const MULTIPLE_E = {
    test: "const assert = require('node:assert');\n\n\nfunction test() {\n  let candidate = add;\n  assert.deepEqual(candidate(1, 2), 3);\n  assert.deepEqual(candidate([1], [2]), [1, 2]);\n}\n\ntest();\n",
  };
  test("require('node:assert') and require('assert'): a failed assertion is a wrong answer", async () => {
    const add = "function add(a, b) { return Array.isArray(a) ? a.concat(b) : a + b; }";
    const results = await gradeBatch("js", [
      thread(fence("js", add), MULTIPLE_E),
      thread(fence("js", "function add(a, b) { return a; }"), MULTIPLE_E),
      thread(fence("js", add), {
        test_list: [
          "const assert = require('assert'); assert.strictEqual(add(2, 2), 4); assert.deepStrictEqual(add([1], []), [1]); assert.ok(add(1, 0)); assert.notEqual(add(1, 1), 3); assert.throws(() => { throw new TypeError('x') }, TypeError); assert.equal(add(1, 1), '2');",
          "console.assert(add(1, 1) === 2);",
          "console.assert(add(1, 1) === 3, 'one and one');",
        ],
      }),
    ]);
    assert.deepEqual(verdicts(results[0]), ["accepted"], JSON.stringify(results[0].metadata?.results));
    assert.deepEqual(verdicts(results[1]), ["wrong_answer"]);
    assert.match(results[1].metadata?.results[0].message ?? "", /^AssertionError: /);
    assert.deepEqual(verdicts(results[2]), ["accepted", "accepted", "wrong_answer"], JSON.stringify(results[2].metadata?.results));
  });

  test("a program cannot make the assert module pass: patched primitives, a replaced require or console", async () => {
    const wrong = "function add(a, b) { return a - b; }\n";
    const attempts = [
      "Object.is = () => true; JSON.stringify = () => '3'; Object.keys = () => [];",
      "require = () => ({ deepEqual() {}, strictEqual() {} });",
      "try { require('node:assert').deepEqual = () => {}; } catch {}",
      "globalThis.require = function () { return { deepEqual() {} }; };",
      "console.assert = () => {};",
      "Object.defineProperty(Array.prototype, 'length', { get() { return 0; } });",
    ];
    const results = await gradeBatch(
      "js",
      attempts.map((a) =>
        thread(fence("js", wrong + a), {
          test_list: ["const assert = require('node:assert'); assert.deepEqual(add(1, 2), 3);", "console.assert(add(1, 2) === 3);"],
        }),
      ),
    );
    for (const [i, r] of results.entries()) assert.equal(r.score, 0, `${attempts[i]}: ${JSON.stringify(r.metadata?.results)}`);
  });
});

describe("limits worded as limits", () => {
  test("a time limit reports the time used; output and memory limits say so", async () => {
    const [slow, loud, big] = await gradeBatch("tight", [
      thread(fence("python", "def add(a, b):\n    while True:\n        pass"), {
        test: "def check(candidate):\n    assert candidate(1, 2) == 3\n",
        entry_point: "add",
      }),
      thread(fence("python", "while True:\n    print('x' * 100)"), SUM_ROW),
      thread(fence("python", "x = [0] * 10**9"), SUM_ROW),
    ]);
    assert.deepEqual(verdicts(slow), ["time_limit"]);
    assert.ok((slow.metadata?.results[0].cpuMs ?? 0) > 0, JSON.stringify(slow.metadata?.results));
    assert.equal(loud.metadata?.results[0].verdict, "output_limit");
    assert.equal(loud.metadata?.results[0].message, "output limit: more than 1024 bytes of output");
    assert.equal(big.metadata?.results[0].verdict, "memory_limit");
    assert.match(big.metadata?.results[0].message ?? "", /^memory limit: MemoryError/);
  });
});

describe("output the tests expect", () => {
  test("a right answer longer than outputBytes is not cut off (CodeContests' long outputs); twice it is", async () => {
    const n = 1500;
    const expected = `${Array.from({ length: n }, (_, i) => i).join("\n")}\n`;
    const row = { public_tests: { input: [`${n}\n`], output: [expected] } };
    const [right, flood] = await gradeBatch("tight", [
      thread(fence("python", "for i in range(int(input())):\n    print(i)"), row),
      thread(fence("python", "while True:\n    print('x' * 100)"), row),
    ]);
    assert.ok(Buffer.byteLength(expected) > 1024);
    assert.deepEqual(verdicts(right), ["accepted"], JSON.stringify(right.metadata?.results));
    assert.deepEqual(verdicts(flood), ["output_limit"]);
    assert.match(flood.metadata?.results[0].message ?? "", /^output limit: more than \d+ bytes of output$/);
  });

  test("MultiPL-E's tests key: the whole test program", async () => {
    const [r] = await gradeBatch("js", [
      thread(fence("js", "function add(a, b) { return a + b; }"), {
        tests:
          "const assert = require('node:assert');\nfunction test() {\n  let candidate = add;\n  assert.deepEqual(candidate(2, 3), 5);\n}\ntest();\n",
      }),
    ]);
    assert.equal(r.score, 1, JSON.stringify(r));
  });
  test("TypeScript: MultiPL-E's HumanEval-TS rows and stdin programs run with their types stripped", async () => {
    const tests =
      "declare var require: any;\nconst assert = require('node:assert');\nfunction test() {\n  let candidate = add;\n  assert.deepEqual(candidate(2, 3), 5);\n}\n\ntest();\n";
    const typed =
      "interface Pair { a: number; b: number }\nfunction add(a: number, b: number): number {\n  const p: Pair = { a, b };\n  return p.a + p.b;\n}\n";
    const io = { inputs: ["2 3\n"], outputs: ["5\n"] };
    const stdin =
      "const [a, b]: number[] = require('fs').readFileSync(0, 'utf8').trim().split(' ').map(Number);\nconsole.log(a + b as number);\n";
    const [right, wrong, broken, untyped, fromStdin, js] = await gradeBatch("ts", [
      thread(fence("ts", typed), { tests }),
      thread(fence("typescript", "function add(a: number, b: number): number { return a * b; }"), { tests }),
      thread(fence("ts", "function add(a: number, : number) {\n  return a;\n}"), { tests }),
      // an untagged block is the first language's: TypeScript; a type error is not a failed test
      thread("```\nfunction add(a: number, b: number): string { return (a + b) as any; }\n```", { tests }),
      thread(fence("ts", stdin), io),
      // a block tagged js stays JavaScript
      thread(fence("js", "function add(a, b) { return a + b; }"), { tests: tests.replace("declare var require: any;\n", "") }),
    ]);
    assert.deepEqual(
      [right.score, wrong.score, untyped.score, fromStdin.score, js.score],
      [1, 0, 1, 1, 1],
      JSON.stringify([right, wrong, untyped, fromStdin, js]),
    );
    assert.deepEqual(verdicts(wrong), ["wrong_answer"]);
    assert.deepEqual(verdicts(broken), ["syntax_error"]);
    // ES module syntax, in TypeScript and in JavaScript: imports become require calls, exports stay callable
    const esmStdin =
      "import * as readline from 'readline';\nconst rl = readline.createInterface({ input: process.stdin });\nrl.on('line', (l: string) => { const [a, b] = l.split(' ').map(Number); console.log(a + b); });\n";
    const [tsImport, jsImport, jsExport] = await gradeBatch("ts", [
      thread(fence("ts", esmStdin), io),
      thread(
        fence(
          "js",
          "import { readFileSync } from 'fs';\nconst [a, b] = readFileSync(0, 'utf8').trim().split(' ').map(Number);\nconsole.log(a + b);",
        ),
        io,
      ),
      thread(fence("js", "export function add(a, b) { return a + b; }"), { tests: tests.replace("declare var require: any;\n", "") }),
    ]);
    assert.deepEqual([tsImport.score, jsImport.score, jsExport.score], [1, 1, 1], JSON.stringify([tsImport, jsImport, jsExport]));
    assert.match(broken.metadata?.results[0].message ?? "", /^SyntaxError: .*\(program line 1, column \d+\)/);
  });
});

describe("a program esbuild cannot compile cheaply", () => {
  test("is a syntax_error scoring 0, within the compile's bounds; no worker is replaced", async () => {
    const restartsBefore = await restarts();
    const dashes = (n: number) => `const f = ${"-".repeat(n)} 1;\nconsole.log(1)\n`;
    // the report: each item was GRADER_MEMORY_LIMIT ("exceeded the 64 MB memory limit"), its worker replaced
    const reported = await gradeBatch("cg-ts", [
      thread(fence("ts", dashes(30_000)), SUM_ROW),
      thread(fence("ts", dashes(60_000)), SUM_ROW),
      thread(
        fence("ts", "const [a, b] = require('fs').readFileSync(0, 'utf8').split(' ').map(Number);\nconsole.log(a + b as number);"),
        SUM_ROW,
      ),
    ]);
    assert.deepEqual(
      reported.map((r) => [r.outcome, r.score, verdicts(r)]),
      [
        ["scored", 0, ["syntax_error", "syntax_error"]],
        ["scored", 0, ["syntax_error", "syntax_error"]],
        ["scored", 1, ["accepted", "accepted"]],
      ],
      JSON.stringify(reported),
    );
    assert.match(reported[0].metadata?.results[0].message ?? "", /^SyntaxError: Invalid assignment target \(program line 1, column \d+\)$/);
    const costly = await gradeBatch("cg-quick", [
      // past the deadline: `a<a<…` in TypeScript, one name declared 20 000 times
      thread(fence("ts", `const f = ${"a<".repeat(60_000)}a;`), SUM_ROW),
      thread(fence("ts", "let a;".repeat(20_000)), SUM_ROW),
      // JavaScript with ES module syntax takes the same path
      thread(fence("js", `import fs from 'fs';\n${dashes(30_000)}`), SUM_ROW),
    ]);
    assert.deepEqual(
      costly.map((r) => [r.outcome, r.score, verdicts(r)]),
      Array(3).fill(["scored", 0, ["syntax_error", "syntax_error"]]),
      JSON.stringify(costly),
    );
    assert.match(
      costly[0].metadata?.results[0].message ?? "",
      /^SyntaxError: the TypeScript program took longer than 500 ms to compile; simplify it/,
    );
    assert.match(costly[2].metadata?.results[0].message ?? "", /^SyntaxError: Invalid assignment target \(program line 2, column \d+\)$/);
    assert.equal(await restarts(), restartsBefore, "no worker was replaced");
  });
});
