// The five checks (and the size check before them), through the real API with real isolates.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { call, startServer, type TestServer } from "./support/helpers.ts";

let s: TestServer;
before(async () => {
  s = await startServer({ env: { GRADEBOX_TIMEOUT_MS: "300" } });
});
after(() => s.close());

const create = (key: string, source: string) => call(s.app, "POST", "/v1/projects/p/graders", { key, source });

async function expectFailure(source: string, check: string, pattern: RegExp) {
  const key = `k${Math.random().toString(36).slice(2, 10)}`;
  const res = await create(key, source);
  assert.equal(res.status, 422, JSON.stringify(res.body));
  assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
  assert.equal(res.body.code, "VALIDATION_FAILED");
  assert.equal(res.body.check, check, res.body.message);
  assert.match(res.body.message, pattern);
  assert.equal(await s.store.get("p", key), undefined, "a failed validation writes nothing");
  return res.body;
}

describe("size", () => {
  test("source over 64 KiB of UTF-8 is refused before anything runs", async () => {
    // 'é' is two bytes: 32 769 of them is 65 538 bytes but only 32 769 characters
    const source = `async function grade(t) { return 1 } // ${"é".repeat(32_769)}`;
    const res = await create("big", source);
    assert.equal(res.status, 413);
    assert.equal(res.body.code, "SOURCE_TOO_LARGE");
    assert.ok(res.body.size > 65_536);
  });
  test("exactly 64 KiB is accepted", async () => {
    const head = "async function grade(t) { return 1 }\n//";
    const source = head + "x".repeat(65_536 - head.length);
    const res = await create("exact", source);
    assert.equal(res.status, 201, JSON.stringify(res.body));
  });
});

describe("1 syntax", () => {
  test("carries the line and column of the user's source", async () => {
    const body = await expectFailure("async function grade(t) {\n  const x = ;\n  return 1;\n}", "syntax", /line 2, column 13/);
    assert.equal(body.line, 2);
    assert.equal(body.column, 13);
  });
  test("an unterminated string", async () => {
    await expectFailure('async function grade(t) { return "1 }', "syntax", /Unterminated string/);
  });
});

describe("2 structure", () => {
  test("sync grade is rejected", async () => {
    await expectFailure("function grade(t) { return 1 }", "structure", /must be async/);
  });
  test("a sync arrow bound to grade is rejected", async () => {
    await expectFailure("const grade = (t) => 1;", "structure", /must be async/);
  });
  test("a nested grade does not count", async () => {
    await expectFailure("function outer() { async function grade(t) { return 1 } return grade }", "structure", /inside another function/);
  });
  test("no function at all", async () => {
    await expectFailure("const x = 1;", "structure", /no top-level function/);
  });
  test("several functions and none named grade", async () => {
    await expectFailure("async function a(t) { return 1 }\nasync function b(t) { return 2 }", "structure", /none is named grade/);
  });
  test("several functions and none named grade: the message names export default as the other way", async () => {
    await expectFailure("async function a(t) { return 1 }\nasync function b(t) { return 2 }", "structure", /`export default`/);
  });
  test("a sync default export is rejected, whatever sits beside it", async () => {
    await expectFailure(
      "function helper() { return 1 }\nexport default function myGrader(t) { return helper() }",
      "structure",
      /myGrader must be async/,
    );
  });
  test("a default export that is not a function is rejected, even beside a grade", async () => {
    await expectFailure(
      "export default { score: 1 };\nasync function grade(t) { return 1 }",
      "structure",
      /default export is not a function/,
    );
  });
  test("a default export naming something that is not a top-level function", async () => {
    await expectFailure(
      "const HALF = 0.5;\nasync function helper() { return HALF }\nexport default HALF;",
      "structure",
      /default export HALF is not a top-level function/,
    );
  });
  test("grade that is not a function", async () => {
    await expectFailure("const grade = 42;", "structure", /must be an async function/);
  });
  for (const [what, source] of [
    ["import of a node module", 'import fs from "node:fs";\nasync function grade(t) { return 1 }'],
    ["side-effect import", 'import "./other";\nasync function grade(t) { return 1 }'],
    ["re-export", 'export { x } from "os";\nasync function grade(t) { return 1 }'],
    ["require()", 'const cp = require("child_process");\nasync function grade(t) { return 1 }'],
    ["dynamic import()", 'async function grade(t) { const m = await import("fs"); return 1 }'],
  ] as const) {
    test(`value imports outside the allow-list fail: ${what}`, async () => {
      await expectFailure(source, "structure", /not (allowed|available)/);
    });
  }
  test("type-only imports and imports of gradebox are fine", async () => {
    const res = await create(
      "typed",
      'import type { StringThread } from "gradebox";\nimport { StringThread as ST } from "gradebox";\n' +
        "async function grade(thread: StringThread): Promise<number> { return thread instanceof ST ? 1 : 0 }",
    );
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body.warnings, []);
    const graded = await call(s.app, "POST", "/v1/projects/p/graders/typed/grade", {
      thread: { turns: [{ role: "user", content: "x" }] },
    });
    assert.equal(graded.body.score, 1, "the imported StringThread is the class the sandbox builds threads with");
  });
});

describe("3 signature", () => {
  test("two parameters", async () => {
    await expectFailure("async function grade(a, b) { return 1 }", "signature", /exactly one parameter.*takes 2/);
  });
  test("no parameter", async () => {
    await expectFailure("async function grade() { return 1 }", "signature", /takes 0/);
  });
  test("a rest parameter", async () => {
    await expectFailure("async function grade(...ts) { return 1 }", "signature", /rest parameter/);
  });
  test("the documented result type is not a warning: Promise<GradeScore> returning {score, reason}", async () => {
    const res = await create(
      "scored",
      'import type { GradeScore, StringThread } from "gradebox";\n' +
        'async function grade(t: StringThread): Promise<GradeScore> { return { score: 1, reason: "because" } }',
    );
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body.warnings, []);
    const graded = await call(s.app, "POST", "/v1/projects/p/graders/scored/grade", {
      thread: { turns: [{ role: "user", content: "x" }] },
    });
    assert.deepEqual([graded.body.score, graded.body.reason], [1, "because"]);
  });
  test("missing or other annotations are warnings, returned with the grader", async () => {
    const res = await create("warned", "async function grade(t: string): Promise<string | number> { return 1 }");
    assert.equal(res.status, 201);
    assert.deepEqual(res.body.warnings, [
      "the parameter of grade is annotated string, not StringThread",
      "the return type of grade is Promise<string|number>, not Promise<number>",
    ]);
  });
});

describe("4 execution", () => {
  test("a module body that throws", async () => {
    await expectFailure('throw new Error("boom");\nasync function grade(t) { return 1 }', "execution", /Error: boom/);
  });
  test("a module body whose error merely says 'timed out' is not a timeout", async () => {
    await expectFailure(
      'throw new Error("request timed out");\nasync function grade(t) { return 1 }',
      "execution",
      /Error: request timed out/,
    );
  });
  test("a module body that loops forever", async () => {
    await expectFailure("for (;;) {}\nasync function grade(t) { return 1 }", "execution", /time limit/);
  });
  test("a module body that uses a host API", async () => {
    await expectFailure("const p = process.env;\nasync function grade(t) { return 1 }", "execution", /process is not defined/);
  });
});

describe("5 test_run", () => {
  for (const [what, ret, pattern] of [
    ["a string", '"1"', /got a string/],
    ["NaN", "NaN", /got NaN/],
    ["Infinity", "-Infinity", /got -Infinity/],
    ["a boolean", "true", /got a boolean/],
    ["a bigint", "1n", /got a bigint/],
    ["an array", "[1]", /got an array/],
    ["an object without a score", "{ value: 1 }", /score must be a finite number, got undefined/],
    ["a result with a string score", '{ score: "1" }', /score must be a finite number, got a string/],
    ["a result with a non-string reason", "{ score: 1, reason: 5 }", /reason must be a string/],
    ["a result with array metadata", "{ score: 1, metadata: [] }", /metadata must be an object/],
    ["a result with metadata that is not JSON", "{ score: 1, metadata: { n: 1n } }", /not JSON/],
    ["a result over 16 KiB", '{ score: 1, reason: "x".repeat(20000) }', /limit is 16384/],
    ["undefined", "undefined", /got undefined/],
  ] as const) {
    test(`returning ${what} fails`, async () => {
      await expectFailure(`async function grade(t) { return ${ret} }`, "test_run", pattern);
    });
  }
  test("throwing fails with the error", async () => {
    await expectFailure('async function grade(t) { throw new TypeError("nope") }', "test_run", /GRADER_ERROR: TypeError: nope/);
  });
  test("a helper missing from the source fails with a clear message", async () => {
    await expectFailure("async function grade(t) { return helper(t) }", "test_run", /helper is not defined/);
  });
  test("never settling fails", async () => {
    await expectFailure("async function grade(t) { await new Promise(() => {}); return 1 }", "test_run", /GRADER_TIMEOUT: .*never settles/);
  });
  test("looping fails", async () => {
    await expectFailure("async function grade(t) { for (;;) {} }", "test_run", /GRADER_TIMEOUT/);
  });
  test("the mock thread is user '2+2' / assistant '4' with metadata {}", async () => {
    const res = await create(
      "mock",
      `async function grade(t) {
        const ok = t.completion() === "4" && t.messages().length === 1 && t.messages()[0][1] === "What is 2+2?" && Object.keys(t.metadata).length === 0;
        if (!ok) throw new Error("unexpected mock thread");
        return 1;
      }`,
    );
    assert.equal(res.status, 201, JSON.stringify(res.body));
  });
});

describe("shapes that are accepted and stored as grade", () => {
  for (const [what, source] of [
    ["a renamed declaration", "async function myGrader(t) { return 0.5 }"],
    ["an anonymous arrow", "async (t) => 0.5"],
    ["an anonymous function expression", "(async function (t) { return 0.5 })"],
    ["export default arrow", "export default async (t) => 0.5;"],
    ["export default anonymous function", "export default async function (t) { return 0.5 }"],
    ["a const arrow with helpers", "const HALF = 0.5;\nfunction half() { return HALF }\nconst grade = async (t) => half();"],
    [
      "export default named function beside a helper",
      "function helper(t) { return 0.5 }\nexport default async function myGrader(t) { return helper(t) }",
    ],
    [
      "export default anonymous function beside helpers",
      "const H = 0.5;\nfunction helper() { return H }\nexport default async function (t) { return helper() }",
    ],
    ["export default arrow beside a helper", "const helper = () => 0.5;\nexport default async (t) => helper();"],
    [
      "export default arrow beside a helper declared after it",
      "export default async (t: StringThread): Promise<number> => helper();\nfunction helper() { return 0.5 }",
    ],
    [
      "export default naming a function declaration",
      "async function myGrader(t) { return helper() }\nfunction helper() { return 0.5 }\nexport default myGrader;",
    ],
    ["export default naming a const arrow", "const helper = () => 0.5;\nconst myGrader = async (t) => helper();\nexport default myGrader;"],
    [
      "export { myGrader as default }",
      "function helper() { return 0.5 }\nasync function myGrader(t) { return helper() }\nexport { myGrader as default };",
    ],
    [
      "export default beside a sync helper named grade",
      "function grade(x) { return x / 2 }\nexport default async function main(t) { return grade(1) }",
    ],
    ["export default whose body declares an inner grade", "export default async function (t) { const grade = 0.5; return grade }"],
    ["a grade with async helpers beside it", "async function fetchish() { return 0.5 }\nasync function grade(t) { return fetchish() }"],
    ["tsx output with __name", 'async function grade(thread){const inner=__name(s=>s.trim(),"inner");return inner(" x ")==="x"?0.5:0}'],
  ] as const) {
    test(what, async () => {
      const key = `shape-${what.replace(/[^a-z]+/g, "-")}`;
      const res = await create(key, source);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const graded = await call(s.app, "POST", `/v1/projects/p/graders/${key}/grade`, {
        thread: { turns: [{ role: "user", content: "x" }] },
      });
      assert.equal(graded.status, 200, JSON.stringify(graded.body));
      assert.equal(graded.body.score, 0.5);
    });
  }
});

describe("validate endpoint", () => {
  test("runs the checks and grades the given threads without saving", async () => {
    const res = await call(s.app, "POST", "/v1/projects/p/graders/validate", {
      source: "async function grade(t) { if (t.metadata.boom) throw new Error('boom'); return t.completion() === 'yes' ? 1 : 0 }",
      threads: [
        { turns: [{ role: "assistant", content: "yes" }] },
        { turns: [{ role: "assistant", content: "no" }] },
        { turns: [{ role: "assistant", content: "yes" }], metadata: { boom: true } },
      ],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.valid, true);
    assert.deepEqual(res.body.results.slice(0, 2), [
      { outcome: "scored", score: 1 },
      { outcome: "scored", score: 0 },
    ]);
    assert.equal(res.body.results[2].error.code, "GRADER_ERROR");
    const list = await call(s.app, "GET", "/v1/projects/p/graders?limit=200");
    assert.ok(!list.body.data.some((g: { key: string }) => g.key === "validate"));
  });
  test("reports the failing check", async () => {
    const res = await call(s.app, "POST", "/v1/projects/p/graders/validate", { source: "function grade(t) { return 1 }" });
    assert.equal(res.status, 422);
    assert.equal(res.body.check, "structure");
  });
});
