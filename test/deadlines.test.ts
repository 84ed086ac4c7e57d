// Batch deadlines in the sandbox (issue 25, point 2): gradeBatch with `deadlineAt` answers by
// then with every finished outcome and DEADLINE_EXCEEDED for the rest; the calls still running
// are stopped (their items abstain, nobody is blamed) and queued slices dropped, so the workers
// are free at once. Each call is capped at a share of the time left: a unit still running then
// is set aside and retried alone after the rest, so items that hang cost only themselves. Real
// worker processes, real isolates; no timing assertions (the overshoot is printed;
// bench/deadlines.ts measures it).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SandboxPool } from "../sandbox/host/pool.ts";
import { checkedAside, wellFormedSlice } from "../sandbox/host/replies.ts";
import type { Scheduler } from "../sandbox/host/scheduler.ts";
import { gradeTask, limitsAtEnd } from "../sandbox/host/tasks.ts";
import { TRUST_AFTER_JOBS } from "../sandbox/host/trust.ts";
import { packBatch } from "../sandbox/protocol/batch.ts";
import type { GradeOutcome } from "../sandbox/validate/checks.ts";
import { Engine } from "../sandbox/worker/engine.ts";
import { thread } from "./support/helpers.ts";

/** a grader's own limit far past any deadline here: only the deadline can stop a hanging item */
const limits = { timeoutMs: 20_000, memoryMb: 64, maxWarm: 16, maxWarmHeapMb: 512 };
const HANG = "async function grade(t) { if (t.metadata.hang) for (;;) {} return t.completion().length }";
const HANG_PY =
  "async def grade(thread):\n    if thread.metadata.get('hang'):\n        while True:\n            pass\n    return len(thread.completion())\n";
/** hangs, or (metadata.slow) works 300 ms: well under its own limit, over any cap of a deadline of a few seconds */
const SLOW =
  "async function grade(t) { if (t.metadata.hang) for (;;) {} if (t.metadata.slow) { const end = Date.now() + 300; while (Date.now() < end) {} } return t.completion().length }";
/** long enough for every item that does not hang to finish on a loaded machine, with five caps spent on the ones that do */
const DEADLINE_MS = 3500;

const batchOf = (n: number, hangs: readonly number[], slow: readonly number[] = []) =>
  Array.from({ length: n }, (_, i) =>
    thread("x".repeat(i % 7), hangs.includes(i) ? { hang: true } : slow.includes(i) ? { slow: true } : {}),
  );
const isDeadline = (o: GradeOutcome) => "abstained" in o && o.abstained.code === "DEADLINE_EXCEEDED";

/** Every outcome is the right score or a DEADLINE_EXCEEDED abstention, and every hanging item abstains; the scored count. */
function check(outcomes: GradeOutcome[], n: number, hangs: readonly number[]): number {
  assert.equal(outcomes.length, n);
  let scored = 0;
  for (const [i, o] of outcomes.entries()) {
    if ("score" in o) {
      assert.equal(o.score, i % 7, `item ${i}`);
      scored++;
    } else assert.ok(isDeadline(o), `item ${i}: ${JSON.stringify(o)}`);
  }
  for (const i of hangs) assert.ok(isDeadline(outcomes[i]), `hanging item ${i} abstains`);
  return scored;
}

describe("deadlines through the pool", () => {
  let pool: SandboxPool;
  const faults: string[] = [];
  const exits: unknown[] = [];
  let hang: { id: string; project: string; compiled: string };
  let healthy: { id: string; project: string; compiled: string };
  const trust = () => (pool as unknown as { scheduler: Scheduler }).scheduler.trust;

  before(async () => {
    pool = new SandboxPool({ size: 2, limits });
    pool.on("graderFault", (id: string, reason: string) => faults.push(`${id}: ${reason}`));
    pool.on("workerExit", (e: unknown) => exits.push(e));
    await pool.start();
    const a = await pool.validate("p", HANG);
    const b = await pool.validate("p", "async function grade(t) { return t.completion() === 'yes' ? 1 : 0 }");
    assert.ok(a.ok && b.ok);
    hang = { id: "hang", project: "p", compiled: a.compiled };
    healthy = { id: "healthy", project: "p", compiled: b.compiled };
  });
  after(() => pool.close());

  const run = async (hangs: readonly number[], ms: number) => {
    const deadlineAt = Date.now() + ms;
    const outcomes = await pool.gradeBatch(hang, batchOf(1000, hangs), { deadlineAt });
    const late = Date.now() - deadlineAt;
    const scored = check(outcomes, 1000, hangs);
    return { late, scored };
  };

  test("a batch of 1,000 with 5 items that hang scores the other 995 by its deadline: the 5 abstain, nobody blamed", async () => {
    const hangs = [150, 400, 550, 700, 900];
    const { late, scored } = await run(hangs, DEADLINE_MS);
    console.log(`new grader (one worker): answered ${late} ms after the deadline, ${scored} of 1000 scored`);
    // each hanging item is set aside at its call's cap and retried after the rest: it alone abstains
    assert.equal(scored, 995);
    assert.deepEqual(faults, [], "no graderFault");
    assert.deepEqual(exits, [], "no worker died");
    assert.equal(pool.restarts, 0);
    // the workers were freed: another grader's batch grades fully, and so does this one's clean input
    const next = await pool.gradeBatch(
      healthy,
      Array.from({ length: 300 }, (_, i) => thread(i % 2 ? "yes" : "no")),
    );
    assert.deepEqual(
      next.map((o) => ("score" in o ? o.score : o)),
      Array.from({ length: 300 }, (_, i) => i % 2),
    );
    const clean = await pool.gradeBatch(hang, batchOf(50, []), { deadlineAt: Date.now() + 60_000 });
    assert.equal(check(clean, 50, []), 50, "a deadline far off changes nothing");
  });

  test("a trusted grader stays trusted after its deadline stops calls, and its split batch answers in part from every worker", async () => {
    for (let i = 0; i < TRUST_AFTER_JOBS; i++) await pool.gradeBatch(hang, batchOf(3, []));
    assert.ok(trust().trusted("hang"), "trusted before");
    const hangs = [100, 300, 500, 700, 900];
    const { late, scored } = await run(hangs, DEADLINE_MS);
    console.log(`trusted grader (split across 2 workers): answered ${late} ms after the deadline, ${scored} of 1000 scored`);
    assert.equal(scored, 995);
    assert.ok(trust().trusted("hang"), "still trusted: a stop by a cap or the deadline is not the grader's fault");
    assert.deepEqual(faults, []);
    assert.deepEqual(exits, []);
    const next = await pool.gradeBatch(
      healthy,
      Array.from({ length: 300 }, () => thread("yes")),
    );
    assert.equal(next.filter((o) => "score" in o && o.score === 1).length, 300);
  });

  test("a slow but sound item past its call's cap is set aside and scores on its retry, as does the rest; the hanging one abstains", async () => {
    const v = await pool.validate("p", SLOW);
    assert.ok(v.ok);
    const slow = { id: "slow", project: "p", compiled: v.compiled };
    // retries run one at a time in order, so the slow items come before the one that hangs till the deadline
    const hangs = [150];
    const outcomes = await pool.gradeBatch(slow, batchOf(200, hangs, [10, 60]), { deadlineAt: Date.now() + DEADLINE_MS });
    assert.equal(check(outcomes, 200, hangs), 199);
    assert.deepEqual(faults, []);
    assert.deepEqual(exits, []);
    // without a deadline nothing is capped: the slow items score in their first call
    assert.equal(check(await pool.gradeBatch(slow, batchOf(20, [], [3, 4])), 20, []), 20);
  });

  test("a deadline already past abstains every thread at once, and one that comes while the batch waits drops it from the queue", async () => {
    const past = await pool.gradeBatch(healthy, [thread("yes"), thread("no")], { deadlineAt: Date.now() - 1 });
    assert.ok(past.every(isDeadline), JSON.stringify(past));
    // both workers busy with hanging batches until their deadlines (40 hanging items: capped calls of at least 25 ms
    // each fill the first pass past the deadline); a third batch waits in the queue past its own
    const allHang = Array.from({ length: 40 }, (_, i) => i);
    const busy = [0, 1].map(() => pool.gradeBatch(hang, batchOf(40, allHang), { deadlineAt: Date.now() + 1200 }));
    const queued = await pool.gradeBatch(healthy, [thread("yes")], { deadlineAt: Date.now() + 300 });
    assert.ok(isDeadline(queued[0]), JSON.stringify(queued));
    for (const outcomes of await Promise.all(busy)) assert.ok(outcomes.every(isDeadline));
    assert.deepEqual(faults, []);
    assert.deepEqual(exits, []);
  });

  test("a Python grader under a deadline: the hanging item abstains, every other one scores", async () => {
    const py = { id: "hang-py", project: "p", language: "python" as const, compiled: HANG_PY };
    // the first Python request of a worker boots its interpreter template (seconds): not under a deadline here
    assert.equal(check(await pool.gradeBatch(py, batchOf(20, [])), 20, []), 20);
    const hangs = [60];
    const deadlineAt = Date.now() + DEADLINE_MS;
    const outcomes = await pool.gradeBatch(py, batchOf(200, hangs), { deadlineAt });
    const scored = check(outcomes, 200, hangs);
    console.log(`Python: answered ${Date.now() - deadlineAt} ms after the deadline, ${scored} of 200 scored`);
    // set aside at its cap, its interpreter replaced by a fresh one for the items after it
    assert.equal(scored, 199);
    assert.deepEqual(faults, []);
    assert.deepEqual(exits, []);
    // its isolate was disposed after the stop: the next batch restores a fresh interpreter and grades fully
    assert.equal(check(await pool.gradeBatch(py, batchOf(30, [])), 30, []), 30);
  });

  test("a Python grader whose interpreter cannot start before the deadline abstains (no error, no fault)", async () => {
    // a new grader: its isolate is restored from the template, which the deadline cuts short
    const py = { id: "cold-py", project: "p", language: "python" as const, compiled: HANG_PY };
    const outcomes = await pool.gradeBatch(py, batchOf(10, []), { deadlineAt: Date.now() + 60 });
    assert.ok(outcomes.every(isDeadline), JSON.stringify(outcomes));
    assert.deepEqual(faults, []);
    assert.deepEqual(exits, []);
    assert.equal(check(await pool.gradeBatch(py, batchOf(10, [])), 10, []), 10, "then it grades");
  });
});

describe("deadlines in the engine", () => {
  const engine = new Engine(limits);
  after(() => engine.dispose());

  test("a slice stops at its deadline with what it finished: no culprit hunt, no error, the isolate rebuilt", async () => {
    const v = await engine.validate(HANG);
    assert.ok(v.ok);
    const grader = { id: "e-hang", project: "t", compiled: v.compiled };
    const batch = packBatch(batchOf(100, [40, 41]));
    const options = { single: false, sliceMs: 10_000, limitsInARow: 0, end: 100 };
    const result = engine.gradeSlice(grader, batch, 0, { ...options, deadlineAt: Date.now() + 400 });
    assert.equal(result.deadline, true);
    assert.equal(result.outcomes.length, 40, "the items before the hang, salvaged from the call the deadline cut");
    assert.ok(result.outcomes.every((o, i) => "score" in o && o.score === i % 7));
    // a deadline already past starts nothing
    const none = engine.gradeSlice(grader, batch, 42, { ...options, deadlineAt: Date.now() - 1 });
    assert.deepEqual(none, { outcomes: [], deadline: true });
    // the rest grades in a fresh isolate
    const rest = engine.gradeSlice(grader, batch, 42, options);
    assert.equal(rest.outcomes.length, 58);
    assert.equal(rest.deadline, undefined);
  });

  const slowGrader = async (id: string, source: string) => {
    const v = await engine.validate(source);
    assert.ok(v.ok);
    return { id, project: "t", compiled: v.compiled };
  };
  const scoresOf = (outcomes: GradeOutcome[]) => outcomes.map((o) => ("score" in o ? o.score : JSON.stringify(o)));

  test("with setAside, a unit its call's cap stops is set aside and the slice goes on; its retry alone is uncapped", async () => {
    const grader = await slowGrader("e-slow", SLOW);
    const batch = packBatch(batchOf(100, [40], [70]));
    const options = { single: false, sliceMs: 10_000, limitsInARow: 0, end: 100, setAside: true };
    const result = engine.gradeSlice(grader, batch, 0, { ...options, deadlineAt: Date.now() + 3000 });
    assert.deepEqual(result.deferred, [40, 70]);
    assert.equal(result.deadline, undefined, "the slice finished before its deadline");
    assert.deepEqual(
      scoresOf(result.outcomes),
      Array.from({ length: 100 }, (_, i) => i % 7).filter((_, i) => i !== 40 && i !== 70),
    );
    // the retries: one unit, no cap; the slow one scores, the hanging one is stopped by the deadline
    const retry = { single: true, sliceMs: 10_000, limitsInARow: 0 };
    const slow = engine.gradeSlice(grader, batch, 70, { ...retry, end: 71, deadlineAt: Date.now() + 2000 });
    assert.deepEqual(slow, { outcomes: [{ score: 0 }] });
    const hung = engine.gradeSlice(grader, batch, 40, { ...retry, end: 41, deadlineAt: Date.now() + 300 });
    assert.deepEqual(hung, { outcomes: [], deadline: true });
    // without a deadline setAside means nothing: nothing is capped
    const calm = engine.gradeSlice(grader, packBatch(batchOf(10, [], [5])), 0, { ...options, end: 10 });
    assert.equal(calm.deferred, undefined);
    assert.equal(calm.outcomes.length, 10);
  });

  test("with groups, a whole group is set aside: a thread grader's stopped inside it, and a group grader's", async () => {
    const grader = await slowGrader("e-slow-groups", SLOW);
    const groups = Array(25).fill(4);
    const batch = packBatch(batchOf(100, [41]), groups);
    const options = { single: false, sliceMs: 10_000, limitsInARow: 0, end: 100, setAside: true };
    const result = engine.gradeSlice(grader, batch, 0, { ...options, deadlineAt: Date.now() + 3000 });
    assert.deepEqual(result.deferred, [40, 41, 42, 43], "item 40 finished before the hang, and is set aside with its group");
    assert.equal(result.outcomes.length, 96);
    const group = await slowGrader(
      "e-hang-group",
      "export async function gradeGroup(ts: StringThread[]) { if (ts.some((t) => t.metadata.hang)) for (;;) {} return ts.map(() => 1) }",
    );
    const g = engine.gradeSlice(group, batch, 0, { ...options, deadlineAt: Date.now() + 3000 });
    assert.deepEqual(g.deferred, [40, 41, 42, 43]);
    assert.deepEqual(scoresOf(g.outcomes), Array(96).fill(1));
  });
});

describe("what the pool accepts of items set aside", () => {
  const groups = new Map([
    [0, true],
    [1, false],
    [2, false],
    [3, true],
    [4, true],
    [5, false],
    [6, true],
  ]);
  // units: [0,1,2] [3] [4,5] [6…]
  const isStart = (i: number) => groups.get(i) ?? true;

  test("whole units, ascending, within what the slice covered: anything else is malformed", () => {
    assert.deepEqual(checkedAside([0, 1, 2], 0, 10, 3, isStart), [0, 1, 2]);
    assert.deepEqual(checkedAside([3, 4, 5], 0, 10, 3, isStart), [3, 4, 5]);
    assert.deepEqual(checkedAside([], 0, 10, 3, isStart), []);
    for (const bad of [
      [0, 1], // part of a group
      [1, 2], // starts inside a group
      [0, 1, 2, 4], // ends inside a group
      [3, 3],
      [4, 5, 3],
      [3.5],
      ["3"],
      [-1],
      [7], // past what it covered (3 outcomes + 1 set aside from 0: items 0–3)
      [3, 20],
      Array(11).fill(3), // more than the slice may cover
      "3",
      { length: 1, 0: 3 },
    ]) {
      assert.equal(checkedAside(bad, 0, 10, 3, isStart), undefined, JSON.stringify(bad));
    }
    assert.equal(checkedAside([3], 4, 10, 3, isStart), undefined, "before the slice's first item");
    // together with the outcomes: what they cover ends where a unit does, and not past the slice
    assert.ok(wellFormedSlice([{ score: 1 }, { score: 1 }], 10, isStart, 1, 1));
    assert.ok(!wellFormedSlice([{ score: 1 }], 10, isStart, 1, 1), "ends inside a group");
    assert.ok(
      wellFormedSlice([], 10, () => true, 1, 1),
      "a slice may set aside its only unit",
    );
    assert.ok(!wellFormedSlice([{ score: 1 }, { score: 1 }], 2, isStart, 1, 1), "more than it may cover");
  });

  test("a unit set aside neither counts towards the limits in a row nor breaks the row", () => {
    const timeout = { error: { code: "GRADER_TIMEOUT" as const, message: "t" } };
    const task = gradeTask({ id: "g", project: "p", compiled: "" }, packBatch(batchOf(4, [])), () => {});
    task.outcomes.push(timeout, timeout, { abstained: { code: "DEADLINE_EXCEEDED", reason: "set aside" } }, timeout);
    assert.equal(limitsAtEnd(task), 1);
    task.aside.push(2);
    assert.equal(limitsAtEnd(task), 3);
  });
});
