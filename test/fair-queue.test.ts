// The pool's fairness, apart from any process (sandbox/host/fair-queue.ts, trust.ts): per-project
// queues served round-robin, each project's share of the workers while others wait, and the
// rule that graders not yet trusted together leave one worker free.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FairQueue, fairShare, type Occupancy } from "../sandbox/host/fair-queue.ts";
import { HEALTH_MAX, SUSPECT_MS, TRUST_AFTER_JOBS, Trust } from "../sandbox/host/trust.ts";

interface Job {
  project: string;
  name: string;
  trusted: boolean;
}

const job = (project: string, name: string, trusted = true): Job => ({ project, name, trusted });
const jobs = (project: string, n: number, trusted = true) =>
  Array.from({ length: n }, (_, i) => job(project, `${project}${i + 1}`, trusted));
const names = (taken: Array<Job | undefined>) => taken.map((t) => t?.name);

/**
 * Workers take jobs the way the scheduler hands them out: while a worker is idle, the first job
 * the fair-share rule accepts. Nothing finishes, so the result is who holds the workers once
 * no queued job may start.
 */
function fill(queue: FairQueue<Job>, workers: number, size = workers, running: Job[] = []): Job[] {
  const taken = [...running];
  while (taken.length < workers) {
    const busy = new Map<string, number>();
    for (const t of taken) busy.set(t.project, (busy.get(t.project) ?? 0) + 1);
    const now: Occupancy = { workers, size, busy, untrustedBusy: taken.filter((t) => !t.trusted).length };
    const next = queue.take((t, waiting) => fairShare(t.project, t.trusted, waiting, now));
    if (!next) break;
    taken.push(next);
  }
  return taken.slice(running.length);
}

const held = (taken: Job[]) => {
  const by: Record<string, number> = {};
  for (const t of taken) by[t.project] = (by[t.project] ?? 0) + 1;
  return by;
};

describe("FairQueue", () => {
  test("serves projects round-robin, each project's jobs in order", () => {
    const q = new FairQueue<Job>();
    for (const j of [...jobs("a", 3), ...jobs("b", 2), ...jobs("c", 1)]) q.push(j);
    assert.equal(q.size, 6);
    const all = () => true;
    assert.deepEqual(names(Array.from({ length: 7 }, () => q.take(all))), ["a1", "b1", "c1", "a2", "b2", "a3", undefined]);
    assert.equal(q.size, 0);
  });

  test("a project none of whose jobs may start keeps its turn; the next project is served", () => {
    const q = new FairQueue<Job>();
    for (const j of [...jobs("a", 2), ...jobs("b", 2)]) q.push(j);
    assert.equal(q.take((t) => t.project === "b")?.name, "b1");
    // a was passed over, not sent to the back: it is first again
    assert.equal(q.take(() => true)?.name, "a1");
    assert.equal(q.take(() => true)?.name, "b2");
  });

  test("the first job of a project that may start is taken, not only its head", () => {
    const q = new FairQueue<Job>();
    for (const j of jobs("a", 3)) q.push(j);
    assert.equal(q.take((t) => t.name !== "a1")?.name, "a2");
    assert.deepEqual(names([q.take(() => true), q.take(() => true)]), ["a1", "a3"]);
  });

  test("the rule sees the projects with queued jobs, in serving order", () => {
    const q = new FairQueue<Job>();
    for (const j of [job("a", "a1"), job("b", "b1"), job("a", "a2")]) q.push(j);
    const seen: string[][] = [];
    q.take((_, waiting) => {
      seen.push([...waiting]);
      return true;
    });
    q.take((_, waiting) => {
      seen.push([...waiting]);
      return true;
    });
    assert.deepEqual(seen, [
      ["a", "b"],
      ["b", "a"],
    ]);
  });

  test("drain hands back every queued job and empties the queue", () => {
    const q = new FairQueue<Job>();
    for (const j of [...jobs("a", 2), ...jobs("b", 1)]) q.push(j);
    assert.deepEqual(names(q.drain()).sort(), ["a1", "a2", "b1"]);
    assert.equal(q.size, 0);
    assert.equal(
      q.take(() => true),
      undefined,
    );
  });
});

describe("fair share", () => {
  test("a project alone may use every worker", () => {
    const q = new FairQueue<Job>();
    for (const j of jobs("a", 6)) q.push(j);
    assert.deepEqual(held(fill(q, 4)), { a: 4 });
  });

  test("while another project waits, each holds at most workers ÷ projects with work", () => {
    const q = new FairQueue<Job>();
    for (const j of [...jobs("a", 6), ...jobs("b", 6)]) q.push(j);
    assert.deepEqual(held(fill(q, 4)), { a: 2, b: 2 });
  });

  test("the share is at least one worker, even with more projects than workers", () => {
    const q = new FairQueue<Job>();
    for (const p of ["a", "b", "c"]) for (const j of jobs(p, 3)) q.push(j);
    // floor(4 / 3) = 1 each while the others wait: the fourth worker stays idle rather than
    // letting one project hold two while the others queue
    assert.deepEqual(held(fill(q, 4)), { a: 1, b: 1, c: 1 });
    const q2 = new FairQueue<Job>();
    for (const p of ["a", "b", "c"]) for (const j of jobs(p, 3)) q2.push(j);
    assert.deepEqual(held(fill(q2, 2)), { a: 1, b: 1 });
  });

  test("projects busy but with nothing queued count towards the share, not towards waiting", () => {
    // b holds 3 of 4 workers and queues nothing: a, alone in the queue, takes the last one
    const q = new FairQueue<Job>();
    for (const j of jobs("a", 3)) q.push(j);
    assert.deepEqual(held(fill(q, 4, 4, jobs("b", 3))), { a: 1 });
    // with c waiting too, a and c share what the three projects divide: floor(4 / 3) = 1 each
    const q2 = new FairQueue<Job>();
    for (const j of [...jobs("a", 3), ...jobs("c", 3)]) q2.push(j);
    assert.deepEqual(held(fill(q2, 4, 4, jobs("b", 1))), { a: 1, c: 1 });
  });

  test("the rule itself: over its share only while another project waits", () => {
    const now: Occupancy = { workers: 4, size: 4, busy: new Map([["a", 2]]), untrustedBusy: 0 };
    assert.equal(fairShare("a", true, ["a", "b"], now), false);
    assert.equal(fairShare("a", true, ["a"], now), true);
    assert.equal(fairShare("b", true, ["a", "b"], now), true);
  });
});

describe("graders not yet trusted", () => {
  test("together hold at most all workers but one; a trusted grader still gets the last", () => {
    const q = new FairQueue<Job>();
    for (const j of jobs("a", 6, false)) q.push(j);
    const taken = fill(q, 4);
    assert.equal(taken.length, 3, "one worker stays free");
    q.push(job("a", "trusted", true));
    assert.deepEqual(names(fill(q, 4, 4, taken)), ["trusted"]);
  });

  test("across projects too", () => {
    const q = new FairQueue<Job>();
    for (const j of [...jobs("a", 4, false), ...jobs("b", 4, false), ...jobs("c", 4, false)]) q.push(j);
    // each project's share is floor(9 / 3) = 3, but together they may hold only 8
    assert.equal(fill(q, 9).length, 8);
  });

  test("a pool of one worker lets an untrusted grader use it", () => {
    const q = new FairQueue<Job>();
    for (const j of jobs("a", 2, false)) q.push(j);
    assert.equal(fill(q, 1).length, 1);
  });

  test("while a worker is being replaced the untrusted get fewer, never the last one", () => {
    const q = new FairQueue<Job>();
    for (const j of jobs("a", 6, false)) q.push(j);
    // a pool of 4 with one worker being replaced: 3 ready, the untrusted may hold 2
    assert.equal(fill(q, 3, 4).length, 2);
    // a pool of 2 down to 1 ready worker: the untrusted get none of it
    const q2 = new FairQueue<Job>();
    for (const j of jobs("a", 2, false)) q2.push(j);
    assert.equal(fill(q2, 1, 2).length, 0);
  });
});

describe("Trust", () => {
  test(`a grader is trusted after ${TRUST_AFTER_JOBS} clean jobs, and not for ${SUSPECT_MS / 60_000} minutes after a fault`, () => {
    let clock = 1_000_000_000;
    const trust = new Trust(() => clock);
    assert.equal(trust.trusted("g"), false, "a new grader");
    assert.equal(trust.trusted(undefined), false);
    for (let i = 0; i < TRUST_AFTER_JOBS - 1; i++) trust.note("g", false);
    assert.equal(trust.trusted("g"), false);
    trust.note("g", false);
    assert.equal(trust.trusted("g"), true);

    trust.note("g", true);
    assert.equal(trust.trusted("g"), false, "a fault starts the count again");
    for (let i = 0; i < TRUST_AFTER_JOBS; i++) trust.note("g", false);
    assert.equal(trust.trusted("g"), false, "clean jobs right after a fault are not enough");
    clock += SUSPECT_MS;
    assert.equal(trust.trusted("g"), false);
    clock += 1;
    assert.equal(trust.trusted("g"), true);

    trust.forget("g");
    assert.equal(trust.trusted("g"), false, "a forgotten grader starts again");
  });

  test(`at most ${HEALTH_MAX} graders are remembered: the one heard from longest ago goes first`, () => {
    const trust = new Trust(() => 1_000_000_000);
    for (let i = 0; i < TRUST_AFTER_JOBS; i++) {
      trust.note("first", false);
      trust.note("second", false);
    }
    for (let i = 0; i < HEALTH_MAX - 2; i++) trust.note(`g${i}`, false);
    trust.note("first", false); // heard from again: now the most recent
    trust.note("one more", false);
    assert.equal(trust.trusted("first"), true);
    assert.equal(trust.trusted("second"), false, "dropped to make room");
  });
});
