// Group graders (gradeGroup) through the real pool and worker processes: each group arrives whole,
// in one call, and gets one result per thread; a group is never split across workers, slices or
// calls; what a group call does wrong costs the group and nobody else. Then the host's culprit
// logic with groups, on its own.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SandboxPool } from "../sandbox/host/pool.ts";
import { checkedValidation, wellFormedSlice } from "../sandbox/host/replies.ts";
import { contain, gradeTask, limitsAtEnd, sliceEnd } from "../sandbox/host/tasks.ts";
import { packBatch } from "../sandbox/protocol/batch.ts";
import type { GraderCode } from "../sandbox/protocol/requests.ts";
import type { GradeOutcome } from "../sandbox/validate/checks.ts";
import { groupSummary, majorityAgreement, rankInGroup, relativeLength } from "../sdk/graders.ts";
import { thread } from "./support/helpers.ts";

const limits = { timeoutMs: 400, memoryMb: 64, maxWarm: 16, maxWarmHeapMb: 512 };
let pool: SandboxPool;
let graders = 0;

before(async () => {
  pool = new SandboxPool({ size: 2, limits });
  await pool.start();
});
after(() => pool.close());

async function compile(source: string): Promise<GraderCode & { shape?: string }> {
  const result = await pool.validate("p", source);
  assert.ok(result.ok, JSON.stringify(result));
  return { id: `group-${++graders}`, project: "p", compiled: result.compiled, shape: result.shape };
}

const scores = (outcomes: GradeOutcome[]) => outcomes.map((o) => ("score" in o ? o.score : o));

/** A deterministic shuffle: the same completions in a different order per group. */
function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let x = seed;
  for (let i = out.length - 1; i > 0; i--) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    const j = x % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

describe("group graders", () => {
  test("rank within group: 6 real groups of 8, each ranked against its own completions", async () => {
    const grader = await compile(`
      import { rankInGroup } from "gradebox/graders";
      export async function gradeGroup(threads: StringThread[]) {
        // the reward: how close the completion's number is to the prompt's target, ranked in the group
        const closeness = threads.map((t) => -Math.abs(Number(t.completion()) - Number(t.metadata.target ?? 0)));
        return rankInGroup(closeness).map((score, i) => ({ score, metadata: { closeness: closeness[i], n: threads.length } }));
      }`);
    assert.equal(grader.shape, "group");
    const groups: Array<{ target: number; answers: number[] }> = [];
    const threads = [];
    for (let g = 0; g < 6; g++) {
      const target = 10 * g;
      // eight distinct distances from the target, in an order of their own per group
      const answers = shuffled(
        [0, 1, -2, 3, -4, 5, 6, -7].map((d) => target + d),
        g + 1,
      );
      groups.push({ target, answers });
      for (const a of answers) threads.push(thread(String(a), { target }));
    }
    const outcomes = await pool.gradeBatch(grader, threads, { groups: groups.map(() => 8) });
    assert.equal(outcomes.length, 48);
    groups.forEach(({ target, answers }, g) => {
      // rank by distance: the closest 1, the farthest 0, evenly between
      const byDistance = [...answers].sort((a, b) => Math.abs(a - target) - Math.abs(b - target));
      answers.forEach((a, i) => {
        const o = outcomes[g * 8 + i];
        assert.ok("score" in o, JSON.stringify(o));
        assert.equal(o.score, (7 - byDistance.indexOf(a)) / 7, `group ${g}, answer ${a}`);
        assert.equal(o.metadata?.n, 8);
      });
    });
  });

  test("a group is never split: 96 groups of 1 to 9 over a batch the pool splits across both workers, sliced", async () => {
    const grader = await compile(`
      let calls = 0;
      export async function gradeGroup(threads: StringThread[]) {
        calls++;
        // a few ms per group, so that the batch takes several slices on each worker
        const end = Date.now() + 6;
        while (Date.now() < end) {}
        return threads.map((t) => ({ score: threads.length, metadata: { call: calls, first: threads[0].metadata.i } }));
      }`);
    // trust comes after clean jobs: until then a batch is not split across workers
    for (let i = 0; i < 20; i++) await pool.gradeBatch(grader, [thread("x", { i: 0 })], { groups: [1] });
    const sizes = Array.from({ length: 96 }, (_, g) => 1 + (g % 9));
    const threads = sizes.flatMap((size, g) => Array.from({ length: size }, () => thread("x", { i: g })));
    const before = await pool.stats();
    const outcomes = await pool.gradeBatch(grader, threads, { groups: sizes });
    const after = await pool.stats();
    assert.ok(
      after.every((w, k) => w.isolateCpuUs > before[k].isolateCpuUs),
      "both workers graded part of the batch (it was split)",
    );
    let at = 0;
    const calls = new Set<string>();
    sizes.forEach((size, g) => {
      const group = outcomes.slice(at, at + size);
      const metadata = group.map((o) => ("metadata" in o ? o.metadata : undefined));
      for (const o of group) {
        assert.ok("score" in o, JSON.stringify(o));
        assert.equal(o.score, size, `group ${g} arrived whole`);
        assert.deepEqual(o.metadata, metadata[0], `group ${g} was graded in one call`);
        assert.equal(o.metadata?.first, g);
      }
      calls.add(JSON.stringify(metadata[0]));
      at += size;
    });
    assert.equal(calls.size, sizes.length, "one call per group");
  });

  test("a grader with grade and gradeGroup: groups go to gradeGroup, a batch without groups to grade", async () => {
    const grader = await compile(`
      async function grade(thread: StringThread): Promise<number> { return 1 }
      async function gradeGroup(threads: StringThread[]) { return threads.map(() => 2) }`);
    assert.equal(grader.shape, "both");
    const threads = [thread("a"), thread("b"), thread("c")];
    assert.deepEqual(scores(await pool.gradeBatch(grader, threads, { groups: [2, 1] })), [2, 2, 2]);
    assert.deepEqual(scores(await pool.gradeBatch(grader, threads)), [1, 1, 1]);
  });

  test("a grader without gradeGroup given groups grades each thread with grade", async () => {
    const grader = await compile("async function grade(thread: StringThread): Promise<number> { return thread.completion().length }");
    assert.equal(grader.shape, "thread");
    assert.deepEqual(scores(await pool.gradeBatch(grader, [thread("a"), thread("bb"), thread("ccc")], { groups: [1, 2] })), [1, 2, 3]);
  });

  test("a group-only grader without groups answers every thread with an error saying so", async () => {
    const grader = await compile("export async function gradeGroup(threads: StringThread[]) { return threads.map(() => 1) }");
    const outcomes = await pool.gradeBatch(grader, [thread("a"), thread("b")]);
    for (const o of outcomes) {
      assert.ok("error" in o && o.error.code === "GRADER_ERROR", JSON.stringify(o));
      assert.match(o.error.message, /grades groups only .*grade it with groups/);
    }
    // its validation's own samples are graded as groups of one, as the sample thread is
    const validated = await pool.validate("p", "export async function gradeGroup(threads) { return threads.map((t) => threads.length) }", [
      thread("a"),
      thread("b"),
    ]);
    assert.ok(validated.ok);
    assert.deepEqual(validated.results, [{ score: 1 }, { score: 1 }]);
  });

  test("what a group call does wrong costs its group alone: wrong lengths, not an array, a throw, null items, a timeout", async () => {
    const grader = await compile(`
      import { Abstain } from "gradebox/graders";
      export async function gradeGroup(threads: StringThread[]) {
        const how = threads[0].completion();
        if (how === "short") return threads.slice(1).map(() => 1);
        if (how === "long") return [...threads, threads[0]].map(() => 1);
        if (how === "number") return 1;
        if (how === "throw") throw new TypeError("bad group");
        if (how === "abstain") throw new Abstain("the whole group");
        if (how === "spin") for (;;) {}
        if (how === "hang") return new Promise(() => {});
        if (how === "mixed") return [0.5, null, new Abstain("this one"), { score: 2, reason: "r" }];
        if (how === "getter") return Object.defineProperty([1, 1], 1, { get() { throw new RangeError("element") } });
        return threads.map(() => 1);
      }`);
    const kinds = ["ok", "short", "long", "number", "throw", "abstain", "spin", "ok", "hang", "mixed", "getter", "ok"];
    const threads = kinds.flatMap((how) => [thread(how), thread(how), thread(how), thread(how)].slice(0, how === "getter" ? 2 : 4));
    const sizes = kinds.map((how) => (how === "getter" ? 2 : 4));
    const outcomes = await pool.gradeBatch(grader, threads, { groups: sizes });
    const byGroup: GradeOutcome[][] = [];
    let at = 0;
    for (const size of sizes) {
      byGroup.push(outcomes.slice(at, at + size));
      at += size;
    }
    const codes = (group: GradeOutcome[]) => group.map((o) => ("error" in o ? o.error.code : "abstained" in o ? "abstained" : o.score));
    const messageOf = (o: GradeOutcome) => ("error" in o ? o.error.message : "");
    assert.deepEqual(codes(byGroup[0]), [1, 1, 1, 1]);
    assert.deepEqual(codes(byGroup[1]), Array(4).fill("INVALID_SCORE"));
    assert.match(messageOf(byGroup[1][0]), /returned 3 results for a group of 4 threads/);
    assert.match(messageOf(byGroup[2][0]), /returned 5 results for a group of 4 threads/);
    assert.deepEqual(codes(byGroup[3]), Array(4).fill("INVALID_SCORE"));
    assert.match(messageOf(byGroup[3][0]), /must resolve to an array of 4 results/);
    assert.deepEqual(codes(byGroup[4]), Array(4).fill("GRADER_ERROR"));
    assert.match(messageOf(byGroup[4][3]), /TypeError: bad group/);
    assert.deepEqual(byGroup[5], Array(4).fill({ abstained: { code: "GRADER_ABSTAINED", reason: "the whole group" } }));
    assert.deepEqual(codes(byGroup[6]), Array(4).fill("GRADER_TIMEOUT"), "the per-call time limit holds per group call");
    assert.deepEqual(codes(byGroup[7]), [1, 1, 1, 1], "the group after a timed-out one is graded");
    assert.deepEqual(codes(byGroup[8]), Array(4).fill("GRADER_TIMEOUT"));
    assert.deepEqual(byGroup[9], [
      { score: 0.5 },
      { abstained: { code: "GRADER_ABSTAINED", reason: "gradeGroup returned null" } },
      { abstained: { code: "GRADER_ABSTAINED", reason: "this one" } },
      { score: 2, reason: "r" },
    ]);
    assert.deepEqual(codes(byGroup[10]), ["GRADER_ERROR", "GRADER_ERROR"]);
    assert.match(messageOf(byGroup[10][0]), /RangeError: element/);
    assert.deepEqual(codes(byGroup[11]), [1, 1, 1, 1]);
  });

  test("a group that takes its worker down fails as a whole; the groups around it are graded", async () => {
    const grader = await compile(`
      export async function gradeGroup(threads: StringThread[]) {
        if (threads.some((t) => t.metadata.boom)) new Array(6e7).fill(0);
        return threads.map(() => 1);
      }`);
    const threads = [0, 1, 2].flatMap((g) => Array.from({ length: 4 }, (_, i) => thread("x", g === 1 && i === 2 ? { boom: true } : {})));
    const restarts = pool.restarts;
    const outcomes = await pool.gradeBatch(grader, threads, { groups: [4, 4, 4] });
    assert.deepEqual(scores(outcomes.slice(0, 4)), [1, 1, 1, 1]);
    assert.deepEqual(scores(outcomes.slice(8)), [1, 1, 1, 1]);
    for (const o of outcomes.slice(4, 8)) assert.ok("error" in o && o.error.code === "GRADER_MEMORY_LIMIT", JSON.stringify(o));
    // the watchdog took the worker down under the group's call: the verdict named one thread, the culprit is its group
    assert.ok(pool.restarts > restarts, "the group's worker was replaced");
  });

  test("test_run grades a group-only grader's sample thread as a group of one", async () => {
    const result = await pool.validate("p", "export async function gradeGroup(threads) { return threads.length === 1 ? [1] : 'not one' }");
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.shape, "group");
    const refused = await pool.validate("p", "export function gradeGroup(threads) { return [1] }");
    assert.ok(!refused.ok && refused.failure.check === "structure" && /gradeGroup must be async/.test(refused.failure.message));
    const two = await pool.validate("p", "export async function gradeGroup(a, b) { return [1] }");
    assert.ok(!two.ok && two.failure.check === "signature", JSON.stringify(two));
  });

  test("groups that do not cover the threads are refused before any work", async () => {
    const grader = await compile("async function grade(t) { return 1 }");
    await assert.rejects(pool.gradeBatch(grader, [thread("a"), thread("b")], { groups: [1] }), /sum to 1, but there are 2 threads/);
    await assert.rejects(pool.gradeBatch(grader, [thread("a")], { groups: [0, 1] }), /positive integer sizes/);
  });
});

describe("the host's culprit logic with groups", () => {
  const running = (from: number, single: boolean) => ({
    id: 1,
    task: undefined as never,
    sentAt: 0,
    budgetMs: 0,
    from,
    single,
    trusted: true,
  });
  const loss = (verdict?: { from: number; count: number }) => ({
    code: "GRADER_MEMORY_LIMIT" as const,
    message: "boom",
    blamed: true,
    ...(verdict ? { verdict: { verdict: "memory" as const, job: 1, detail: "", ...verdict } } : {}),
  });
  const task = () =>
    gradeTask(
      { id: "g", project: "p", compiled: "" },
      packBatch(
        Array.from({ length: 10 }, () => thread("x")),
        [3, 4, 3],
      ),
      () => {},
    );

  test("a verdict naming one thread of a group makes the whole group the culprit; the slice before it stops at the group", () => {
    const t = task();
    assert.ok(contain(t, loss({ from: 5, count: 1 }), running(0, false)));
    assert.deepEqual([...t.culprits.keys()], [3, 4, 5, 6]);
    assert.equal(sliceEnd(t, 0), 3);
    assert.equal(t.single, false);
  });

  test("a single-unit slice lost without a verdict names its group; a verdict over two groups names nobody", () => {
    const t = task();
    assert.ok(contain(t, loss(), running(7, true)));
    assert.deepEqual([...t.culprits.keys()], [7, 8, 9]);
    const u = task();
    assert.ok(contain(u, loss({ from: 2, count: 3 }), running(0, false)));
    assert.equal(u.culprits.size, 0);
    assert.equal(u.single, true, "one group per slice from here on, so the next death names its group");
  });

  test("a worker's slice must end where a group does; its validation's shape is one of three", () => {
    const t = task();
    const one = { score: 1 };
    const ends = (n: number) => t.units.isStart(t.next + n);
    assert.ok(wellFormedSlice([one, one, one], 10, ends));
    assert.ok(wellFormedSlice(Array(7).fill(one), 10, ends));
    assert.ok(!wellFormedSlice([one, one], 10, ends), "two threads of a group of three");
    assert.ok(!wellFormedSlice(Array(5).fill(one), 10, ends));
    assert.deepEqual(checkedValidation({ ok: true, compiled: "x", warnings: [], shape: "group" }), {
      ok: true,
      compiled: "x",
      warnings: [],
      shape: "group",
    });
    assert.equal(checkedValidation({ ok: true, compiled: "x", warnings: [], shape: "groups" }), undefined);
    assert.equal(checkedValidation({ ok: true, compiled: "x", warnings: [], shape: 1 }), undefined);
  });

  test("limits in a row are counted in groups", () => {
    const t = task();
    const timeout: GradeOutcome = { error: { code: "GRADER_TIMEOUT", message: "t" } };
    t.outcomes.push({ score: 1 }, { score: 1 }, { score: 1 }, timeout, timeout, timeout, timeout);
    assert.equal(limitsAtEnd(t), 1);
    t.outcomes.push(timeout, timeout, timeout);
    assert.equal(limitsAtEnd(t), 2);
  });
});

describe("the group rewards of gradebox/graders", () => {
  test("rankInGroup: normalised ranks, ties averaged, null kept", () => {
    assert.deepEqual(rankInGroup([0.2, 0.9, 0.2, 0.5]), [1 / 6, 1, 1 / 6, 2 / 3]);
    assert.deepEqual(rankInGroup([3]), [0.5]);
    assert.deepEqual(rankInGroup([1, null, 3]), [0, null, 1]);
    assert.deepEqual(rankInGroup([2, 2, 2]), [0.5, 0.5, 0.5]);
    assert.throws(() => rankInGroup([Number.NaN]), RangeError);
  });
  test("majorityAgreement: normalised answers, a tie is no majority", () => {
    assert.deepEqual(majorityAgreement(["4", "four", "4", "5"]), [1, 0, 1, 0]);
    assert.deepEqual(majorityAgreement(["The 4.", "4", null]), [1, 1, 0]);
    assert.deepEqual(majorityAgreement(["a", "b", "a", "b"]), [0, 0, 0, 0]);
    assert.deepEqual(majorityAgreement(["A", "a"], { normalizeText: false }), [0, 0]);
  });
  test("relativeLength: clamp(2 − len/mean, 0, 1)", () => {
    assert.deepEqual(relativeLength(["ab", "abcd", "abcdef"]), [1, 1, 0.5]);
    assert.deepEqual(relativeLength(["", ""]), [1, 1]);
    assert.deepEqual(relativeLength(["a b", "a b c d e f g"], { unit: "words" }), [1, Math.max(0, 2 - 7 / 4.5)]);
  });
  test("groupSummary: best, mean, pass@k, majority@k", () => {
    assert.deepEqual(groupSummary([0, 1, null, 0.5]), { k: 3, best: 1, mean: 0.5 });
    assert.deepEqual(groupSummary([0, 1, 0], { threshold: 1, answers: ["5", "4", "5"] }), {
      k: 3,
      best: 1,
      mean: 1 / 3,
      passAtK: 1,
      majorityAtK: 0,
    });
    assert.equal(groupSummary([1, 0, 1], { threshold: 0.5, answers: ["4", "5", "4"] }).majorityAtK, 1);
    // the batch summary's rule: a tie goes to the answer seen first, and an abstention does not vote
    assert.equal(groupSummary([1, 0], { threshold: 0.5, answers: ["4", "5"] }).majorityAtK, 1);
    assert.equal(groupSummary([0, 1], { threshold: 0.5, answers: ["5", "4"] }).majorityAtK, 0);
    assert.equal(groupSummary([null, null, 1], { threshold: 0.5, answers: ["5", "5", "4"] }).majorityAtK, 1);
    assert.deepEqual(groupSummary([null], { threshold: 0.5 }), { k: 0, best: null, mean: null, passAtK: 0 });
  });
});
