// Packed batches (sandbox/batch.ts): what a grader sees is exactly what was sent, through the
// codec alone, through a real isolate, and through the pool when it splits one batch across
// both workers.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BatchReader } from "../sandbox/isolate/batch-reader.ts";
import { packBatch } from "../sandbox/protocol/batch.ts";
import { Engine } from "../sandbox/worker/engine.ts";
import { ROLES, type WireThread } from "../sdk/thread.ts";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";

const read = (threads: WireThread[]) => {
  const { head, text, count } = packBatch(threads);
  const reader = new BatchReader(head, text);
  assert.equal(reader.count, count);
  return threads.map((_, i) => ({
    turns: reader.turns(i).map(([role, content]) => ({ role, content })),
    metadata: reader.metadataOf(i),
  }));
};

const awkward: WireThread[] = [
  { turns: [{ role: "assistant", content: "" }] },
  { turns: [{ role: "user", content: "héllo wörld — ünïcode" }], metadata: { a: 1, nested: { b: [1, "two", null, true] } } },
  {
    turns: [
      { role: "user", content: "emoji 🎉 and 中文" },
      { role: "assistant", content: "\u0000 NUL inside" },
    ],
    metadata: {},
  },
  {
    turns: [
      { role: "system", content: "lone \ud800 surrogate" },
      { role: "assistant", content: "\udc00 other half" },
    ],
  },
  {
    turns: ROLES.map((role) => ({ role, content: `${role}: ${"x".repeat(200)}` })),
    metadata: { "0": "integer-like key", "": "empty key" },
  },
  { turns: [{ role: "tool", content: '{"json": "in content", "esc": "\\n\\t\\""}' }], metadata: { expected: "y".repeat(5000) } },
];

describe("codec", () => {
  test("every awkward thread comes back exactly, metadata missing becomes {}", () => {
    const back = read(awkward);
    for (const [i, t] of awkward.entries()) {
      assert.deepEqual(back[i].turns, t.turns, `thread ${i} turns`);
      assert.deepEqual(back[i].metadata, t.metadata ?? {}, `thread ${i} metadata`);
    }
  });

  test("random threads round-trip, read in any order", () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const alphabet = ["a", " ", "é", "€", "😀", "\n", '"', "\\", "\ud800"];
    const threads: WireThread[] = Array.from({ length: 300 }, () => ({
      turns: Array.from({ length: 1 + rnd(6) }, () => ({
        role: ROLES[rnd(ROLES.length)],
        content: Array.from({ length: rnd(400) }, () => alphabet[rnd(alphabet.length)]).join(""),
      })),
      ...(rnd(3) ? { metadata: { k: rnd(1000), s: "m".repeat(rnd(50)) } } : {}),
    }));
    const { head, text } = packBatch(threads);
    const reader = new BatchReader(head, text);
    for (const i of [299, 0, 150, 1, 298, ...threads.keys()]) {
      assert.deepEqual(
        reader.turns(i).map(([role, content]) => ({ role, content })),
        threads[i].turns,
      );
      assert.deepEqual(reader.metadataOf(i), threads[i].metadata ?? {});
    }
  });

  test("roles outside ROLES go by a table in the head, once per batch, with and without groups", () => {
    const threads: WireThread[] = [
      {
        turns: [
          { role: "developer", content: "be brief" },
          { role: "user", content: "q" },
          { role: "ipython", content: "out" },
        ],
      },
      {
        turns: [
          { role: "developer", content: "again" },
          { role: "assistant", content: "a" },
        ],
      },
    ];
    for (const groups of [undefined, [2]]) {
      const { head, text } = packBatch(threads, groups);
      assert.equal(head.split('"developer"').length, 2, `one "developer" in ${head}`);
      const reader = new BatchReader(head, text);
      assert.equal(reader.grouped, groups !== undefined);
      for (const [i, t] of threads.entries()) {
        assert.deepEqual(
          reader.turns(i).map(([role, content]) => ({ role, content })),
          t.turns,
        );
      }
    }
    // a batch of known roles only is packed as before: no table
    assert.equal(JSON.parse(packBatch([thread("x")]).head).length, 2);
  });

  test("packBatch refuses what is not a thread", () => {
    assert.throws(() => packBatch([{ turns: [{ role: "", content: "x" }] }]), /thread 0, turn 0: a role is 1 to 64 characters/);
    assert.throws(() => packBatch([{ turns: [{ role: "a\nb", content: "x" }] }]), /thread 0, turn 0: a role is/);
    assert.throws(
      () => packBatch([thread("ok"), { turns: [{ role: "user", content: 5 as unknown as string }] }]),
      /thread 1, turn 0: content/,
    );
    assert.throws(() => packBatch([{ turns: "nope" as unknown as [] }]), /thread 0: turns must be an array/);
  });
});

describe("through a real isolate", () => {
  const engine = new Engine({ timeoutMs: 1000, memoryMb: 64, maxWarm: 4, maxWarmHeapMb: 256 });
  after(() => engine.dispose());

  test("getters a grader puts on Array.prototype's indexes do not reach the batch reader: the next batch is read as sent", async () => {
    const v = await engine.validate(
      "async function grade(t) { for (let i = 0; i < 8; i++) Object.defineProperty(Array.prototype, i, { get() { return 7; }, configurable: true }); return t.getTurns().length; }",
    );
    assert.ok(v.ok);
    const code = { id: "index-getters", project: "t", compiled: v.compiled };
    const threads = Array.from({ length: 10 }, () => thread("x"));
    const slice = { single: false, sliceMs: 500, limitsInARow: 0, end: 10 };
    assert.equal(engine.gradeSlice(code, packBatch(threads), 0, slice).outcomes.length, 10);
    // a new batch in the patched isolate: read whole, every thread graded in one call (a grouping read from
    // Array.prototype[2] ended every unit at 0, and the call spun to its time limit after one item)
    const next = engine.gradeSlice(code, packBatch(threads), 0, slice);
    assert.deepEqual(
      next.outcomes.map((o) => ("score" in o ? o.score : JSON.stringify(o))),
      threads.map((t) => t.turns.length),
    );
  });

  test("the grader sees every turn and the metadata as sent", async () => {
    const echo = "async function grade(t) { return { score: t.getTurns().length, metadata: { turns: t.getTurns(), meta: t.metadata } } }";
    const v = await engine.validate(echo);
    assert.ok(v.ok);
    const results = engine.gradeBatch({ id: "echo", project: "t", compiled: v.compiled }, packBatch(awkward));
    for (const [i, t] of awkward.entries()) {
      const r = results[i];
      assert.ok("score" in r, JSON.stringify(r));
      assert.equal(r.score, t.turns.length);
      const seen = r.metadata as { turns: Array<[string, string]>; meta: unknown };
      // a lone surrogate does not survive JSON.stringify's well-formed output; compare the rest exactly
      const wellFormed = (s: string) => s.replace(/[\ud800-\udfff]/g, "\ufffd");
      assert.deepEqual(
        seen.turns.map(([role, content]) => ({ role, content: wellFormed(content) })),
        t.turns.map(({ role, content }) => ({ role, content: wellFormed(content) })),
      );
      assert.deepEqual(seen.meta, t.metadata ?? {});
    }
  });

  test("what a grader mutates stays with its own item: metadata objects and turns are never shared", async () => {
    // marks the metadata (threads without metadata too) and overwrites the copy getTurns returns;
    // scores 1 only when neither mark from an earlier item nor the overwrite shows through
    const v = await engine.validate(
      `async function grade(t) {
        const fresh = t.metadata.mark === undefined;
        t.metadata.mark = 1;
        t.getTurns().at(-1)[1] = "changed";
        return fresh && t.completion() !== "changed" ? 1 : 0;
      }`,
    );
    assert.ok(v.ok);
    const bare = { turns: [{ role: "assistant" as const, content: "a" }] };
    const results = engine.gradeBatch({ id: "mutate", project: "t", compiled: v.compiled }, packBatch([bare, bare, thread("a"), bare]));
    assert.deepEqual(results, [{ score: 1 }, { score: 1 }, { score: 1 }, { score: 1 }]);
  });
});

describe("one batch split across workers", () => {
  let s: TestServer;
  const base = "/v1/projects/split/graders";
  /** twenty clean jobs make a grader trusted; only trusted graders are split */
  const trust = async (key: string) => {
    for (let i = 0; i < 20; i++) await call(s.app, "POST", `${base}/${key}/grade`, { thread: thread("x", { i }) });
  };
  before(async () => {
    s = await startServer({ env: { GRADEBOX_WORKERS: "2" } });
    const res = await call(s.app, "POST", base, { key: "index", source: "async (t) => Number(t.metadata.i ?? 0)" });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    await trust("index");
  });
  after(() => s.close());

  test("a 200-thread batch uses both workers and keeps every result in order", async () => {
    const threads = Array.from({ length: 200 }, (_, i) => thread(`item ${i}`, { i }));
    const res = await call(s.app, "POST", `${base}/index/grade-batch`, { threads });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(
      res.body.results,
      threads.map((_, i) => ({ outcome: "scored", score: i })),
    );

    // a grader warm on one worker only: the split batch warms it on the other one too
    await call(s.app, "POST", base, { key: "double", source: "async (t) => Number(t.metadata.i ?? 0) * 2" });
    await trust("double");
    const warmBefore = (await s.pool.stats()).map((w) => w.warm);
    const split = await call(s.app, "POST", `${base}/double/grade-batch`, { threads });
    assert.deepEqual(
      split.body.results,
      threads.map((_, i) => ({ outcome: "scored", score: 2 * i })),
    );
    const warmAfter = (await s.pool.stats()).map((w) => w.warm);
    assert.equal(
      warmAfter.reduce((a, b) => a + b, 0) - warmBefore.reduce((a, b) => a + b, 0),
      1,
      `the second worker warmed the grader too (${warmBefore} → ${warmAfter})`,
    );
  });

  test("a long batch's later slices go without it to the worker that holds it, and grade the same", async () => {
    await call(s.app, "POST", base, {
      key: "steady",
      source: "async (t) => { const end = Date.now() + 10; while (Date.now() < end) {} return Number(t.metadata.i ?? 0) }",
    });
    await trust("steady");
    // the pool's worker handles (sandbox/host/supervisor.ts): every grade request it sends, with or without its batch
    const workers = (
      s.pool as unknown as {
        workers: { send: (w: unknown, request: { op: string; batch?: unknown; batchId?: number }, r: unknown) => void };
      }
    ).workers;
    const send = workers.send;
    const sent: Array<{ batch: boolean; batchId?: number }> = [];
    workers.send = (w, request, r) => {
      if (request.op === "grade") sent.push({ batch: request.batch !== undefined, batchId: request.batchId });
      send.call(workers, w, request, r);
    };
    try {
      // 150 items of 10 ms: each part runs past one slice (half the 1 s time limit)
      const threads = Array.from({ length: 150 }, (_, i) => thread(`item ${i}`, { i }));
      const res = await call(s.app, "POST", `${base}/steady/grade-batch`, { threads });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(
        res.body.results,
        threads.map((_, i) => ({ outcome: "scored", score: i })),
      );
    } finally {
      workers.send = send;
    }
    const withBatch = sent.filter((x) => x.batch).length;
    assert.ok(sent.length >= 4, `the parts ran in several slices (${sent.length} requests)`);
    assert.ok(withBatch < sent.length, `some slices went without their batch (${withBatch} of ${sent.length} carried it)`);
    assert.ok(
      sent.every((x) => typeof x.batchId === "number"),
      "every slice names its batch",
    );
  });

  test("a worker killed from outside under one part costs no item: the slice is graded again on a fresh worker", async () => {
    await call(s.app, "POST", base, {
      key: "slow",
      source: "async (t) => { const end = Date.now() + 20; while (Date.now() < end) {} return Number(t.metadata.i ?? 0) }",
    });
    await trust("slow");
    const threads = Array.from({ length: 64 }, (_, i) => thread("x", { i }));
    const restarts = s.pool.restarts;
    const pending = call(s.app, "POST", `${base}/slow/grade-batch`, { threads });
    await new Promise((r) => setTimeout(r, 200));
    // the pool's worker handles (sandbox/host/supervisor.ts)
    const workers = (
      s.pool as unknown as { workers: { workers: Array<{ running?: unknown; role: string; child: { kill(sig: string): void } }> } }
    ).workers.workers;
    const busy = workers.filter((x) => x.role === "grade" && x.running);
    assert.equal(busy.length, 2, "both workers hold a part");
    busy[1].child.kill("SIGKILL");
    const res = await pending;
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.results,
      threads.map((_, i) => ({ outcome: "scored", score: i })),
      "every item scored, in place",
    );
    assert.equal(s.pool.restarts, restarts + 1);
    const got = await call(s.app, "GET", `${base}/slow`);
    assert.equal(got.body.recentFaults, 0, "an outside kill is nobody's fault");
  });
});
