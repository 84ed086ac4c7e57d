// A code grader's runners serve one project each (sandbox/worker/code-slice.ts): a run starts from
// a clean interpreter, but what a program leaves in its runner's isolate outside the interpreter
// (Pyodide's stream table lives in JavaScript) must reach no other project's runs. One worker, so
// both projects' runs land on it.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";

let s: TestServer;
const SUM = { inputs: ["2 3\n"], outputs: ["5"] };
const fence = (code: string) => `\`\`\`python\n${code}\n\`\`\``;

before(async () => {
  s = await startServer({ env: { GRADEBOX_WORKERS: "1" } });
  for (const project of ["a", "b"]) {
    await s.keyFor(project);
    const res = await call(s.app, "POST", `/v1/projects/${project}/graders/code`, { key: "py" });
    assert.equal(res.status, 201, JSON.stringify(res.body));
  }
});
after(() => s?.close());

async function grade(project: string, program: string) {
  const res = await call(s.app, "POST", `/v1/projects/${project}/graders/py/grade-batch`, { threads: [thread(fence(program), SUM)] });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.results[0] as { outcome: string; score?: number; metadata?: { results: Array<{ verdict: string; message?: string }> } };
}

test("a program that breaks its runner's streams (os.close(0), os.close(1)) does not reach another project's runs on the same worker", async () => {
  const honest = "a, b = map(int, input().split())\nprint(a + b)";
  assert.equal((await grade("b", honest)).score, 1, "project b's runner is up and right");
  for (const breaker of ["import os\nos.close(0)", "import os\nos.close(1)", "import os\nos.dup2(2, 0)"]) {
    const broken = await grade("a", breaker);
    assert.equal(broken.outcome, "scored");
    assert.equal(broken.score, 0, "the breaker does not solve the problem");
    const after = await grade("b", honest);
    assert.equal(after.score, 1, `after project a ran ${JSON.stringify(breaker)}: ${JSON.stringify(after.metadata?.results)}`);
  }
});
