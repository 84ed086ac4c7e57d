// The HTTP API through app.inject: CRUD, locking, grading and every error code of the routes.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";

let s: TestServer;
before(async () => {
  // the memory hog below fills the 32 MB heap with 8 MB arrays in a few allocations, long before
  // the 300 ms time limit even on a loaded machine (with 0.8 MB arrays a busy CI run timed out first)
  s = await startServer({
    env: { GRADEBOX_MAX_BATCH: "50", GRADEBOX_BODY_LIMIT: "200000", GRADEBOX_TIMEOUT_MS: "300", GRADEBOX_MEMORY_MB: "32" },
  });
});
after(() => s.close());

const base = "/v1/projects/acme/graders";
const exactMatch = `async function grade(thread: StringThread): Promise<number> {
  const completion = thread.completion() ?? "";
  const expected = thread.metadata.expected ?? "";
  return completion.trim() === String(expected).trim() ? 1.0 : 0.0;
}`;

function assertProblem(
  res: { status: number; headers: Record<string, unknown>; body: Record<string, unknown> },
  status: number,
  code: string,
) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
  assert.equal(res.body.code, code);
  assert.equal(res.body.status, status);
  assert.equal(typeof res.body.detail, "string");
  assert.ok((res.body.detail as string).length > 10, "the detail says something a person can act on");
  assert.equal(res.body.requestId, res.headers["x-request-id"]);
}

describe("grader lifecycle", () => {
  test("create stores source, compiled script, hash, description, times", async () => {
    const res = await call(s.app, "POST", base, { key: "exact-match", source: exactMatch, description: "Strict equality" });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.key, "exact-match");
    assert.equal(res.body.description, "Strict equality");
    assert.equal(res.body.locked, false);
    assert.deepEqual(res.body.warnings, []);
    assert.equal(res.body.source, exactMatch);
    assert.match(res.body.sourceSha256, /^[0-9a-f]{64}$/);
    const row = await s.store.get("acme", "exact-match");
    assert.ok(row?.compiled.includes("__gradebox_grade"), "the compiled script is stored");
    assert.equal(row?.source, exactMatch);
  });

  test("create with an existing key: 409 GRADER_EXISTS, the original is untouched", async () => {
    const res = await call(s.app, "POST", base, { key: "exact-match", source: "async (t) => 0" });
    assertProblem(res, 409, "GRADER_EXISTS");
    assert.equal((await s.store.get("acme", "exact-match"))?.source, exactMatch);
  });

  test("get returns the source; an unknown key is 404 GRADER_NOT_FOUND", async () => {
    const res = await call(s.app, "GET", `${base}/exact-match`);
    assert.equal(res.status, 200);
    assert.equal(res.body.source, exactMatch);
    assertProblem(await call(s.app, "GET", `${base}/nope`), 404, "GRADER_NOT_FOUND");
  });

  test("grade and grade-batch score in input order", async () => {
    const one = await call(s.app, "POST", `${base}/exact-match/grade`, { thread: thread(" 42 ", { expected: 42 }) });
    assert.equal(one.status, 200);
    assert.equal(one.body.score, 1);
    assert.equal(typeof one.body.durationMs, "number");
    const threads = Array.from({ length: 30 }, (_, i) => thread(String(i), { expected: i % 3 === 0 ? i : -1 }));
    const batch = await call(s.app, "POST", `${base}/exact-match/grade-batch`, { threads });
    assert.equal(batch.status, 200);
    assert.deepEqual(
      batch.body.results,
      threads.map((_, i) => ({ outcome: "scored", score: i % 3 === 0 ? 1 : 0 })),
    );
  });

  test("projects are separate namespaces", async () => {
    assertProblem(await call(s.app, "GET", "/v1/projects/other/graders/exact-match"), 404, "GRADER_NOT_FOUND");
    const list = await call(s.app, "GET", "/v1/projects/other/graders");
    assert.deepEqual(list.body.data, []);
  });

  test("lock refuses delete with 409 GRADER_LOCKED; unlock allows it", async () => {
    const locked = await call(s.app, "PUT", `${base}/exact-match/lock`, { locked: true });
    assert.equal(locked.status, 200);
    assert.equal(locked.body.locked, true);
    assertProblem(await call(s.app, "DELETE", `${base}/exact-match`), 409, "GRADER_LOCKED");
    assert.ok(await s.store.get("acme", "exact-match"), "still there");
    const graded = await call(s.app, "POST", `${base}/exact-match/grade`, { thread: thread("1", { expected: 1 }) });
    assert.equal(graded.body.score, 1, "a locked grader still grades");
    await call(s.app, "PUT", `${base}/exact-match/lock`, { locked: false });
    const del = await call(s.app, "DELETE", `${base}/exact-match`);
    assert.equal(del.status, 204);
    assertProblem(await call(s.app, "DELETE", `${base}/exact-match`), 404, "GRADER_NOT_FOUND");
    assertProblem(await call(s.app, "POST", `${base}/exact-match/grade`, { thread: thread("1") }), 404, "GRADER_NOT_FOUND");
    assertProblem(await call(s.app, "PUT", `${base}/exact-match/lock`, { locked: true }), 404, "GRADER_NOT_FOUND");
  });

  test("a deleted and recreated key grades with the new source", async () => {
    await call(s.app, "POST", base, { key: "flip", source: "async (t) => 1" });
    assert.equal((await call(s.app, "POST", `${base}/flip/grade`, { thread: thread("x") })).body.score, 1);
    await call(s.app, "DELETE", `${base}/flip`);
    await call(s.app, "POST", base, { key: "flip", source: "async (t) => 2" });
    assert.equal((await call(s.app, "POST", `${base}/flip/grade`, { thread: thread("x") })).body.score, 2);
  });

  test("list is paginated and sorted by key", async () => {
    for (const key of ["p-c", "p-a", "p-b"]) {
      assert.equal((await call(s.app, "POST", "/v1/projects/paged/graders", { key, source: "async (t) => 1" })).status, 201);
    }
    const first = await call(s.app, "GET", "/v1/projects/paged/graders?limit=2");
    assert.deepEqual(
      first.body.data.map((g: { key: string }) => g.key),
      ["p-a", "p-b"],
    );
    assert.equal(first.body.nextCursor, "p-b");
    assert.equal(first.body.data[0].source, undefined, "list does not carry sources");
    const second = await call(s.app, "GET", `/v1/projects/paged/graders?limit=2&cursor=${first.body.nextCursor}`);
    assert.deepEqual(
      second.body.data.map((g: { key: string }) => g.key),
      ["p-c"],
    );
    assert.equal(second.body.nextCursor, null);
  });
});

describe("grader failures have their codes", () => {
  const cases = [
    ["thrower", "async (t) => { if (t.metadata.bad) throw new Error('bad input'); return 1 }", "GRADER_ERROR", /bad input/],
    ["looper", "async (t) => { if (t.metadata.bad) for (;;) {} return 1 }", "GRADER_TIMEOUT", /300 ms/],
    ["waiter", "async (t) => { if (t.metadata.bad) await new Promise(() => {}); return 1 }", "GRADER_TIMEOUT", /never settles/],
    [
      "hog",
      "async (t) => { if (t.metadata.bad) { const a = []; for (let i = 0; ; i++) a.push(new Array(1000000).fill(i)) } return 1 }",
      "GRADER_MEMORY_LIMIT",
      /memory/,
    ],
    ["nan", "async (t) => (t.metadata.bad ? NaN : 1)", "INVALID_SCORE", /NaN/],
    ["stringy", "async (t) => (t.metadata.bad ? '1' : 1)", "INVALID_SCORE", /string/],
  ] as const;
  for (const [key, source, code, message] of cases) {
    test(`${code} (${key}): 422 for grade, per item for grade-batch, others unaffected`, async () => {
      assert.equal((await call(s.app, "POST", base, { key, source })).status, 201);
      const one = await call(s.app, "POST", `${base}/${key}/grade`, { thread: thread("x", { bad: true }) });
      assertProblem(one, 422, code);
      assert.match(one.body.detail, message);
      const batch = await call(s.app, "POST", `${base}/${key}/grade-batch`, {
        threads: [thread("a"), thread("b", { bad: true }), thread("c"), thread("d")],
      });
      assert.equal(batch.status, 200);
      assert.deepEqual(batch.body.results[0], { outcome: "scored", score: 1 });
      assert.equal(batch.body.results[1].error.code, code);
      assert.deepEqual(
        batch.body.results.slice(2),
        [
          { outcome: "scored", score: 1 },
          { outcome: "scored", score: 1 },
        ],
        "items after the failure are graded",
      );
      const again = await call(s.app, "POST", `${base}/${key}/grade`, { thread: thread("x") });
      assert.equal(again.body.score, 1, "the grader recovers after its failure");
    });
  }
});

describe("bad requests", () => {
  const good = thread("x");
  const cases: Array<
    [string, () => Promise<{ status: number; headers: Record<string, unknown>; body: Record<string, unknown> }>, number, string]
  > = [
    ["broken JSON", () => rawPost(`${base}`, "{nope", "application/json"), 400, "INVALID_JSON"],
    ["wrong content type", () => rawPost(`${base}`, "key=x", "application/x-www-form-urlencoded"), 415, "UNSUPPORTED_MEDIA_TYPE"],
    ["missing source", () => call(s.app, "POST", base, { key: "x" }), 400, "INVALID_REQUEST"],
    ["bad key", () => call(s.app, "POST", base, { key: "Bad Key!", source: "async (t) => 1" }), 400, "INVALID_REQUEST"],
    ["bad project", () => call(s.app, "GET", "/v1/projects/UPPER/graders"), 400, "INVALID_REQUEST"],
    [
      "empty role",
      () => call(s.app, "POST", `${base}/any/grade`, { thread: { turns: [{ role: "", content: "x" }] } }),
      400,
      "INVALID_REQUEST",
    ],
    ["empty turns", () => call(s.app, "POST", `${base}/any/grade`, { thread: { turns: [] } }), 400, "INVALID_REQUEST"],
    [
      "content not a string",
      () => call(s.app, "POST", `${base}/any/grade`, { thread: { turns: [{ role: "user", content: 1 }] } }),
      400,
      "INVALID_REQUEST",
    ],
    ["lock without a boolean", () => call(s.app, "PUT", `${base}/any/lock`, { locked: "yes" }), 400, "INVALID_REQUEST"],
    [
      "batch over the limit",
      () => call(s.app, "POST", `${base}/any/grade-batch`, { threads: Array(51).fill(good) }),
      413,
      "BATCH_TOO_LARGE",
    ],
    ["empty batch", () => call(s.app, "POST", `${base}/any/grade-batch`, { threads: [] }), 400, "INVALID_REQUEST"],
    ["body over the limit", () => call(s.app, "POST", base, { key: "big", source: "x".repeat(300_000) }), 413, "BODY_TOO_LARGE"],
    ["unknown route", () => call(s.app, "GET", "/v1/nothing"), 404, "NOT_FOUND"],
  ];
  for (const [what, send, status, code] of cases) {
    test(what, async () => {
      const res = await send();
      assertProblem(res, status, code);
    });
  }
  test("the message names the field", async () => {
    const res = await call(s.app, "POST", `${base}/any/grade`, { thread: { turns: [{ role: "", content: "x" }] } });
    assert.match(res.body.detail as string, /body\.thread\.turns\.0\.role: role must be text: a role is 1 to 64 characters/);
  });
});

async function rawPost(url: string, payload: string, contentType: string) {
  const res = await s.app.inject({
    method: "POST",
    url,
    payload,
    headers: { "content-type": contentType, authorization: `Bearer ${await s.keyFor("acme")}` },
  });
  return { status: res.statusCode, headers: res.headers, body: JSON.parse(res.body) };
}
