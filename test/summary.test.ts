// sdk/summary.ts: a batch's summary, its group statistics, its components and its text
// histogram. Every expected number was worked out by hand (shown beside it).

import assert from "node:assert/strict";
import { test } from "node:test";
import { componentsOf, groupIndexes, histogram, summarize, textHistogram } from "../sdk/summary.ts";

const close = (actual: number | null | undefined, expected: number, what: string) =>
  assert.ok(actual !== null && actual !== undefined && Math.abs(actual - expected) < 1e-12, `${what}: ${actual} ≠ ${expected}`);

const err = { outcome: "error", error: { code: "GRADER_ERROR", message: "x" } };
const abst = { outcome: "abstained", abstained: { code: "GRADER_ABSTAINED", reason: "x" } };

test("counts by outcome, mean, population std, sem, min, max, quantiles by linear interpolation", () => {
  const results = [{ outcome: "scored", score: 3 }, err, { outcome: "scored", score: 1 }, abst, { score: 4 }, { score: 2 }];
  const s = summarize(results);
  assert.equal(s.count, 6);
  assert.deepEqual(s.outcomes, { scored: 4, error: 1, abstained: 1 }, "with or without `outcome`");
  assert.equal(s.mean, 2.5); // (1+2+3+4)/4
  close(s.std, Math.sqrt(1.25), "std"); // (2.25+0.25+0.25+2.25)/4 = 1.25: population, divided by n
  close(s.sem, Math.sqrt(5 / 3) / 2, "sem"); // sample variance 5/3, over √4
  assert.equal(s.min, 1);
  assert.equal(s.max, 4);
  // h = (n-1)·p = 3p: p5 1+0.15, p25 1+0.75, p50 2+0.5, p75 3+0.25, p95 3+0.85
  const q = s.quantiles;
  assert.ok(q);
  close(q.p5, 1.15, "p5");
  close(q.p25, 1.75, "p25");
  close(q.p50, 2.5, "p50");
  close(q.p75, 3.25, "p75");
  close(q.p95, 3.85, "p95");
  assert.equal(s.groups, undefined, "no groups asked");
});

test("no score: every statistic null; one score: sem null (undefined for n = 1), one bin [x, x]", () => {
  assert.deepEqual(summarize([err, abst]), {
    count: 2,
    outcomes: { scored: 0, error: 1, abstained: 1 },
    mean: null,
    std: null,
    sem: null,
    min: null,
    max: null,
    quantiles: null,
    histogram: null,
  });
  assert.deepEqual(summarize([]).outcomes, { scored: 0, error: 0, abstained: 0 });
  const one = summarize([{ score: 0.7 }]);
  assert.deepEqual([one.mean, one.std, one.sem, one.quantiles?.p95], [0.7, 0, null, 0.7]);
  assert.deepEqual(one.histogram, { edges: [0.7, 0.7], counts: [1] });
  assert.deepEqual(summarize([{ score: 2 }, { score: 2 }, { score: 2 }]).histogram, { edges: [2, 2], counts: [3] });
});

test("a scored result without a finite score counts as an error, not as a score", () => {
  const s = summarize([{ outcome: "scored", score: Number.NaN }, { score: "1" }, { score: 1 }]);
  assert.deepEqual([s.outcomes, s.mean], [{ scored: 1, error: 2, abstained: 0 }, 1]);
});

test("histogram: equal bins from min to max, the last holding its upper edge; a score on an edge goes up", () => {
  // min 1, max 4, 3 bins of width 1: [1,2) [2,3) [3,4]
  assert.deepEqual(
    summarize(
      [1, 2, 3, 4].map((score) => ({ score })),
      { bins: 3 },
    ).histogram,
    {
      edges: [1, 2, 3, 4],
      counts: [1, 1, 2],
    },
  );
  // 10 bins on [0, 1]: edges are 0.1, 0.2, 0.3 (not 0.30000000000000004), so 0.3 is in [0.3, 0.4)
  const h = histogram([0, 0.3, 0.7, 1]);
  assert.ok(h);
  assert.deepEqual(h.edges, [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1]);
  assert.deepEqual(h.counts, [1, 0, 0, 1, 0, 0, 0, 1, 0, 1]);
  // scores near ±MAX_VALUE: max - min overflows, the edges stay finite
  const huge = histogram([-Number.MAX_VALUE, 0, Number.MAX_VALUE], 2);
  assert.ok(huge);
  assert.deepEqual(huge.counts, [1, 2]);
  assert.ok(huge.edges.every(Number.isFinite));
  assert.throws(() => histogram([1], 0), RangeError);
  assert.throws(() => summarize([{ score: 1 }], { bins: 1.5 }), /bins must be a whole number/);
});

test("groups: k, meanOfBest and meanOfMeans over groups with a score, passAtK, majorityAtK with ties to the first answer", () => {
  const r = (score: number, answer?: string) => ({ outcome: "scored", score, ...(answer ? { metadata: { answer } } : {}) });
  const results = [
    // group 7: answers A (0.2) and B (0.9) tie 1-1 (the error's B does not vote): A, seen first, wins and is wrong
    r(0.2, "A"),
    r(0.9, "B"),
    { ...err, metadata: { answer: "B" } },
    // group 1: C twice (0.6 and 0.1) against D: C wins, and a C scored 0.6 ≥ 0.5: right
    r(0.6, "C"),
    r(0.1, "C"),
    r(0.3, "D"),
    // group 2: only an abstention: in no mean or share
    abst,
    // group 3: one score without an answer: counts, never right
    r(0.1),
  ];
  const groups = [7, 7, 7, 1, 1, 1, 2, 3];
  const s = summarize(results, { groups, threshold: 0.5, answerKey: "answer" });
  assert.ok(s.groups);
  assert.equal(s.groups.groups, 4);
  assert.equal(s.groups.k, 3);
  close(s.groups.meanOfBest, (0.9 + 0.6 + 0.1) / 3, "meanOfBest");
  close(s.groups.meanOfMeans, ((0.2 + 0.9) / 2 + (0.6 + 0.1 + 0.3) / 3 + 0.1) / 3, "meanOfMeans");
  close(s.groups.passAtK, 2 / 3, "passAtK"); // groups 7 and 1 reach 0.5
  close(s.groups.majorityAtK, 1 / 3, "majorityAtK"); // group 1 only

  // without a threshold neither share; with a threshold only, no majority
  assert.deepEqual(Object.keys(summarize(results, { groups }).groups ?? {}).sort(), ["groups", "k", "meanOfBest", "meanOfMeans"]);
  const pass = summarize(results, { groups, threshold: 0.95 }).groups;
  assert.deepEqual([pass?.passAtK, "majorityAtK" in (pass ?? {})], [0, false]);
  // no group with a score: null, not 0
  assert.deepEqual(summarize([abst, err], { groups: [0, 0], threshold: 1, answerKey: "a" }).groups, {
    groups: 1,
    k: 2,
    meanOfBest: null,
    meanOfMeans: null,
    passAtK: null,
    majorityAtK: null,
  });
  assert.throws(() => summarize(results, { groups: [0, 1] }), /one group index per result \(2 for 8 results\)/);
});

test("componentsOf: named subscores as channels aligned with the results, null where missing", () => {
  const results = [
    {
      outcome: "scored",
      score: 1,
      subscores: [
        { name: "fmt", score: 1 },
        { name: "acc", value: 0.5 },
        { name: "nan", score: Number.NaN },
        "text",
        { name: 3, score: 1 },
        null,
      ],
    },
    err,
    {
      outcome: "scored",
      score: 2,
      subscores: [
        { name: "acc", score: 0.25 },
        { name: "__proto__", score: 2 },
        { name: "acc", score: 9 },
      ],
    },
    { outcome: "scored", score: 0, subscores: "not a list" },
  ];
  const c = componentsOf(results);
  assert.deepEqual(Object.keys(c ?? {}), ["fmt", "acc", "__proto__"]);
  assert.deepEqual(c?.fmt, [1, null, null, null]);
  assert.deepEqual(c?.acc, [0.5, null, 0.25, null], "value when there is no score; the first of a name");
  assert.deepEqual(Object.getOwnPropertyDescriptor(c, "__proto__")?.value, [null, null, 2, null]);
  assert.equal(Object.getPrototypeOf(c), Object.prototype, "a part named __proto__ is a channel, not the prototype");
  // an errored or abstained result's subscores are never read
  assert.equal(componentsOf([{ score: 1 }, { ...err, subscores: [{ name: "x", score: 1 }] }, abst]), undefined);
});

test("groupIndexes: equal values share the first's index; absent or null values are groups of one", () => {
  assert.deepEqual(
    groupIndexes([{ p: "a" }, { p: "b" }, {}, { p: "a" }, undefined, { p: null }, { p: 1 }, { p: "1" }, { p: "b" }], "p"),
    [0, 1, 2, 0, 3, 4, 5, 6, 1],
  );
});

test("textHistogram: a line per bin, bars scaled to the fullest, the last bin closed", () => {
  assert.equal(textHistogram({ edges: [0, 0.5, 1], counts: [1, 3] }, 6), "[0, 0.5)  ██ 1\n[0.5, 1]  ██████ 3");
  assert.equal(
    textHistogram({ edges: [0, 1 / 3, 2 / 3, 1], counts: [100, 0, 1] }, 10),
    "[0, 0.3333)       ██████████ 100\n[0.3333, 0.6667)  0\n[0.6667, 1]       █ 1",
    "an empty bin has no bar; a bin with one score at least one mark",
  );
  assert.equal(textHistogram({ edges: [2, 2], counts: [5] }), `[2, 2]  ${"█".repeat(40)} 5`);
});
