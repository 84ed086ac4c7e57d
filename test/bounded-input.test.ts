// Input that is small on the wire but costly to process: deep nesting in a grader's source or in
// a thread's metadata, batches whose every item is invalid, weights that overflow, and /metrics,
// which names every project and grader. Each gets a bounded, clear 4xx, never a 500.

import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { analyze } from "../sandbox/validate/analyze.ts";
import { bootstrapMetricsToken } from "../server/bootstrap.ts";
import { loadConfig } from "../server/config.ts";
import { call, startServer, type TestServer, testPostgres, thread } from "./support/helpers.ts";

let s: TestServer;
let key: string;
before(async () => {
  s = await startServer({ env: { GRADEBOX_TIMEOUT_MS: "1000" } });
  key = await s.keyFor("b");
  for (const key of ["g", "h"]) {
    const res = await call(s.app, "POST", "/v1/projects/b/graders", { key, source: "async (t) => 1" });
    assert.equal(res.status, 201, JSON.stringify(res.body));
  }
});
after(() => s.close());

const P = "/v1/projects/b/graders";

/** `levels` containers, alternately objects and arrays, the outermost an object, as JSON text. */
const nestedJson = (levels: number) => {
  let open = "";
  let close = "";
  for (let i = 0; i < levels - 1; i++) {
    open += i % 2 === 0 ? '{"a":' : "[";
    close = (i % 2 === 0 ? "}" : "]") + close;
  }
  return `${open}${levels % 2 === 1 ? "{}" : "[]"}${close}`;
};

/** The import is dynamic so that the rest of this file runs while the module is missing. */
const sourceBounds = () => import("../sandbox/validate/source-bounds.ts");

describe("nesting in a grader's source", () => {
  const shapes: Array<[string, (n: number) => string]> = [
    ["parentheses", (n) => `async function grade(t) { return ${"(".repeat(n)}1${")".repeat(n)} }`],
    ["brackets", (n) => `async function grade(t) { return ${"[".repeat(n)}1${"]".repeat(n)} }`],
    ["braces", (n) => `async function grade(t) { ${"{".repeat(n)}${"}".repeat(n)} return 1 }`],
  ];
  for (const [name, make] of shapes) {
    test(`30 000 nested ${name}: 422 structure at once, at the position the limit was crossed`, async () => {
      const source = make(30_000);
      const started = performance.now();
      const res = await call(s.app, "POST", P, { key: "deep", source });
      const ms = performance.now() - started;
      assert.equal(res.status, 422, JSON.stringify(res.body).slice(0, 500));
      assert.equal(res.body.code, "VALIDATION_FAILED");
      assert.equal(res.body.check, "structure", res.body.message);
      assert.match(res.body.message, /nested \d+ levels deep.*the limit is \d+/);
      const { MAX_NESTING } = await sourceBounds();
      assert.equal(res.body.line, 1);
      assert.equal(res.body.column, source.search(/[([{]{2}/) + MAX_NESTING, "the bracket one past the limit");
      assert.ok(ms < 2000, `answered in ${ms.toFixed(0)} ms`);
      assert.equal(await s.store.get("b", "deep"), undefined);
    });
  }

  test("a grader nested 20 levels deep validates", async () => {
    const source = [
      "async function grade(t) {",
      `  const deep = ${"{ a: [".repeat(10)}1${"] }".repeat(10)};`,
      "  return deep.a[0].a[0] ? 1 : 0",
      "}",
    ].join("\n");
    const res = await call(s.app, "POST", `${P}/validate`, { source });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  test("checkNesting skips strings, comments, template text and regular expressions", async () => {
    const { checkNesting, MAX_NESTING } = await sourceBounds();
    const many = "(".repeat(MAX_NESTING + 10);
    for (const source of [
      `const a = "${many}";`,
      `const a = '${many}';`,
      `// ${many}\nconst a = 1;`,
      `/* ${many} */ const a = 1;`,
      `const a = \`${many}\`;`,
      `const a = /\\(${"\\(".repeat(MAX_NESTING + 10)}/;`,
      `if (x) /[(]\\)[^)]*\\(/.test(y); const b = "${many}";`,
      // a regular expression's unbalanced brackets count until its enclosing bracket closes
      Array(3 * MAX_NESTING)
        .fill("{ if (x) /[(]/.test(y) }")
        .join("\n"),
      `const a = x => x / 2; const b = "${many}";`,
    ]) {
      assert.equal(checkNesting(source), undefined, source.slice(0, 60));
    }
    const ok = `async function grade(t) { return ${"(".repeat(MAX_NESTING - 1)}1${")".repeat(MAX_NESTING - 1)} }`;
    assert.equal(checkNesting(ok), undefined, "exactly the limit");
    const over = `async function grade(t) {\n  return ${"(".repeat(MAX_NESTING)}1${")".repeat(MAX_NESTING)} }`;
    assert.deepEqual(checkNesting(over), {
      check: "structure",
      message: checkNesting(over)?.message,
      line: 2,
      column: 10 + MAX_NESTING - 1,
    });
  });

  test("checkNesting counts template-literal ${ and arrow-function nesting", async () => {
    const { checkNesting, MAX_NESTING } = await sourceBounds();
    const n = MAX_NESTING + 1;
    const template = `const a = ${"`${".repeat(n)}1${"}`".repeat(n)};`;
    assert.equal(checkNesting(template)?.check, "structure");
    // arrow chains have no brackets, and esbuild's time grows with the cube of their depth
    assert.equal(checkNesting(`const f = ${"t=>".repeat(n)}1;`)?.check, "structure");
    assert.equal(checkNesting(`const f = ${"t=>".repeat(MAX_NESTING)}1;`), undefined);
    // arrows that end do not add up
    const flat = Array.from({ length: 3 * MAX_NESTING }, (_, i) => `const f${i} = (x) => x + ${i}`).join("\n");
    assert.equal(checkNesting(flat), undefined);
    const members = Array.from({ length: 3 * MAX_NESTING }, (_, i) => `  m${i}: (x: number) => string`).join("\n");
    assert.equal(checkNesting(`type T = {\n${members}\n}`), undefined);
    assert.equal(
      checkNesting(
        `foo(${Array(3 * MAX_NESTING)
          .fill("x => x")
          .join(", ")});`,
      ),
      undefined,
    );
  });

  test("checkNesting counts brace-less if/for/while bodies, but not else-if chains", async () => {
    const { checkNesting, MAX_NESTING } = await sourceBounds();
    // 13 000 of these held esbuild 14.5 s
    assert.equal(checkNesting(`${"if(t)".repeat(MAX_NESTING + 1)}t;`)?.check, "structure");
    assert.equal(checkNesting(`${"for(;;)".repeat(MAX_NESTING + 1)}t;`)?.check, "structure");
    assert.equal(checkNesting(`${"if(t)".repeat(MAX_NESTING)}t;`), undefined);
    const chains = [
      `if (a) x(); ${"else if (a) x(); ".repeat(3 * MAX_NESTING)}else y();`,
      `if (a) {} ${"else if (b) {} ".repeat(3 * MAX_NESTING)}else {}`,
      "for (const x of y)\n  if (x) total++\n".repeat(3 * MAX_NESTING),
      "if (a) return 1;\nwhile (b) b = next(b)\ndo i++; while (i < 3)\n".repeat(3 * MAX_NESTING),
    ];
    for (const source of chains) assert.equal(checkNesting(source), undefined, source.slice(0, 60));
  });

  test("a string or regular expression that runs past its line is not a way around the bound", async () => {
    const { checkNesting, MAX_NESTING } = await sourceBounds();
    // `{} / "…/"` is a division in JS; a scanner that took `/"…/` for a regular expression
    // would see the rest of the line as a string and miss the nesting after it
    const tricky = `const x = function(){} / "a/"; ${"(".repeat(MAX_NESTING + 5)}1${")".repeat(MAX_NESTING + 5)};`;
    assert.ok(checkNesting(tricky), "refused");
    // an unterminated string with little after it is left to esbuild's syntax check
    assert.equal(checkNesting('async function grade(t) { return "1 }'), undefined);
    // with many brackets after it, the scan cannot vouch for them: refused where it lost track
    const lost = `const a = "oops\n${"f();".repeat(MAX_NESTING + 1)}`;
    assert.deepEqual(checkNesting(lost), {
      check: "syntax",
      message: checkNesting(lost)?.message,
      line: 1,
      column: 11,
    });
    assert.match(checkNesting(lost)?.message ?? "", /unterminated string/);
  });

  test("analyze() turns a stack overflow into a structure failure", () => {
    const source = `async function grade(t) { return ${"(".repeat(50_000)}1${")".repeat(50_000)} }`;
    const result = analyze(source);
    assert.ok("check" in result, "a failure, not an analysis");
    assert.equal(result.check, "structure");
    assert.match(result.message, /nested too deeply to analyse/);
  });
});

describe("nesting in thread metadata", () => {
  const gradeBody = (metadata: string) => `{"thread": {"turns": [{"role": "user", "content": "x"}], "metadata": ${metadata}}}`;
  const batchBody = (metadata: string) =>
    `{"threads": [{"turns": [{"role": "user", "content": "x"}]}, {"turns": [{"role": "user", "content": "x"}], "metadata": ${metadata}}]}`;
  const send = (url: string, payload: string) =>
    s.app.inject({
      method: "POST",
      url,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      payload,
    });

  for (const [route, body, path] of [
    ["grade", gradeBody, /thread\.metadata/],
    ["grade-batch", batchBody, /threads\.1\.metadata/],
  ] as const) {
    test(`${route}: metadata nested 5 000 deep is 400 INVALID_REQUEST naming the thread and the limit`, async () => {
      const res = await send(`${P}/g/${route}`, body(nestedJson(5000)));
      assert.equal(res.statusCode, 400, res.body.slice(0, 500));
      const problem = JSON.parse(res.body);
      assert.equal(problem.code, "INVALID_REQUEST");
      assert.match(problem.detail, path);
      assert.match(problem.detail, /64 levels/);
    });
    test(`${route}: metadata nested 64 deep is graded, 65 is not`, async () => {
      const ok = await send(`${P}/g/${route}`, body(nestedJson(64)));
      assert.equal(ok.statusCode, 200, ok.body.slice(0, 500));
      const over = await send(`${P}/g/${route}`, body(nestedJson(65)));
      assert.equal(over.statusCode, 400, over.body.slice(0, 500));
    });
  }
});

describe("validation errors", () => {
  test("a batch of 1 000 invalid threads: 20 issues and a count of the rest, in a small body", async () => {
    const threads = Array.from({ length: 1000 }, () => ({ turns: [{ role: "", content: "x" }] }));
    const started = performance.now();
    const res = await s.app.inject({
      method: "POST",
      url: `${P}/g/grade-batch`,
      headers: { authorization: `Bearer ${await s.keyFor("b")}` },
      payload: { threads },
    });
    const ms = performance.now() - started;
    assert.equal(res.statusCode, 400);
    assert.ok(res.body.length < 16 * 1024, `body of ${res.body.length} bytes`);
    const problem = JSON.parse(res.body);
    assert.equal(problem.code, "INVALID_REQUEST");
    assert.equal(problem.detail.match(/role must be text/g)?.length, 20, problem.detail);
    assert.match(problem.detail, /^body\.threads\.0\.turns\.0\.role: /);
    assert.match(problem.detail, /; … and more issues \(the first 20 are listed\)$/);
    assert.ok(ms < 2000, `answered in ${ms.toFixed(0)} ms`);
  });

  test("a 10 MB batch whose every turn is invalid is answered quickly and briefly", async () => {
    // a control character is no role: "\u0001" is as long in JSON as the "robot" this test was sized with
    const turns = Array.from({ length: 330 }, () => ({ role: "\u0001", content: "" }));
    const payload = JSON.stringify({ threads: Array.from({ length: 1000 }, () => ({ turns })) });
    assert.ok(payload.length > 9_000_000 && payload.length < 10 * 1024 * 1024, `${payload.length} bytes`);
    const started = performance.now();
    const res = await s.app.inject({
      method: "POST",
      url: `${P}/g/grade-batch`,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      payload,
    });
    const ms = performance.now() - started;
    assert.equal(res.statusCode, 400);
    assert.ok(res.body.length < 16 * 1024, `body of ${res.body.length} bytes`);
    assert.match(JSON.parse(res.body).detail, /; … and more issues \(the first 20 are listed\)$/);
    assert.ok(ms < 3000, `answered in ${ms.toFixed(0)} ms`);
  });
});

describe("combined weights", () => {
  test("weights whose sum overflows to Infinity are refused at creation", async () => {
    const res = await call(s.app, "POST", `${P}/combined`, {
      key: "huge",
      mode: "weighted",
      graders: [
        { graderKey: "g", weight: 1e308 },
        { graderKey: "h", weight: 1e308 },
      ],
    });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.code, "INVALID_REQUEST");
    assert.match(res.body.detail, /weights/);
    assert.match(res.body.detail, /finite|1e308|limit/);
    assert.equal(await s.store.get("b", "huge"), undefined);
  });
  test("in any mode too, and with negative weights", async () => {
    const res = await call(s.app, "POST", `${P}/combined`, {
      key: "huge2",
      mode: "any",
      graders: [
        { graderKey: "g", weight: -1e308 },
        { graderKey: "h", weight: -1e308 },
      ],
    });
    assert.equal(res.status, 400, JSON.stringify(res.body));
  });
  test("ordinary weights are fine", async () => {
    const res = await call(s.app, "POST", `${P}/combined`, {
      key: "fine",
      mode: "weighted",
      graders: [
        { graderKey: "g", weight: 2 },
        { graderKey: "h", weight: 0.5 },
      ],
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const graded = await call(s.app, "POST", `${P}/fine/grade`, { thread: thread("x") });
    assert.equal(graded.body.score, 1);
  });
});

describe("/metrics needs the metrics token", () => {
  const scrape = (authorization?: string) =>
    s.app.inject({ method: "GET", url: "/metrics", headers: authorization ? { authorization } : {} });

  test("without a token: 401 problem+json saying which token and where", async () => {
    const res = await scrape();
    assert.equal(res.statusCode, 401);
    assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
    const problem = JSON.parse(res.body);
    assert.equal(problem.code, "UNAUTHORIZED");
    assert.match(problem.detail, /metrics token/);
    assert.match(problem.detail, /GRADEBOX_METRICS_TOKEN/);
    // where it is: the file next to the database, or (the PostgreSQL run sets one) the variable
    assert.match(problem.detail, testPostgres ? /the value of GRADEBOX_METRICS_TOKEN/ : /metrics\.token/);
    assert.doesNotMatch(res.body, /gradebox_grades_total|project="b"/);
  });
  test("a wrong token, or a project's API key: 401", async () => {
    for (const auth of [
      `Bearer ${s.metricsToken}x`,
      "Bearer nope",
      `Bearer ${await s.keyFor("b")}`,
      s.metricsToken,
      `Basic ${s.metricsToken}`,
    ]) {
      const res = await scrape(auth);
      assert.equal(res.statusCode, 401, auth);
      assert.equal(JSON.parse(res.body).code, "UNAUTHORIZED");
    }
  });
  test("the token: 200 with the series", async () => {
    await call(s.app, "POST", `${P}/g/grade`, { thread: thread("x") });
    const res = await scrape(`Bearer ${s.metricsToken}`);
    assert.equal(res.statusCode, 200);
    assert.match(res.body, /^gradebox_grades_total\{project="b",grader="g",code="ok"\} \d+/m);
  });
  test("the token is made at first start next to the database (mode 0600) and kept", {
    skip: testPostgres && "a SQLite file's neighbour",
  }, () => {
    const path = join(s.dir, "metrics.token");
    assert.equal(readFileSync(path, "utf8").trim(), s.metricsToken);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.match(s.metricsToken, /^gbm_[\w-]{43}$/);
    const again = bootstrapMetricsToken({ dbPath: join(s.dir, "gradebox.db") });
    assert.deepEqual(again, { token: s.metricsToken, source: { path }, created: false });
  });
  test("GRADEBOX_METRICS_TOKEN sets it; a short one is a configuration error", () => {
    const env = { GRADEBOX_DB: join(s.dir, "other", "gradebox.db") };
    const config = loadConfig({ ...env, GRADEBOX_METRICS_TOKEN: "a-token-of-my-own-choosing" });
    assert.deepEqual(bootstrapMetricsToken(config), {
      token: "a-token-of-my-own-choosing",
      source: "GRADEBOX_METRICS_TOKEN",
      created: false,
    });
    assert.throws(() => loadConfig({ ...env, GRADEBOX_METRICS_TOKEN: "short" }), /GRADEBOX_METRICS_TOKEN.*at least 16/);
    assert.equal(loadConfig({ ...env, GRADEBOX_METRICS_TOKEN: "" }).metricsToken, undefined, "empty is unset");
  });
  test("/healthz and /readyz stay open", async () => {
    assert.equal((await s.app.inject({ method: "GET", url: "/healthz" })).statusCode, 200);
    assert.equal((await s.app.inject({ method: "GET", url: "/readyz" })).statusCode, 200);
  });
});
