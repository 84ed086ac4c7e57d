// The code grader's pure parts: its definition, program extraction, tests read from dataset-shaped
// metadata (rows as APPS, TACO, CodeContests, LiveCodeBench, HumanEval and MBPP publish them),
// comparison, verdicts and scores. Runs are answered by a scripted runner: what a real runner
// does is test/code-graders.test.ts's.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { NonFiniteFloat, sameOutput, sameValue } from "../sandbox/code/compare.ts";
import { extractProgram } from "../sandbox/code/extract.ts";
import { gradeThread } from "../sandbox/code/grade.ts";
import { type CodeRunner, RunnerFailure, type RunRequest, type RunResult } from "../sandbox/code/run.ts";
import { CodeSpec, parseCodeSpec } from "../sandbox/code/spec.ts";
import { readTests, testsRow } from "../sandbox/code/tests.ts";
import { MAX_RESULT } from "../sandbox/protocol/replies.ts";
import { refusal, responseOf, runSpec, threadOf } from "../server/trainers/sandbox-fusion.ts";

const spec = (over: Record<string, unknown> = {}) => CodeSpec.parse(over);
const py = (code: string) => ({ code, language: "python" as const });
const ok = (over: Partial<RunResult> = {}): RunResult => ({
  status: "ok",
  stdout: "",
  stderr: "",
  exitCode: 0,
  completed: false,
  cpuMs: 1,
  ...over,
});
const thread = (completion: string, metadata: Record<string, unknown>) => ({
  turns: [
    { role: "user", content: "Solve it." },
    { role: "assistant", content: completion },
  ],
  metadata,
});

/** A runner that answers each request from a script, and records what it was asked. */
function scripted(answer: (r: RunRequest) => RunResult) {
  const seen: RunRequest[] = [];
  const runner: CodeRunner = {
    run: (r) => {
      seen.push(r);
      return answer(r);
    },
    dispose: () => {},
  };
  return { seen, runnerFor: () => runner };
}

describe("CodeSpec", () => {
  test("{} is a whole definition with the documented defaults", () => {
    assert.deepEqual(parseCodeSpec("{}"), {
      languages: ["python"],
      extract: "fenced_or_whole",
      tests: "auto",
      compare: "whitespace",
      absTol: 1e-6,
      relTol: 1e-6,
      scoring: "fraction",
      limits: { cpuMs: 2000, memoryMb: 256, outputBytes: 65536 },
      maxTests: 32,
    });
  });
  test("refuses limits past the service's bounds, unknown fields and repeated languages", () => {
    for (const bad of [
      { limits: { cpuMs: 60_000 } },
      { limits: { memoryMb: 4096 } },
      { limits: { outputBytes: 10 } },
      { limits: { wallMs: 5 } },
      { maxTests: 101 },
      { maxTests: 100, limits: { cpuMs: 10_000 } },
      { languages: ["python", "python"] },
      { languages: ["ruby"] },
      { languages: [] },
      { compare: "fuzzy" },
      { extract: "first" },
      { testsKey: "a.b.c.d.e" },
      { nope: 1 },
    ]) {
      assert.equal(CodeSpec.safeParse(bad).success, false, JSON.stringify(bad));
    }
  });
});

describe("extractProgram", () => {
  const s = spec({ languages: ["python", "javascript"] });
  test("the last block tagged with an accepted language wins over earlier and untagged blocks", () => {
    const text = "```python\nprint(1)\n```\nthen\n```\nuntagged\n```\n```js\nconsole.log(2)\n```\n```cpp\nint main(){}\n```\n";
    assert.deepEqual(extractProgram(text, s), { language: "javascript", code: "console.log(2)", from: "tagged" });
  });
  test("py, python3 and ~~~ fences count; a tag's case does not matter", () => {
    assert.equal(extractProgram("~~~Py3\nx = 1\n~~~", s)?.code, "x = 1");
    assert.equal(extractProgram("````python3 title\na\n```\nb\n````", s)?.code, "a\n```\nb");
  });
  test("an untagged block runs in the first language; else the whole completion, or no program with fenced", () => {
    assert.deepEqual(extractProgram("text\n```\nprint(3)\n```", s), { language: "python", code: "print(3)", from: "untagged" });
    assert.deepEqual(extractProgram("print(4)", s), { language: "python", code: "print(4)", from: "whole" });
    assert.equal(extractProgram("print(4)", { ...s, extract: "fenced" }), undefined);
    assert.equal(extractProgram("```cpp\nint x;\n```", { ...s, extract: "fenced" }), undefined);
    assert.equal(extractProgram("```python\nprint(1)\n```", { ...s, extract: "whole" })?.from, "whole");
  });
  test("a block in a language the grader does not accept is not run", () => {
    assert.equal(extractProgram("```js\nconsole.log(1)\n```", { ...spec(), extract: "fenced" }), undefined);
  });
  test("an unclosed fence runs to the end", () => {
    assert.equal(extractProgram("```python\nprint(1)\nprint(2)", s)?.code, "print(1)\nprint(2)");
  });
});

describe("readTests: dataset rows", () => {
  const s = spec();
  test("APPS: input_output as JSON text, stdin/stdout", () => {
    const row = { problem_id: 0, input_output: JSON.stringify({ inputs: ["1 2\n", "3 4\n"], outputs: ["3\n", "7\n"] }) };
    assert.deepEqual(readTests(row, s, py("")), [
      { kind: "stdin", stdin: "1 2\n", expected: "3\n" },
      { kind: "stdin", stdin: "3 4\n", expected: "7\n" },
    ]);
  });
  test("TACO: call-based with fn_name and a LeetCode-style Solution class", () => {
    const row = { input_output: { fn_name: "twoSum", inputs: [[[2, 7, 11, 15], 9]], outputs: [[[0, 1]]] } };
    const program = "class Solution:\n    def twoSum(self, nums, target):\n        return [0, 1]\n";
    assert.deepEqual(readTests(row, s, py(program)), [
      { kind: "call", name: "Solution.twoSum", args: [[2, 7, 11, 15], 9], expected: [[0, 1]], alsoFirst: true },
    ]);
    assert.equal((readTests(row, s, py("def twoSum(a, t):\n  return [0, 1]"))[0] as { name: string }).name, "twoSum");
  });
  test("a bare list of LiveCodeBench-style cases under testsKey (or its JSON text)", () => {
    const cases = [{ input: "5\n", output: "25\n", testtype: "stdin" }];
    for (const value of [cases, JSON.stringify(cases)]) {
      const row = testsRow({ reward_model: { ground_truth: value } }, "reward_model.ground_truth");
      assert.deepEqual(readTests(row, s, py("")), [{ kind: "stdin", stdin: "5\n", expected: "25\n" }]);
    }
  });
  test("verl's ground truth under testsKey (a JSON text)", () => {
    const metadata = { reward_model: { ground_truth: JSON.stringify({ inputs: ["5\n"], outputs: ["25\n"] }) } };
    const row = testsRow(metadata, "reward_model.ground_truth");
    assert.deepEqual(readTests(row, s, py("")), [{ kind: "stdin", stdin: "5\n", expected: "25\n" }]);
  });
  test("CodeContests: public and private tests", () => {
    const row = {
      name: "1548_A. Web of Lies",
      public_tests: { input: ["4 3\n"], output: ["2\n"] },
      private_tests: { input: ["1 0\n", "2 0\n"], output: ["1\n", "2\n"] },
      generated_tests: { input: ["9\n"], output: ["9\n"] },
    };
    const tests = readTests(row, s, py(""));
    assert.equal(tests.length, 3);
    assert.deepEqual(tests[2], { kind: "stdin", stdin: "2 0\n", expected: "2\n" });
  });
  test("LiveCodeBench: stdin and functional test cases, the function named in its metadata text", () => {
    const row = {
      question_id: "3331",
      public_test_cases: JSON.stringify([
        { input: "[1, 2, 3]\n2", output: "5", testtype: "functional" },
        { input: "[4]\n1", output: "4", testtype: "functional" },
      ]),
      metadata: JSON.stringify({ func_name: "maxSum" }),
    };
    const program = "class Solution:\n    def maxSum(self, nums, k): ...";
    assert.deepEqual(readTests(row, s, py(program)), [
      { kind: "call", name: "Solution.maxSum", args: [[1, 2, 3], 2], expected: 5 },
      { kind: "call", name: "Solution.maxSum", args: [[4], 1], expected: 4 },
    ]);
    const stdin = { public_test_cases: [{ input: "3\n", output: "6\n", testtype: "stdin" }] };
    assert.deepEqual(readTests(stdin, s, py("")), [{ kind: "stdin", stdin: "3\n", expected: "6\n" }]);
  });
  test("HumanEval: check(candidate) called on the entry point", () => {
    const row = {
      task_id: "HumanEval/0",
      entry_point: "has_close_elements",
      test: "\n\nMETADATA = {}\n\n\ndef check(candidate):\n    assert candidate([1.0, 2.0], 0.5) == False\n",
    };
    const [t] = readTests(row, s, py(""));
    assert.equal(t.kind, "assert");
    assert.match((t as { code: string }).code, /def check\(candidate\):[\s\S]*\ncheck\(has_close_elements\)\n$/);
  });
  test("MBPP: one test per assert line; imports and setup run before the program", () => {
    const row = {
      task_id: 2,
      test_setup_code: "",
      test_imports: ["import math"],
      test_list: ["assert similar_elements((3, 4), (5, 4)) == (4,)", "assert similar_elements((1,), (1,)) == (1,)"],
    };
    assert.deepEqual(readTests(row, s, py("")), [
      { kind: "assert", code: "assert similar_elements((3, 4), (5, 4)) == (4,)\n", before: "import math\n" },
      { kind: "assert", code: "assert similar_elements((1,), (1,)) == (1,)\n", before: "import math\n" },
    ]);
  });
  test("malformed or oversized tests are refused with the reason", () => {
    const cases: [unknown, RegExp][] = [
      [{}, /carries no tests/],
      [{ input_output: "{not json" }, /not JSON/],
      [{ input_output: { inputs: ["1"], outputs: [] } }, /1 inputs but 0 outputs/],
      [{ input_output: { inputs: [1], outputs: ["1"] } }, /inputs\[0\] must be a string/],
      [{ input_output: { fn_name: "f", inputs: [1], outputs: [1] } }, /list of the call's arguments/],
      [{ input_output: { fn_name: "os.system('x')", inputs: [[1]], outputs: [1] } }, /function name/],
      [{ inputs: Array(33).fill("1"), outputs: Array(33).fill("1") }, /at most 32/],
      [
        {
          public_tests: { input: Array(20).fill("1"), output: Array(20).fill("1") },
          private_tests: { input: Array(20).fill("1"), output: Array(20).fill("1") },
        },
        /40 tests; .* at most 32/,
      ],
      [{ public_test_cases: [{ input: "1", output: "1", testtype: "shell" }] }, /testtype/],
      [{ public_test_cases: [{ input: "1", output: "1", testtype: "functional" }] }, /function name/],
      [{ private_test_cases: "eJzLSM3JyVcozy/KSQEAGgQEXQ==" }, /not JSON.*LiveCodeBench/],
      [{ test_list: "assert f() == 1" }, /test_list must be a list/],
      [{ test_list: [] }, /empty/],
      [{ inputs: ["x".repeat((1 << 20) + 1)], outputs: ["1"] }, /longer than/],
    ];
    for (const [row, message] of cases) {
      assert.throws(() => readTests(row as Record<string, unknown>, s, py("")), message, JSON.stringify(row).slice(0, 80));
    }
  });
  test("a grader pinned to one test kind refuses another", () => {
    assert.throws(() => readTests({ test_list: ["assert 1"] }, spec({ tests: "stdin" }), py("")), /runs stdin tests; .* assert tests/);
  });
});

describe("compare", () => {
  const t = (compare: string) => spec({ compare, absTol: 1e-3, relTol: 0 });
  test("exact ignores trailing newlines only", () => {
    assert.ok(sameOutput("3\n", "3", t("exact")));
    assert.ok(!sameOutput("3 \n", "3", t("exact")));
  });
  test("whitespace compares tokens", () => {
    assert.ok(sameOutput("1  2\n3\n\n", "1 2 3", t("whitespace")));
    assert.ok(!sameOutput("1 2", "1 2 3", t("whitespace")));
    assert.ok(!sameOutput("1.0", "1", t("whitespace")));
  });
  test("float compares numeric tokens within tolerance, other tokens exactly", () => {
    assert.ok(sameOutput("YES 0.3334", "YES 0.3333", t("float")));
    assert.ok(!sameOutput("YES 0.335", "YES 0.3333", t("float")));
    assert.ok(!sameOutput("NO 0.3333", "YES 0.3333", t("float")));
    assert.ok(!sameOutput("nan", "nan1", t("float")));
  });
  test("values: deep equality, numbers by tolerance in float mode only", () => {
    assert.ok(sameValue({ a: [1, 2] }, { a: [1, 2] }, t("whitespace")));
    assert.ok(!sameValue({ a: [1, 2], b: 1 }, { a: [1, 2] }, t("whitespace")));
    assert.ok(!sameValue([1, 2], { 0: 1, 1: 2 }, t("whitespace")));
    assert.ok(!sameValue(0.1 + 0.2, 0.3, t("whitespace")));
    assert.ok(sameValue(0.1 + 0.2, 0.3, t("float")));
    assert.ok(!sameValue("1", 1, t("float")));
  });
  test("integers are exact: past 2^53 (bigint) and in float mode's integer tokens", () => {
    assert.ok(!sameValue(12345678901234567891n, 12345678901234567890n, t("exact")));
    assert.ok(sameValue(12345678901234567891n, 12345678901234567891n, t("float")));
    assert.ok(!sameValue([2n ** 62n + 1000n], [2n ** 62n], t("float")));
    assert.ok(sameValue(5, 5n, t("exact")));
    assert.ok(!sameOutput("1000000999", "1000000000", { ...t("float"), relTol: 1e-6 }));
    assert.ok(!sameOutput("12345678901234567891", "12345678901234567890", t("float")));
    assert.ok(sameOutput("007 -0", "7 0", t("float")));
    // a decimal token on either side: the tolerance applies
    assert.ok(sameOutput("1000000000.0004", "1000000000", t("float")));
  });
  test("NaN and infinities equal nothing a test can expect", () => {
    assert.ok(!sameValue(new NonFiniteFloat("nan"), null, t("float")));
    assert.ok(!sameValue([new NonFiniteFloat("inf")], ["Infinity"], t("exact")));
    assert.ok(!sameValue(Number.NaN, Number.NaN, t("float")));
    assert.equal(JSON.stringify([new NonFiniteFloat("-inf")]), '["-inf"]');
  });
  test("hostile output is compared in linear time and answers right", () => {
    assert.ok(!sameOutput(`${"\n".repeat(32000)}x`, "y", t("exact")));
    assert.ok(sameOutput(`x${"\n".repeat(32000)}`, "x", t("exact")));
    assert.ok(!sameOutput(`${"1".repeat(32000)}x`, "2", t("float")));
    assert.ok(!sameOutput(`${"1".repeat(32000)}.5e`, "2", t("float")));
    const fenced = `\`\`\`${"a".repeat(32000)}\``;
    assert.equal(extractProgram(fenced, { languages: ["python"], extract: "fenced" }), undefined);
    assert.deepEqual(extractProgram("```py3 x\nprint(1)\n```", { languages: ["python"], extract: "fenced" }), {
      language: "python",
      code: "print(1)",
      from: "tagged",
    });
  });
});

describe("gradeThread", () => {
  const apps = { input_output: JSON.stringify({ inputs: ["1 2\n", "3 4\n", "5 6\n"], outputs: ["3\n", "7\n", "11\n"] }) };
  const sum = (r: RunRequest) => {
    const [a, b] = (r.stdin ?? "").split(" ").map(Number);
    return ok({ stdout: `${a + b}\n` });
  };

  test("stdin tests: every run gets the program, its stdin and the spec's limits; the score is the fraction accepted", () => {
    const { seen, runnerFor } = scripted((r) => (r.stdin === "5 6\n" ? ok({ stdout: "12\n" }) : sum(r)));
    const out = gradeThread(
      spec({ limits: { cpuMs: 500 } }),
      thread("```python\nprint(sum(map(int, input().split())))\n```", apps),
      runnerFor,
    );
    assert.ok("score" in out);
    assert.equal(out.score, 2 / 3);
    assert.equal(out.reason, "2/3 tests passed");
    assert.deepEqual(
      seen.map((r) => [r.language, r.program, r.stdin, r.limits.cpuMs]),
      ["1 2\n", "3 4\n", "5 6\n"].map((stdin) => ["python", "print(sum(map(int, input().split())))", stdin, 500]),
    );
    assert.deepEqual(
      out.subscores?.map((s) => (s as { verdict: string }).verdict),
      ["accepted", "accepted", "wrong_answer"],
    );
    const meta = out.metadata as { verdicts: Record<string, number>; results: { stdout?: string }[] };
    assert.deepEqual(meta.verdicts, { accepted: 2, wrong_answer: 1 });
    assert.equal(meta.results[2].stdout, "12\n");
  });

  test("all_or_nothing stops at the first failure; the rest are skipped", () => {
    const { seen, runnerFor } = scripted(() => ok({ stdout: "0\n" }));
    const out = gradeThread(spec({ scoring: "all_or_nothing" }), thread("print(0)", apps), runnerFor);
    assert.ok("score" in out && out.score === 0);
    assert.equal(seen.length, 1);
    assert.deepEqual((out.metadata as { verdicts: object }).verdicts, { wrong_answer: 1, skipped: 2 });
  });

  test("each failed run has its verdict and message", () => {
    const statuses = ["time_limit", "memory_limit", "output_limit", "runtime_error"] as const;
    let i = 0;
    const { runnerFor } = scripted(() => ok({ status: statuses[i++ % 4], message: "ZeroDivisionError: division by zero" }));
    const four = { inputs: ["1", "2", "3", "4"], outputs: ["1", "2", "3", "4"] };
    const out = gradeThread(spec(), thread("x", four), runnerFor);
    assert.ok("score" in out && out.score === 0);
    const results = (out.metadata as { results: { verdict: string; message?: string }[] }).results;
    assert.deepEqual(
      results.map((r) => r.verdict),
      [...statuses],
    );
    assert.equal(results[3].message, "ZeroDivisionError: division by zero");
  });

  test("a syntax error is run once: every test is a syntax error", () => {
    const { seen, runnerFor } = scripted(() => ok({ status: "syntax_error", message: "SyntaxError: invalid syntax (line 1)" }));
    const out = gradeThread(spec(), thread("def (", apps), runnerFor);
    assert.equal(seen.length, 1);
    assert.deepEqual((out as unknown as { metadata: { verdicts: object } }).metadata.verdicts, { syntax_error: 3 });
  });

  test("assert tests: completed is accepted; an AssertionError is a wrong answer; stopping early is not a pass", () => {
    const mbpp = { test_list: ["assert f(1) == 1", "assert f(2) == 4", "assert f(3) == 9"] };
    const answers = [
      ok({ completed: true }),
      ok({ status: "runtime_error", message: "AssertionError" }),
      ok({ completed: false, exitCode: 0 }),
    ];
    let i = 0;
    const { seen, runnerFor } = scripted(() => answers[i++]);
    const out = gradeThread(spec(), thread("```py\ndef f(x): return x\n```", mbpp), runnerFor);
    assert.equal(seen[1].after, "assert f(2) == 4\n");
    assert.ok("score" in out);
    assert.equal(out.score, 1 / 3);
    assert.deepEqual(
      (out.metadata as { results: { verdict: string }[] }).results.map((r) => r.verdict),
      ["accepted", "wrong_answer", "wrong_answer"],
    );
  });

  test("call tests: the returned value against the expected one (APPS's [v] accepts v); opaque values never pass", () => {
    const row = { input_output: { fn_name: "sq", inputs: [[2], [3], [4]], outputs: [[4], [9], [16]] } };
    const answers = [ok({ returned: 4 }), ok({ returned: [9] }), ok({ returnedOpaque: true })];
    let i = 0;
    const { seen, runnerFor } = scripted(() => answers[i++]);
    const out = gradeThread(spec(), thread("def sq(x): return x*x", row), runnerFor);
    assert.deepEqual(seen[0].call, { name: "sq", args: [2] });
    assert.ok("score" in out && out.score === 2 / 3);
  });

  test("no fenced block under extract fenced scores 0 without running anything", () => {
    const { seen, runnerFor } = scripted(() => ok());
    const out = gradeThread(spec({ extract: "fenced" }), thread("I think the answer is 3.", apps), runnerFor);
    assert.ok("score" in out && out.score === 0);
    assert.equal(seen.length, 0);
  });

  test("malformed tests are the item's INVALID_METADATA error; a thread not ending with the assistant is INVALID_THREAD", () => {
    const { runnerFor } = scripted(() => ok());
    assert.deepEqual(gradeThread(spec(), thread("print(1)", { inputs: "1", outputs: ["1"] }), runnerFor), {
      error: { code: "INVALID_METADATA", message: "tests: metadata.inputs must be a list" },
    });
    const out = gradeThread(spec(), { turns: [{ role: "user", content: "hi" }], metadata: apps }, runnerFor);
    assert.ok("error" in out && out.error.code === "INVALID_THREAD");
  });

  test("a runner failure abstains RUNNER_UNAVAILABLE instead of scoring the completion 0", () => {
    const { runnerFor } = scripted(() => {
      throw new RunnerFailure("the interpreter could not be reset");
    });
    const out = gradeThread(spec(), thread("print(1)", apps), runnerFor);
    assert.deepEqual(out, {
      abstained: { code: "RUNNER_UNAVAILABLE", reason: "the python runner failed: the interpreter could not be reset" },
    });
  });

  test("with many tests the outcome stays within a result's bound: outputs and messages give way, verdicts stay", () => {
    const many = { inputs: Array(100).fill("1"), outputs: Array(100).fill("2") };
    const { runnerFor } = scripted((r) => (Number(r.stdin) % 2 ? ok({ stdout: "y".repeat(5000) }) : ok()));
    const out = gradeThread(spec({ maxTests: 100, limits: { cpuMs: 1000 } }), thread("x", many), runnerFor);
    assert.ok(JSON.stringify(out).length <= MAX_RESULT, String(JSON.stringify(out).length));
    const meta = (out as unknown as { metadata: { trimmed: boolean; verdicts: object; results: object[] } }).metadata;
    assert.equal(meta.trimmed, true);
    assert.deepEqual(meta.verdicts, { wrong_answer: 100 });
    assert.equal(meta.results.length, 100);
  });

  test("what a program prints and raises is bounded in the outcome", () => {
    const { runnerFor } = scripted(() => ok({ status: "runtime_error", message: "E".repeat(100_000), stdout: "x".repeat(100_000) }));
    const out = gradeThread(spec(), thread("x", apps), runnerFor);
    assert.ok(JSON.stringify(out).length < 5_000);
  });
});

describe("the SandboxFusion answer (server/trainers/sandbox-fusion.ts)", () => {
  const grader = spec({ languages: ["python", "javascript"], limits: { cpuMs: 3000, memoryMb: 512 } });
  const req = { code: "print(1)", language: "python", stdin: "2 3", run_timeout: 10, memory_limit_MB: 1024, files: {}, fetch_files: [] };
  const run = (over: Partial<RunResult>) => ({ score: 0, metadata: { run: { ...ok(over) } } });

  test("a run's limits are the smaller of the grader's and the request's; the program runs whole, once", () => {
    const r = runSpec(req, grader);
    assert.deepEqual(r.limits, { cpuMs: 3000, memoryMb: 512, outputBytes: 65536 });
    assert.equal(runSpec({ ...req, run_timeout: 1, memory_limit_MB: 64 }, grader).limits.cpuMs, 1000);
    assert.equal(runSpec({ ...req, run_timeout: 1, memory_limit_MB: 64 }, grader).limits.memoryMb, 64);
    assert.deepEqual([r.extract, r.tests, r.maxTests, r.run, r.languages], ["whole", "stdin", 1, true, ["python"]]);
    assert.deepEqual(threadOf(req).metadata, { inputs: ["2 3"], outputs: [""] });
    assert.deepEqual(threadOf({ ...req, stdin: null }).metadata, { inputs: [""], outputs: [""] });
  });

  test("refused: files, fetch_files, a language not run here or not the grader's", () => {
    assert.equal(refusal(req, grader), undefined);
    assert.match(refusal({ ...req, files: { a: "b" } }, grader) ?? "", /files/);
    assert.match(refusal({ ...req, fetch_files: ["x"] }, grader) ?? "", /fetch_files/);
    assert.match(refusal({ ...req, language: "cpp" }, grader) ?? "", /not run here/);
    assert.match(refusal({ ...req, language: "nodejs" }, spec()) ?? "", /runs python, not javascript/);
  });

  test("statuses as SandboxFusion words them; a deadline is a 504 (verl retries only those), a runner failure a SandboxError", () => {
    const of = (o: Parameters<typeof responseOf>[0]) => {
      const { body, outcome } = responseOf(o);
      return [outcome, body.status, body.run_result?.status, body.run_result?.return_code];
    };
    assert.deepEqual(of(run({ stdout: "5\n" })), ["success", "Success", "Finished", 0]);
    assert.deepEqual(of(run({ status: "runtime_error", exitCode: 1, message: "ValueError: x" })), ["failed", "Failed", "Finished", 1]);
    assert.deepEqual(of(run({ status: "time_limit" })), ["failed", "Failed", "TimeLimitExceeded", null]);
    assert.deepEqual(of(run({ status: "memory_limit" })), ["failed", "Failed", "Finished", -9]);
    assert.deepEqual(of({ abstained: { code: "DEADLINE_EXCEEDED", reason: "late" } }), ["busy", "SandboxError", undefined, undefined]);
    assert.deepEqual(of({ abstained: { code: "RUNNER_UNAVAILABLE", reason: "x" } }), [
      "sandbox_error",
      "SandboxError",
      undefined,
      undefined,
    ]);
    assert.deepEqual(of({ error: { code: "SANDBOX_CRASHED", message: "x" } }), ["sandbox_error", "SandboxError", undefined, undefined]);
    assert.deepEqual(of({ score: 1, metadata: { run: "forged" } }), ["sandbox_error", "SandboxError", undefined, undefined]);
    assert.equal(responseOf(run({ status: "syntax_error", message: "SyntaxError: bad" })).body.run_result?.stderr, "SyntaxError: bad\n");
  });
});
