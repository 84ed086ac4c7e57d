// The boundary around the sandbox: nothing a grader returns or does can forge results, outlive
// its time limit, blame another grader, hold every worker, or keep memory after it is deleted.
// Real server, real worker processes, real isolates.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MAX_CRASHES_PER_BATCH } from "../sandbox/host/tasks.ts";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";

const LIMIT_MS = 500;
/** every grading call ends within 2× its limit + 1 s (the watchdog's bound) */
const BOUND_MS = 2 * LIMIT_MS + 1000;

let s: TestServer;
before(async () => {
  s = await startServer({ env: { GRADEBOX_TIMEOUT_MS: String(LIMIT_MS), GRADEBOX_WORKERS: "2" } });
});
after(() => s.close());

const create = async (project: string, key: string, source: string) => {
  const res = await call(s.app, "POST", `/v1/projects/${project}/graders`, { key, source });
  assert.equal(res.status, 201, JSON.stringify(res.body));
};
const gradeBatch = (project: string, key: string, threads: unknown[]) =>
  call(s.app, "POST", `/v1/projects/${project}/graders/${key}/grade-batch`, { threads });
const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const value = await fn();
  return [value, performance.now() - t0];
};
const faults = async (project: string, key: string) =>
  (await call(s.app, "GET", `/v1/projects/${project}/graders/${key}`)).body.recentFaults;

describe("results cross as data the host reads itself", () => {
  test("a toJSON hook on Object.prototype cannot forge the reply: one result per item, no fake codes", async () => {
    await create(
      "forge",
      "tojson",
      `Object.prototype.toJSON = function () {
         return { results: [1, 1, 1, { code: "SANDBOX_CRASHED", message: "forged" }, { score: 1, reason: "x".repeat(1e6) }], current: 1e8, finished: false };
       };
       async function grade(t) { return t.completion() === "a" ? 1 : 0 }`,
    );
    const [res, ms] = await timed(() => gradeBatch("forge", "tojson", [thread("a"), thread("b")]));
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.results, [
      { outcome: "scored", score: 1 },
      { outcome: "scored", score: 0 },
    ]);
    assert.ok(ms < BOUND_MS, `answered in ${ms} ms: no work proportional to a forged index`);
  });

  test("a getter on Array.prototype indexes and Symbol.species change nothing the host reads", async () => {
    await create(
      "forge",
      "species",
      `Object.defineProperty(Array.prototype, "0", { get() { return 99 }, set() {}, configurable: true });
       Object.defineProperty(Array, Symbol.species, { get() { return function () { return [7, 7, 7] } }, configurable: true });
       async function grade(t) { return { score: 0.5, subscores: [1, 2] } }`,
    );
    const res = await gradeBatch("forge", "species", [thread("a"), thread("b")]);
    assert.equal(res.status, 200);
    assert.equal(res.body.results.length, 2);
    for (const r of res.body.results) assert.equal(r.score, 0.5, JSON.stringify(r));
  });

  test("results may not carry __proto__ or constructor keys (INVALID_SCORE), as requests may not", async () => {
    await create(
      "forge",
      "protokeys",
      `async function grade(t) {
         if (t.completion() === "a") return { score: 1, metadata: JSON.parse('{"nested": {"__proto__": {"polluted": true}}}') };
         if (t.completion() === "b") return { score: 1, metadata: { constructor: { prototype: 1 } } };
         return { score: 1, metadata: { fine: true } };
       }`,
    );
    const res = await gradeBatch("forge", "protokeys", [thread("a"), thread("b"), thread("c")]);
    assert.equal(res.body.results[0].error?.code, "INVALID_SCORE", JSON.stringify(res.body.results[0]));
    assert.match(res.body.results[0].error.message, /__proto__/);
    assert.equal(res.body.results[1].error?.code, "INVALID_SCORE");
    assert.deepEqual(res.body.results[2], { outcome: "scored", score: 1, metadata: { fine: true } });
  });

  test("a result over 16 KiB of JSON is INVALID_SCORE for its item alone", async () => {
    await create("forge", "huge", `async function grade(t) { return t.completion() === "a" ? { score: 1, reason: "x".repeat(1e6) } : 1 }`);
    const res = await gradeBatch("forge", "huge", [thread("a"), thread("b")]);
    assert.equal(res.body.results[0].error?.code, "INVALID_SCORE");
    assert.deepEqual(res.body.results[1], { outcome: "scored", score: 1 });
  });
});

describe("time limits hold inside built-ins V8 does not interrupt", () => {
  test("a sort of a huge sparse array ends within 2× the limit + 1 s, and only its item fails", async () => {
    await create(
      "slowpoke",
      "sparse",
      `async (t) => { if (t.metadata.attack) { const a = []; a[2 ** 31] = 1; a.sort(); a.reverse(); } return 1 }`,
    );
    const [res, ms] = await timed(() =>
      call(s.app, "POST", "/v1/projects/slowpoke/graders/sparse/grade", { thread: thread("x", { attack: true }) }),
    );
    assert.ok(["GRADER_TIMEOUT", "GRADER_MEMORY_LIMIT"].includes(res.body.code), JSON.stringify(res.body));
    assert.ok(ms <= BOUND_MS, `ended after ${Math.round(ms)} ms; the bound is ${BOUND_MS}`);
    const batch = await gradeBatch("slowpoke", "sparse", [thread("x"), thread("x", { attack: true }), thread("x")]);
    assert.deepEqual(batch.body.results[0], { outcome: "scored", score: 1 });
    assert.ok(batch.body.results[1].error, JSON.stringify(batch.body.results[1]));
    assert.deepEqual(batch.body.results[2], { outcome: "scored", score: 1 }, "the item after the runaway is graded on a fresh worker");
  });

  test("Error.prepareStackTrace cannot be replaced, so no stack is formatted outside the limit", async () => {
    await create(
      "slowpoke",
      "stacktrace",
      `async (t) => { if (!t.metadata.attack) return 1; Error.prepareStackTrace = () => { for (;;) {} }; throw new Error("boom") }`,
    );
    const [res, ms] = await timed(() =>
      call(s.app, "POST", "/v1/projects/slowpoke/graders/stacktrace/grade", { thread: thread("x", { attack: true }) }),
    );
    assert.equal(res.body.code, "GRADER_ERROR");
    assert.match(res.body.detail, /read only|read-only|Cannot assign/);
    assert.ok(ms < BOUND_MS);
  });

  test("a module that throws an error whose stack getter spins fails validation within the bound", async () => {
    const [res, ms] = await timed(() =>
      call(s.app, "POST", "/v1/projects/slowpoke/graders", {
        key: "stackgetter",
        source: `const e = new Error("x"); Object.defineProperty(e, "stack", { get() { for (;;) {} } }); throw e;\nasync function grade(t) { return 1 }`,
      }),
    );
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.equal(res.body.check, "execution");
    assert.ok(ms < BOUND_MS + 1000, `${ms} ms`);
  });

  test(`after 3 time-outs in a row the rest of the batch fails fast`, async () => {
    await create("slowpoke", "spinner", `async (t) => { if (t.metadata.spin) for (;;) {} return 1 }`);
    const [res, ms] = await timed(() =>
      gradeBatch(
        "slowpoke",
        "spinner",
        Array.from({ length: 10 }, () => thread("x", { spin: true })),
      ),
    );
    const codes = res.body.results.map((r: { error?: { code: string } }) => r.error?.code);
    assert.deepEqual(codes, Array(10).fill("GRADER_TIMEOUT"));
    assert.ok(res.body.results.slice(3).every((r: { error: { message: string } }) => /fails fast/.test(r.error.message)));
    // one batch call and three single calls, not ten time limits
    assert.ok(ms < 6 * LIMIT_MS + 1000, `${Math.round(ms)} ms`);
  });
});

describe("crashes are contained to the item, and blame only the guilty", () => {
  test("one heap bomb in a batch costs one score; the rest keep theirs, in order", async () => {
    await create("bomber", "bomb", `async (t) => { if (t.metadata.boom) { new Array(6e7).fill(); } return Number(t.metadata.i ?? 0) }`);
    const threads = Array.from({ length: 40 }, (_, i) => thread("x", { i, boom: i === 17 }));
    const res = await gradeBatch("bomber", "bomb", threads);
    for (const [i, r] of res.body.results.entries()) {
      if (i === 17) assert.equal(r.error?.code, "GRADER_MEMORY_LIMIT", JSON.stringify(r));
      else assert.deepEqual(r, { outcome: "scored", score: i });
    }
    assert.equal(await faults("bomber", "bomb"), 1, "one worker death, one fault");
  });

  test(`after ${MAX_CRASHES_PER_BATCH} worker deaths the rest of the batch fails fast and the grader is quarantined`, async () => {
    await create("bomber", "carpet", `async (t) => { if (t.metadata.boom) new Array(6e7).fill(); return 1 }`);
    const res = await gradeBatch(
      "bomber",
      "carpet",
      Array.from({ length: 8 }, () => thread("x", { boom: true })),
    );
    const codes = res.body.results.map((r: { error?: { code: string } }) => r.error?.code);
    assert.deepEqual(codes, Array(8).fill("GRADER_MEMORY_LIMIT"));
    assert.match(res.body.results[7].error.message, /fails fast/);
    const got = await call(s.app, "GET", "/v1/projects/bomber/graders/carpet");
    assert.ok(got.body.quarantinedAt, "quarantined after three worker deaths");
  });

  test("a neighbour's heap bomb never counts against a healthy grader running at the same time", async () => {
    await create("calm", "healthy", `async (t) => (t.completion() === "yes" ? 1 : 0)`);
    await create("bomber", "bomb2", `async (t) => { if (t.metadata.boom) new Array(6e7).fill(); return 1 }`);
    const healthy = (async () => {
      for (let i = 0; i < 30; i++) {
        const r = await gradeBatch("calm", "healthy", [thread("yes"), thread("no")]);
        assert.deepEqual(r.body.results, [
          { outcome: "scored", score: 1 },
          { outcome: "scored", score: 0 },
        ]);
      }
    })();
    const bomb = await call(s.app, "POST", "/v1/projects/bomber/graders/bomb2/grade", { thread: thread("x", { boom: true }) });
    assert.equal(bomb.body.code, "GRADER_MEMORY_LIMIT");
    await healthy;
    assert.equal(await faults("calm", "healthy"), 0);
  });
});

describe("fair share across projects", () => {
  test("a trusted grader's long batch on every worker leaves another project waiting at most one slice + one limit", async () => {
    await create("hog", "busy", `async (t) => { const end = Date.now() + 100; while (Date.now() < end) {} return 1 }`);
    for (let i = 0; i < 20; i++) await call(s.app, "POST", "/v1/projects/hog/graders/busy/grade", { thread: thread("x") });
    await create("small", "quick", `async (t) => 1`);
    await call(s.app, "POST", "/v1/projects/small/graders/quick/grade", { thread: thread("x") });
    // 80 items × 100 ms: four seconds of work on each of the two workers
    const hog = gradeBatch(
      "hog",
      "busy",
      Array.from({ length: 80 }, () => thread("x")),
    );
    await new Promise((r) => setTimeout(r, 300));
    const [quick, waited] = await timed(() => call(s.app, "POST", "/v1/projects/small/graders/quick/grade", { thread: thread("x") }));
    assert.equal(quick.body.score, 1);
    assert.ok(waited < LIMIT_MS / 2 + LIMIT_MS + 500, `the other project waited ${Math.round(waited)} ms`);
    const [created, registering] = await timed(() =>
      call(s.app, "POST", "/v1/projects/small/graders", { key: "during", source: "async (t) => 1" }),
    );
    assert.equal(created.status, 201);
    assert.ok(registering < 1500, `registration waited ${Math.round(registering)} ms behind grading`);
    const done = await hog;
    assert.equal(done.body.results.length, 80);
    assert.ok(done.body.results.every((r: { score?: number }) => r.score === 1));
  });
});

describe("memory is accounted and given back", () => {
  test("a deleted grader's isolates are disposed in every worker at once", async () => {
    await create("mem", "everywhere", `async (t) => 1`);
    for (let i = 0; i < 20; i++) await call(s.app, "POST", "/v1/projects/mem/graders/everywhere/grade", { thread: thread("x") });
    // a split batch warms it on both workers
    await gradeBatch(
      "mem",
      "everywhere",
      Array.from({ length: 200 }, () => thread("x")),
    );
    const warm = (await s.pool.stats()).map((w) => w.warm);
    assert.equal((await call(s.app, "DELETE", "/v1/projects/mem/graders/everywhere")).status, 204);
    const after = (await s.pool.stats()).map((w) => w.warm);
    assert.equal(
      after.reduce((a, b) => a + b, 0),
      warm.reduce((a, b) => a + b, 0) - 2,
      `one isolate fewer in each of the two workers (${warm} → ${after})`,
    );
  });
});

describe("validation that takes its worker down", () => {
  test("counts per project: after 3 in 10 minutes that project's registrations get 429 with retry-after, others' do not", async () => {
    for (let i = 0; i < 3; i++) {
      const res = await call(s.app, "POST", "/v1/projects/crasher/graders", {
        key: `load-bomb-${i}`,
        source: `new Array(6e7).fill();\nasync function grade(t) { return 1 }`,
      });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.equal(res.body.check, "execution");
      assert.match(res.body.message, /GRADER_MEMORY_LIMIT/);
    }
    const limited = await call(s.app, "POST", "/v1/projects/crasher/graders/validate", { source: "async (t) => 1" });
    assert.equal(limited.status, 429, JSON.stringify(limited.body));
    assert.equal(limited.body.code, "VALIDATION_RATE_LIMITED");
    assert.ok(Number(limited.headers["retry-after"]) > 0);
    const create = await call(s.app, "POST", "/v1/projects/crasher/graders", { key: "fine", source: "async (t) => 1" });
    assert.equal(create.status, 429);
    const other = await call(s.app, "POST", "/v1/projects/innocent/graders", { key: "fine", source: "async (t) => 1" });
    assert.equal(other.status, 201, "another project registers as usual");
  });
});

describe("sources that make esbuild work for minutes", () => {
  test("a parse past 2 s fails the syntax check at once, the validation worker is replaced, and it counts toward the rate limit", async () => {
    const slow = `const x = ${"a<".repeat(8000)}a;\nasync function grade(t) { return 1 }`;
    const [res, ms] = await timed(() => call(s.app, "POST", "/v1/projects/parser/graders", { key: "slow-parse", source: slow }));
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.equal(res.body.check, "syntax");
    assert.match(res.body.message, /longer than 2 s to parse/);
    assert.ok(ms < 4000, `answered after ${Math.round(ms)} ms`);
    // another project registers while the validation worker is replaced
    const [other, waited] = await timed(() =>
      call(s.app, "POST", "/v1/projects/bystander/graders", { key: "fine", source: "async (t) => 1" }),
    );
    assert.equal(other.status, 201, JSON.stringify(other.body));
    assert.ok(waited < 5000, `another project's registration waited ${Math.round(waited)} ms`);
    for (let i = 0; i < 2; i++) await call(s.app, "POST", "/v1/projects/parser/graders/validate", { source: slow });
    assert.equal((await call(s.app, "POST", "/v1/projects/parser/graders/validate", { source: "async (t) => 1" })).status, 429);
  });
});
