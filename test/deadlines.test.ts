// Batch deadlines in the sandbox (issue 25, point 2): gradeBatch with `deadlineAt` answers by
// then with every finished outcome and DEADLINE_EXCEEDED for the rest; the calls still running
// are stopped (their items abstain, nobody is blamed) and queued slices dropped, so the workers
// are free at once. Real worker processes, real isolates; no timing assertions (the overshoot is
// printed; bench/deadlines.ts measures it).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SandboxPool } from "../sandbox/host/pool.ts";
import type { Scheduler } from "../sandbox/host/scheduler.ts";
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

const batchOf = (n: number, hangs: readonly number[]) =>
  Array.from({ length: n }, (_, i) => thread("x".repeat(i % 7), hangs.includes(i) ? { hang: true } : {}));
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

  test("a batch of 1,000 with 5 items that hang answers at its deadline: scores where finished, DEADLINE_EXCEEDED elsewhere, nobody blamed", async () => {
    const hangs = [150, 400, 550, 700, 900];
    const { late, scored } = await run(hangs, 1500);
    console.log(`new grader (one worker): answered ${late} ms after the deadline, ${scored} of 1000 scored`);
    // how many score depends on the machine's load (the call the deadline stops must reply within
    // the pool's margin for what it finished to count): the engine's test below pins that down
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
    const { late, scored } = await run(hangs, 1500);
    console.log(`trusted grader (split across 2 workers): answered ${late} ms after the deadline, ${scored} of 1000 scored`);
    assert.ok(trust().trusted("hang"), "still trusted: a deadline stop is not the grader's fault");
    assert.deepEqual(faults, []);
    assert.deepEqual(exits, []);
    const next = await pool.gradeBatch(
      healthy,
      Array.from({ length: 300 }, () => thread("yes")),
    );
    assert.equal(next.filter((o) => "score" in o && o.score === 1).length, 300);
  });

  test("a deadline already past abstains every thread at once, and one that comes while the batch waits drops it from the queue", async () => {
    const past = await pool.gradeBatch(healthy, [thread("yes"), thread("no")], { deadlineAt: Date.now() - 1 });
    assert.ok(past.every(isDeadline), JSON.stringify(past));
    // both workers busy with hanging batches until their deadlines; a third batch waits in the queue past its own
    const busy = [0, 1].map(() => pool.gradeBatch(hang, batchOf(4, [0, 1, 2, 3]), { deadlineAt: Date.now() + 1200 }));
    const queued = await pool.gradeBatch(healthy, [thread("yes")], { deadlineAt: Date.now() + 300 });
    assert.ok(isDeadline(queued[0]), JSON.stringify(queued));
    for (const outcomes of await Promise.all(busy)) assert.ok(outcomes.every(isDeadline));
    assert.deepEqual(faults, []);
    assert.deepEqual(exits, []);
  });

  test("a Python grader under a deadline: finished items score, the hanging one and those after it abstain", async () => {
    const py = { id: "hang-py", project: "p", language: "python" as const, compiled: HANG_PY };
    // the first Python request of a worker boots its interpreter template (seconds): not under a deadline here
    assert.equal(check(await pool.gradeBatch(py, batchOf(20, [])), 20, []), 20);
    const hangs = [60];
    const deadlineAt = Date.now() + 1500;
    const outcomes = await pool.gradeBatch(py, batchOf(200, hangs), { deadlineAt });
    const scored = check(outcomes, 200, hangs);
    console.log(`Python: answered ${Date.now() - deadlineAt} ms after the deadline, ${scored} of 200 scored`);
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
});
