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
  await create({ key: "tight", limits: { cpuMs: 300, outputBytes: 1024 } });
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
