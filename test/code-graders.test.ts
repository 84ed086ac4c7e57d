// Code-execution graders end to end, on a real server on a real port: created over HTTP and the
// SDK, shown and listed; the SandboxFusion-compatible route driven by requests built exactly as
// verl builds them, its refusals loud in /metrics; programs in the three test formats, Python and
// JavaScript, graded by the sandbox's runners with their verdicts; the runners' tamper cases
// (test/support/code-tamper.ts) and our own never pass; one project's hostile programs do not
// stop another's grading.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Gradebox } from "../sdk/index.ts";
import {
  JS_TAMPER,
  JS_TAMPER_AFTER,
  PYTHON_ESCAPES,
  PYTHON_TAMPER,
  TAMPER_AFTER,
  TAMPER_CALL,
  type TamperCase,
} from "./support/code-tamper.ts";
import { call, spawnServer, startServer, type TestServer, thread } from "./support/helpers.ts";
import { type Attempt, verlCallSandboxApi } from "./support/trainers.ts";

let s: TestServer;
let admin: string;
/** set when the worker runs code graders' programs; else why the runner cases skip */
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const metrics = async () =>
  (await s.app.inject({ method: "GET", url: "/metrics", headers: { authorization: `Bearer ${s.metricsToken}` } })).body;
const counter = (text: string, project: string, outcome: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`gradebox_sandbox_fusion_calls_total{project="${project}",outcome="${outcome}"}`));
  return line ? Number(line.split(" ").at(-1)) : 0;
};

async function create(project: string, body: object) {
  const res = await call(s.app, "POST", `/v1/projects/${project}/graders/code`, body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function token(project: string, grader: string) {
  const res = await fetch(`${s.url}/v1/projects/${project}/graders/${grader}/tokens`, {
    method: "POST",
    headers: { ...bearer(admin), "content-type": "application/json" },
    body: "{}",
  });
  const answer = await res.json();
  assert.equal(res.status, 201, JSON.stringify(answer));
  return answer as { token: string; urls: { sandboxFusion: string } };
}

async function gradeBatch(project: string, grader: string, threads: object[]) {
  const res = await call(s.app, "POST", `/v1/projects/${project}/graders/${grader}/grade-batch`, { threads });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.results as Array<{
    outcome: string;
    score?: number;
    error?: { code: string; message: string };
    metadata?: { results: Array<{ verdict: string; message?: string }>; verdicts: Record<string, number> };
  }>;
}
const verdicts = (r: Awaited<ReturnType<typeof gradeBatch>>[number]) => r.metadata?.results.map((v) => v.verdict);

before(async () => {
  s = await startServer({ listen: true });
  admin = await s.keyFor("code");
  await s.keyFor("other");
  await create("code", { key: "py" });
  await create("code", { key: "js", languages: ["javascript"] });
  await create("code", { key: "both", languages: ["python", "javascript"], scoring: "all_or_nothing", limits: { cpuMs: 500 } });
  await create("other", { key: "py" });
});
after(() => s?.close());

describe("creating and showing code graders", () => {
  test("{key} alone is a whole definition: every default is filled in and shown by get and list", async () => {
    const got = await call(s.app, "GET", "/v1/projects/code/graders/py");
    assert.equal(got.status, 200);
    assert.equal(got.body.kind, "code");
    assert.deepEqual(got.body.code, {
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
    assert.equal(got.body.source, undefined);
    const listed = await call(s.app, "GET", "/v1/projects/code/graders");
    const kinds = Object.fromEntries(listed.body.data.map((g: { key: string; kind: string }) => [g.key, g.kind]));
    assert.deepEqual(kinds, { both: "code", js: "code", py: "code" });
    assert.ok(
      listed.body.data.every((g: object) => !("code" in g)),
      "a list shows no definition",
    );
  });

  test("a definition past the service's bounds, or with unknown fields, is refused with the field named", async () => {
    for (const [body, message] of [
      [{ key: "a", limits: { cpuMs: 60_000 } }, /limits\.cpuMs.*at most 10000/],
      [{ key: "a", limits: { memoryMb: 4096 } }, /memoryMb/],
      [{ key: "a", languages: ["ruby"] }, /python, javascript/],
      [{ key: "a", maxTests: 100, limits: { cpuMs: 10_000 } }, /maxTests × limits\.cpuMs/],
      [{ key: "a", sandbox: "off" }, /sandbox/],
    ] as const) {
      const res = await call(s.app, "POST", "/v1/projects/code/graders/code", body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.code, "INVALID_REQUEST");
      assert.match(res.body.detail, message);
    }
    const taken = await call(s.app, "POST", "/v1/projects/code/graders/code", { key: "py" });
    assert.equal(taken.status, 409);
    assert.equal(taken.body.code, "GRADER_EXISTS");
  });

  test("the SDK creates one and reads its definition back", async () => {
    const client = new Gradebox({ baseURL: s.url, apiKey: admin, project: "code" });
    const g = await client.graders.create.code({ key: "sdk-made", compare: "float", absTol: 0.01, limits: { cpuMs: 1000 } });
    assert.equal(g.kind, "code");
    assert.equal(g.code?.compare, "float");
    assert.equal(g.code?.limits.cpuMs, 1000);
    assert.equal(g.code?.limits.memoryMb, 256);
    assert.equal((await client.graders.get({ graderKey: "sdk-made" })).code?.absTol, 0.01);
    await client.graders.delete({ graderKey: "sdk-made" });
  });
});

describe("the SandboxFusion-compatible route, as verl calls it", () => {
  test("a token's URL for verl ends in /run_code", async () => {
    const t = await token("code", "py");
    assert.equal(t.urls.sandboxFusion, `${s.url}/sf/${t.token}/run_code`);
  });

  test("refusals are answered once (no retry but on 504) and counted in /metrics", async () => {
    const { token: py } = await token("code", "py");
    const before = await metrics();
    const attempts: Attempt[] = [];
    const cases: [string, Parameters<typeof verlCallSandboxApi>[1], number][] = [
      // a revoked or mistyped token: verl would score every test 0 without a word
      [`${s.url}/sf/gbr-${"0".repeat(40)}/run_code`, { code: "print(1)", stdin: "" }, 401],
      [`${s.url}/sf/${py}/run_code`, { code: "int main() {}", stdin: "", language: "cpp" }, 400],
      [`${s.url}/sf/${py}/run_code`, { code: "console.log(1)", stdin: "", language: "nodejs" }, 400],
    ];
    for (const [url, req, status] of cases) {
      const [answer, error] = await verlCallSandboxApi(url, req, { attempts, delayMs: 1 });
      assert.equal(answer, null);
      assert.match(String(error), new RegExp(`API Request Error: ${status}`));
    }
    assert.deepEqual(
      attempts.map((a) => a.status),
      [401, 400, 400],
    );
    const after = await metrics();
    assert.equal(counter(after, "code", "refused") - counter(before, "code", "refused"), 2);
    assert.equal(counter(after, "unknown", "refused") - counter(before, "unknown", "refused"), 1);
  });

  test("each refusal's warn line in the server's log carries its reason", async () => {
    // a server process of its own, its pino log read from its output
    const dir = mkdtempSync(join(tmpdir(), "gradebox-sf-log-"));
    const server = await spawnServer({ GRADEBOX_DB: join(dir, "g.db"), GRADEBOX_WORKERS: "1", GRADEBOX_LOG_LEVEL: "warn" });
    try {
      const key = readFileSync(join(dir, "default.key"), "utf8").trim();
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
      const made = await fetch(`${server.url}/v1/projects/default/graders/code`, { method: "POST", headers, body: '{"key": "py"}' });
      assert.equal(made.status, 201);
      const minted = await fetch(`${server.url}/v1/projects/default/graders/py/tokens`, { method: "POST", headers, body: "{}" });
      const { urls } = (await minted.json()) as { urls: { sandboxFusion: string } };
      // verl's request shape; verl itself keeps only "API Request Error: 400" of the answer
      const verl = { compile_timeout: 10, run_timeout: 10, memory_limit_MB: 1024, stdin: "", files: {}, fetch_files: [] };
      const refusals: [string, object, number][] = [
        [urls.sandboxFusion, { ...verl, code: "int main() {}", language: "cpp" }, 400],
        [`${server.url}/sf/gbr-${"0".repeat(40)}/run_code`, { ...verl, code: "print(1)", language: "python" }, 401],
      ];
      for (const [url, body, status] of refusals) {
        const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
        assert.equal(res.status, status);
        const { detail } = (await res.json()) as { detail: string };
        assert.ok(detail.length > 0);
        let line: { msg: string; reason: string; status: number } | undefined;
        for (let i = 0; i < 50 && !line; i++) {
          line = server
            .logs()
            .split("\n")
            .filter((l) => l.includes("sandbox-fusion run_code refused"))
            .map((l) => JSON.parse(l) as { msg: string; reason: string; status: number })
            .find((l) => l.status === status);
          if (!line) await new Promise((r) => setTimeout(r, 100));
        }
        assert.ok(line, `no warn line for the ${status} in:\n${server.logs().slice(-3000)}`);
        assert.equal(line.reason, detail);
        assert.ok(line.msg.endsWith(detail), line.msg);
      }
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a sandbox that cannot run it answers 504, which verl retries (3 attempts), each counted busy", async () => {
    // a server of its own: its pool is shut down under it
    const down = await startServer({ listen: true });
    try {
      const key = await down.keyFor("code");
      const made = await call(down.app, "POST", "/v1/projects/code/graders/code", { key: "py" });
      assert.equal(made.status, 201);
      const res = await fetch(`${down.url}/v1/projects/code/graders/py/tokens`, {
        method: "POST",
        headers: { ...bearer(key), "content-type": "application/json" },
        body: "{}",
      });
      const { urls } = (await res.json()) as { urls: { sandboxFusion: string } };
      await down.pool.close();
      const attempts: Attempt[] = [];
      const [answer, error] = await verlCallSandboxApi(urls.sandboxFusion, { code: "print(1)", stdin: "" }, { attempts, delayMs: 1 });
      assert.equal(answer, null);
      assert.match(String(error), /Gateway Timeout \(504\) on attempt 3\/3/);
      assert.deepEqual(
        attempts.map((a) => a.status),
        [504, 504, 504],
      );
      const text = (await down.app.inject({ method: "GET", url: "/metrics", headers: { authorization: `Bearer ${down.metricsToken}` } }))
        .body;
      assert.equal(counter(text, "code", "busy"), 3);
    } finally {
      await down.close();
    }
  });

  test("a token of another kind of grader is refused with what to do", async () => {
    const fn = await call(s.app, "POST", "/v1/projects/code/graders", {
      key: "fn",
      source: "export default async function grade(t) { return 1 }",
    });
    assert.equal(fn.status, 201, JSON.stringify(fn.body));
    const { token: t } = await token("code", "fn");
    const res = await fetch(`${s.url}/sf/${t}/run_code`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ code: "print(1)", language: "python", stdin: "" }),
    });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { detail: string }).detail, /is a function grader: .* code grader/);
  });

  test("files are refused (they would be silently ignored otherwise)", async () => {
    const { token: t } = await token("code", "py");
    const res = await fetch(`${s.url}/sf/${t}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ code: "print(1)", language: "python", stdin: "", files: { "a.txt": "aGk=" } }),
    });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { detail: string }).detail, /files are not supported/);
  });

  test("runs verl's request and answers SandboxFusion's shape", async () => {
    const { urls } = await token("code", "py");
    const [answer, error] = await verlCallSandboxApi(urls.sandboxFusion, {
      code: "a, b = map(int, input().split())\nprint(a + b)",
      stdin: "2 3",
    });
    assert.equal(error, null);
    const a = answer as { status: string; message: string; compile_result: null; run_result: Record<string, unknown> };
    assert.equal(a.status, "Success");
    assert.equal(a.compile_result, null);
    assert.equal(a.run_result.status, "Finished");
    assert.equal(a.run_result.return_code, 0);
    assert.equal(a.run_result.stdout, "5\n");
    assert.equal(typeof a.run_result.execution_time, "number");
    for (const [code, status, runStatus] of [
      ["raise ValueError('x')", "Failed", "Finished"],
      ["while True: pass", "Failed", "TimeLimitExceeded"],
    ] as const) {
      const [r] = await verlCallSandboxApi(urls.sandboxFusion, { code, stdin: null, timeout: 1 });
      const rr = r as { status: string; run_result: { status: string; return_code: number | null; stderr: string } };
      assert.equal(rr.status, status, code);
      assert.equal(rr.run_result.status, runStatus, code);
    }
  });

  test("a TypeScript program esbuild would spend seconds and gigabytes on fails as its syntax error, its worker kept", async () => {
    await create("code", { key: "ts-sf", languages: ["typescript"], limits: { cpuMs: 2000 } });
    const { urls } = await token("code", "ts-sf");
    const restarts = () =>
      metrics().then((text) =>
        text
          .split("\n")
          .filter((l) => l.startsWith("gradebox_worker_restarts_total"))
          .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0),
      );
    const before = await restarts();
    // the security report's program: each call held a worker 10 s, which was then replaced, and answered SandboxError
    const code = `const f = ${"-".repeat(30_000)} 1;\nconsole.log(1)\n`;
    const [answer, error] = await verlCallSandboxApi(urls.sandboxFusion, { code, stdin: "", language: "typescript" });
    assert.equal(error, null);
    const a = answer as { status: string; run_result: { status: string; return_code: number; stderr: string } };
    assert.deepEqual([a.status, a.run_result.status, a.run_result.return_code], ["Failed", "Finished", 1], JSON.stringify(a));
    assert.match(a.run_result.stderr, /^SyntaxError: Invalid assignment target \(program line 1, column \d+\)\n$/);
    assert.equal(await restarts(), before);
  });
});

// ---- the runners' cases: a small problem set in the three test formats, Python and JavaScript ----

const SUM_ROWS = { input_output: JSON.stringify({ inputs: ["1 2\n", "3 4\n", "10 -3\n"], outputs: ["3\n", "7\n", "7\n"] }) };
const MBPP_ROW = {
  task_id: 11,
  test_setup_code: "",
  test_list: ["assert square(2) == 4", "assert square(-3) == 9", "assert square(0) == 0"],
};
const HUMANEVAL_ROW = {
  task_id: "HumanEval/x",
  entry_point: "add",
  test: "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n",
};
const TACO_ROW = {
  input_output: {
    fn_name: "twoSum",
    inputs: [
      [[2, 7, 11, 15], 9],
      [[3, 2, 4], 6],
    ],
    outputs: [[[0, 1]], [[1, 2]]],
  },
};
const fence = (lang: string, code: string) => `Here is my solution.\n\n\`\`\`${lang}\n${code}\n\`\`\`\n`;

describe("grading programs", () => {
  test("Python stdin/stdout: accepted, wrong answer, syntax error, runtime error, time limit", async () => {
    const results = await gradeBatch("code", "py", [
      thread(fence("python", "a, b = map(int, input().split())\nprint(a + b)"), SUM_ROWS),
      thread(fence("python", "a, b = map(int, input().split())\nprint(a - b if a > 5 else a + b)"), SUM_ROWS),
      thread(fence("python", "def (:"), SUM_ROWS),
      thread(fence("python", "print(1 // 0)"), SUM_ROWS),
      thread(fence("python", "while True:\n    pass"), SUM_ROWS),
    ]);
    assert.deepEqual(
      results.map((r) => r.score),
      [1, 2 / 3, 0, 0, 0],
    );
    assert.deepEqual(verdicts(results[1]), ["accepted", "accepted", "wrong_answer"]);
    assert.deepEqual(verdicts(results[2]), ["syntax_error", "syntax_error", "syntax_error"]);
    assert.equal(verdicts(results[3])?.[0], "runtime_error");
    assert.match(results[3].metadata?.results[0].message ?? "", /ZeroDivisionError/);
    assert.equal(verdicts(results[4])?.[0], "time_limit");
  });

  test("Python assert-style (MBPP, HumanEval) and function-call (TACO, LeetCode-style Solution)", async () => {
    const results = await gradeBatch("code", "py", [
      thread(fence("py", "def square(x):\n    return x * x"), MBPP_ROW),
      thread(fence("py", "def square(x):\n    return abs(x) * 2"), MBPP_ROW),
      thread(fence("python3", "def add(a, b):\n    return a + b"), HUMANEVAL_ROW),
      thread(
        fence(
          "python",
          "class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n        for i, n in enumerate(nums):\n            if target - n in seen:\n                return [seen[target - n], i]\n            seen[n] = i",
        ),
        TACO_ROW,
      ),
    ]);
    assert.deepEqual(
      results.map((r) => r.score),
      [1, 2 / 3, 1, 1],
    );
    assert.deepEqual(verdicts(results[1]), ["accepted", "wrong_answer", "accepted"]);
  });

  test("JavaScript in the three formats", async () => {
    const results = await gradeBatch("code", "js", [
      thread(
        fence("js", 'const [a, b] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);\nconsole.log(a + b);'),
        SUM_ROWS,
      ),
      thread(fence("javascript", "function square(x) { return x * x; }"), {
        test_list: ["if (square(3) !== 9) throw new Error('AssertionError')", "if (square(-2) !== 4) throw new Error('AssertionError')"],
      }),
      thread(fence("node", "function twoSum(nums, target) { return [0, 1]; }"), TACO_ROW),
    ]);
    assert.deepEqual(
      results.map((r) => r.score),
      [1, 1, 0.5],
    );
  });

  test("programs that tamper with their harness do not pass", async () => {
    const eqAlways = "class Anything:\n    def __eq__(self, other):\n        return True\n    def __hash__(self):\n        return 0\n";
    const results = await gradeBatch("code", "both", [
      // exit with a success code before the tests run
      thread(fence("python", "import sys\nsys.exit(0)"), MBPP_ROW),
      thread(fence("python", "import os\nos._exit(0)"), MBPP_ROW),
      thread(fence("js", "process.exit(0);"), { test_list: ["if (square(3) !== 9) throw new Error('AssertionError')"] }),
      // a returned value that equals anything: compared outside the interpreter, it is not plain data
      thread(fence("python", `${eqAlways}class Solution:\n    def twoSum(self, nums, target):\n        return Anything()`), TACO_ROW),
      // the comparison and the printer patched: the output is read below print, the comparison is not the program's
      thread(
        fence(
          "python",
          "import builtins\n_p = builtins.print\nbuiltins.print = lambda *a, **k: _p('3')\nbuiltins.AssertionError = Exception\nprint(0)",
        ),
        SUM_ROWS,
      ),
      // exit before the call, with a success code
      thread(fence("python", "import sys\ndef twoSum(nums, target):\n    sys.exit(0)"), TACO_ROW),
    ]);
    for (const [i, r] of results.entries()) {
      assert.equal(r.outcome, "scored", `case ${i}: ${JSON.stringify(r)}`);
      assert.equal(r.score, 0, `case ${i} passed: ${JSON.stringify(r.metadata?.results)}`);
    }
  });

  test("every tamper case of the runners' tests fails through the grader, in both test kinds it attacks", async () => {
    const call = { input_output: { fn_name: TAMPER_CALL.name, inputs: [TAMPER_CALL.args], outputs: [TAMPER_CALL.expected] } };
    const rowOf = (c: TamperCase, after: string) => (c.test === "call" ? call : { test_list: [after] });
    const cases = [
      ...PYTHON_TAMPER.map((c) => ({ c, t: thread(fence("python", c.program), rowOf(c, c.after ?? TAMPER_AFTER)) })),
      ...JS_TAMPER.map((c) => ({ c, t: thread(fence("js", c.program), rowOf(c, c.after ?? JS_TAMPER_AFTER)) })),
    ];
    const results = await gradeBatch(
      "code",
      "both",
      cases.map((x) => x.t),
    );
    for (const [i, r] of results.entries()) {
      assert.equal(r.outcome, "scored", `${cases[i].c.name}: ${JSON.stringify(r)}`);
      assert.equal(r.score, 0, `${cases[i].c.name} passed: ${JSON.stringify(r.metadata?.results)}`);
    }
    assert.equal(results.length, PYTHON_TAMPER.length + JS_TAMPER.length);
  });

  test("a hostile program in one project does not stop another project's grading", async () => {
    const hostile = Array.from({ length: 4 }, () => thread(fence("python", "while True:\n    pass"), SUM_ROWS));
    const [slow, fast] = await Promise.all([
      gradeBatch("code", "both", hostile),
      gradeBatch("other", "py", [thread(fence("python", "a, b = map(int, input().split())\nprint(a + b)"), SUM_ROWS)]),
    ]);
    assert.ok(slow.every((r) => r.score === 0 && verdicts(r)?.[0] === "time_limit"));
    assert.equal(fast[0].score, 1);
  });
  test("completions whose programs take their worker down (a sort the time limit cannot interrupt) fail alone: the code grader is not quarantined", async () => {
    await create("code", { key: "js-sort", languages: ["javascript"], maxTests: 1, limits: { cpuMs: 10 } });
    const sort = fence("js", "const a = []; a[2 ** 31] = 1; a[0] = 2; a.sort();");
    for (let k = 0; k < 4; k++) {
      const res = await call(s.app, "POST", "/v1/projects/code/graders/js-sort/grade-batch", {
        threads: [thread(sort, { inputs: [""], outputs: ["x"] })],
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.notEqual(res.body.results[0].score, 1);
    }
    const honest = await gradeBatch("code", "js-sort", [thread(fence("js", "console.log(1)"), { inputs: [""], outputs: ["1"] })]);
    assert.equal(honest[0].score, 1);
  });
  test("a program of one project that tampers with its runner (streams closed, JavaScript sought, ctypes) changes nothing in another project's runs", async () => {
    const tamper = [
      "import os\nos.close(0)\nos.close(1)",
      "import os\nfd = os.open('/dev/null', os.O_WRONLY)\nos.dup2(fd, 1)",
      ...PYTHON_ESCAPES.map((e) => e.program),
    ];
    // several requests at once, to reach each worker
    const attacks = await Promise.all(
      [0, 1].map(() =>
        gradeBatch(
          "code",
          "py",
          tamper.map((p) => thread(fence("python", p), SUM_ROWS)),
        ),
      ),
    );
    for (const results of attacks) for (const r of results) assert.equal(r.score, 0);
    const victim = await gradeBatch("other", "py", [
      thread(fence("python", "a, b = map(int, input().split())\nprint(a + b)"), SUM_ROWS),
      // a wrong program stays wrong
      thread(fence("python", "def f(x):\n    return x * 2"), { test_list: ["assert f(2) == 5", "assert f(3) == 7"] }),
    ]);
    assert.deepEqual(
      victim.map((r) => r.score),
      [1, 0],
    );
  });
});
