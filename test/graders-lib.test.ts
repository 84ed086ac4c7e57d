// gradebox/graders: every rule of the text helpers, combining and rubric scoring.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  type Criterion,
  combine,
  combineAll,
  combineAny,
  contains,
  containsAll,
  containsAny,
  dedupeNames,
  exactMatch,
  f1Score,
  firstNumber,
  normalize,
  numericMatch,
  scoreRubric,
} from "gradebox/graders";

const close = (actual: number | null, expected: number) => {
  assert.ok(actual !== null && Math.abs(actual - expected) < 1e-12, `${actual} ≈ ${expected}`);
};

describe("normalize", () => {
  for (const [input, expected] of [
    ["The-end", "end"],
    ["A.I. is an A", "i is"],
    ["ÀN Apple, the ÉTÉ!", "àn apple été"],
    ["don't stop", "don t stop"],
    ["  Many   spaces\n\tand\ttabs ", "many spaces and tabs"],
    ["snake_case stays", "snake_case stays"],
    ["theater and another", "theater and another"],
    ["a_b the_c", "a_b the_c"],
    ["Ａ数字١٢٣ the", "ａ数字١٢٣"],
    ["", ""],
    ["the a an", ""],
  ] as const) {
    test(JSON.stringify(input), () => assert.equal(normalize(input), expected));
  }
  test("non-strings go through String()", () => {
    assert.equal(normalize(42), "42");
    assert.equal(normalize(null), "null");
    assert.equal(normalize(["A", "b"]), "b");
  });
});

describe("exactMatch", () => {
  test("normalized by default", () => {
    assert.equal(exactMatch("The Paris!", "paris"), 1.0);
    assert.equal(exactMatch("Paris", "London"), 0.0);
    assert.equal(exactMatch("", ""), 1.0);
  });
  test("normalizeText: false compares trim + lower-case", () => {
    assert.equal(exactMatch("  PARIS ", "paris", { normalizeText: false }), 1.0);
    assert.equal(exactMatch("The Paris", "paris", { normalizeText: false }), 0.0);
    assert.equal(exactMatch("paris!", "paris", { normalizeText: false }), 0.0);
  });
  test("normalizeText: false trims as Python's str.strip() does, as HUD's exact_match", () => {
    // Python strips U+001C-U+001F and U+0085 (JavaScript's trim() does not) and keeps U+FEFF (which trim() strips)
    assert.equal(exactMatch("Paris\x1c", "paris", { normalizeText: false }), 1.0);
    assert.equal(exactMatch("\x1fParis\x85", "paris", { normalizeText: false }), 1.0);
    assert.equal(exactMatch("\ufeffParis", "paris", { normalizeText: false }), 0.0);
    assert.equal(exactMatch("\u3000Paris\u2029", "paris", { normalizeText: false }), 1.0);
  });
});

describe("contains, containsAny, containsAll", () => {
  test("case-insensitive by default", () => {
    assert.equal(contains("Hello World", "world"), 1.0);
    assert.equal(contains("Hello World", "world", { caseSensitive: true }), 0.0);
    assert.equal(contains("Hello", "bye"), 0.0);
  });
  test("any / all, and their empty lists", () => {
    assert.equal(containsAny("red green", ["blue", "GREEN"]), 1.0);
    assert.equal(containsAny("red green", ["blue"]), 0.0);
    assert.equal(containsAny("anything", []), 0.0);
    assert.equal(containsAll("red green", ["RED", "green"]), 1.0);
    assert.equal(containsAll("red green", ["red", "blue"]), 0.0);
    assert.equal(containsAll("anything", []), 1.0);
    assert.equal(containsAll("Red", ["red"], { caseSensitive: true }), 0.0);
  });
});

describe("numericMatch", () => {
  for (const [text, value] of [
    ["1,000", 1],
    [".5", 5],
    ["v2.3.4", 2.3],
    ["3.", 3],
    ["-7 degrees", -7],
    ["answer: ٤٢", 42],
    ["𝟗𝟗 bottles", 99],
    ["१२.५", 12.5],
  ] as const) {
    test(`${JSON.stringify(text)} reads ${value}`, () => {
      assert.equal(firstNumber(text), value);
      assert.equal(numericMatch(text, value), 1.0);
    });
  }
  test("tolerance and no number", () => {
    assert.equal(numericMatch("3.14", 3.1416, { tolerance: 0.01 }), 1.0);
    assert.equal(numericMatch("3.14", 3.1416), 0.0);
    assert.equal(numericMatch("no digits here", 0), 0.0);
    assert.equal(firstNumber("nothing"), null);
  });
});

describe("f1Score", () => {
  test("token overlap", () => {
    close(f1Score("the cat sat", "a cat sat down"), (2 * 1 * (2 / 3)) / (1 + 2 / 3));
    assert.equal(f1Score("Paris", "paris"), 1);
  });
  test("multiset intersection", () => {
    // answer: cat cat cat (3), reference: cat dog (2): common 1 -> P 1/3, R 1/2
    close(f1Score("cat cat cat", "cat dog"), (2 * (1 / 3) * (1 / 2)) / (1 / 3 + 1 / 2));
  });
  test("no tokens or nothing in common is 0", () => {
    assert.equal(f1Score("", "cat"), 0);
    assert.equal(f1Score("the", "cat"), 0, "articles are not tokens");
    assert.equal(f1Score("dog", "cat"), 0);
  });
});

describe("combine", () => {
  test("positive weights normalized; penalties kept; reward not clamped", () => {
    const r = combine([
      { name: "a", value: 1, weight: 3 },
      { name: "b", value: 0.5, weight: 1 },
      { name: "penalty", value: 1, weight: -2 },
      { name: "zero", value: 1, weight: 0 },
    ]);
    close(r.score, 0.75 + 0.125 - 2);
    assert.deepEqual(
      r.subscores.map((s) => s.weight),
      [0.75, 0.25, -2, 0],
    );
    assert.ok(r.score < 0);
  });
  test("weight defaults to 1 and metadata is kept", () => {
    const r = combine([
      { name: "a", value: 1, metadata: { why: "ok" } },
      { name: "b", value: 0 },
    ]);
    assert.equal(r.score, 0.5);
    assert.deepEqual(r.subscores[0], { name: "a", score: 1, value: 1, weight: 0.5, metadata: { why: "ok" } });
  });
  test("one name for a score: `score` in and out; `value` and `reward` are aliases", () => {
    const r = combine([
      { name: "new", score: 1 },
      { name: "old", value: 0.5 },
    ]);
    assert.equal(r.score, 0.75);
    assert.equal(r.reward, 0.75, "reward is the deprecated alias of score");
    assert.deepEqual(JSON.parse(JSON.stringify(r)), {
      score: 0.75,
      subscores: [
        { name: "new", score: 1, value: 1, weight: 0.5 },
        { name: "old", score: 0.5, value: 0.5, weight: 0.5 },
      ],
    });
    assert.equal(combine([{ name: "both", score: 0.4, value: 0.4 }]).score, 0.4);
    assert.throws(() => combine([{ name: "both", score: 0.4, value: 0.6 }]), /score 0.4 and value 0.6 differ/);
    assert.equal(combineAny([{ name: "x", score: 0.3 }]).score, 0.3);
  });
  test("scores outside [0, 1] are refused, as HUD's SubScore refuses them; bounded: false accepts any finite score", () => {
    for (const bad of [1.5, -0.1, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(() => combine([{ name: "x", score: bad }]), /subscore "x": score must be/, String(bad));
      assert.throws(() => combineAny([{ name: "x", score: bad }]), /subscore "x": score must be/, String(bad));
      assert.throws(() => combineAll([{ name: "x", value: bad }]), /subscore "x": score must be/, String(bad));
    }
    assert.equal(combine([{ name: "x", score: 7 }], { bounded: false }).score, 7);
    assert.equal(combineAny([{ name: "x", score: -2 }], { bounded: false }).score, -2);
    assert.throws(() => combine([{ name: "x", score: Number.NaN }], { bounded: false }), /finite number/);
  });
  test("errors: empty, or positive weights summing to ≤ 0", () => {
    assert.throws(() => combine([]), /no subscores/);
    assert.throws(() => combine([{ name: "p", value: 1, weight: -1 }]), /positive weights/);
    assert.throws(() => combine([{ name: "z", value: 1, weight: 0 }]), /positive weights/);
  });
  test("duplicate names, as HUD renames them", () => {
    assert.deepEqual(dedupeNames(["same", "same"]), ["same-1", "same-2"]);
    assert.deepEqual(dedupeNames(["x-1", "x", "x"]), ["x-1", "x-2", "x-3"]);
    // HUD counts from 1 per name and skips names present or given
    assert.deepEqual(dedupeNames(["a", "a", "a-2"]), ["a-1", "a-3", "a-2"]);
    assert.deepEqual(dedupeNames(["a", "a", "a-5"]), ["a-1", "a-2", "a-5"]);
    assert.deepEqual(dedupeNames(["a-1", "a", "a", "a-1"]), ["a-1-1", "a-2", "a-3", "a-1-2"]);
    assert.deepEqual(dedupeNames(["a", "a-1", "a", "b"]), ["a-2", "a-1", "a-3", "b"]);
    assert.deepEqual(dedupeNames(["a", "a", "a-3x"]), ["a-1", "a-2", "a-3x"]);
    assert.deepEqual(
      combine([
        { name: "same", value: 1 },
        { name: "same", value: 0 },
      ]).subscores.map((s) => s.name),
      ["same-1", "same-2"],
    );
  });
});

describe("combineAny / combineAll", () => {
  const parts = [
    { name: "p", value: 0.2 },
    { name: "q", value: 0.9 },
  ];
  const given = [
    { name: "p", score: 0.2, value: 0.2 },
    { name: "q", score: 0.9, value: 0.9 },
  ];
  test("max and min, with children and defaults", () => {
    assert.deepEqual(combineAny(parts), { name: "any", score: 0.9, value: 0.9, weight: 1, children: given });
    assert.deepEqual(combineAll(parts), { name: "all", score: 0.2, value: 0.2, weight: 1, children: given });
    assert.deepEqual(combineAny(parts, { name: "either", weight: 2 }).name, "either");
    assert.equal(combineAll(parts, { weight: 0.5 }).weight, 0.5);
  });
  test("ties and empty input", () => {
    assert.equal(
      combineAny([
        { name: "a", value: 1 },
        { name: "b", value: 1 },
      ]).value,
      1,
    );
    assert.throws(() => combineAny([]), /no subscores/);
    assert.throws(() => combineAll([]), /no subscores/);
  });
  test("children with one name are renamed as HUD's combine_any/combine_all name them; the inputs are not changed", () => {
    const same = [
      { name: "x", score: 0.2 },
      { name: "x", score: 0.9 },
      { name: "y", score: 0.5 },
    ];
    assert.deepEqual(
      combineAny(same).children?.map((c) => c.name),
      ["x-1", "x-2", "y"],
    );
    assert.deepEqual(
      combineAll(same).children?.map((c) => c.name),
      ["x-1", "x-2", "y"],
    );
    assert.deepEqual(
      same.map((s) => s.name),
      ["x", "x", "y"],
    );
  });
});

describe("scoreRubric", () => {
  const binary: Criterion[] = [
    { requirement: "correct", weight: 10 },
    { requirement: "cites sources", weight: 5 },
    { requirement: "rude", weight: -5 },
  ];
  test("binary: MET 1, UNMET 0; normalized by the positive total", () => {
    close(scoreRubric(binary, ["MET", "UNMET", "UNMET"]), 10 / 15);
    close(scoreRubric(binary, ["MET", "MET", "MET"]), (15 - 5) / 15);
    assert.equal(scoreRubric(binary, ["UNMET", "UNMET", "MET"]), 0, "clamped at 0");
    assert.equal(scoreRubric(binary, ["met ", " Unmet", "unmet"]) !== null, true, "case and whitespace insensitive");
  });
  test("weight defaults to 10", () => {
    close(scoreRubric([{ requirement: "a" }, { requirement: "b", weight: 30 }], ["MET", "UNMET"]), 10 / 40);
  });
  test("not normalized: the raw sum", () => {
    assert.equal(scoreRubric(binary, ["MET", "MET", "MET"], { normalize: false }), 10);
  });
  test("negative weights only: 1 + sum/neg", () => {
    const penalties: Criterion[] = [
      { requirement: "rude", weight: -4 },
      { requirement: "wrong", weight: -6 },
    ];
    close(scoreRubric(penalties, ["MET", "UNMET"]), 1 - 4 / 10);
    assert.equal(scoreRubric(penalties, ["UNMET", "UNMET"]), 1);
    assert.equal(scoreRubric(penalties, ["MET", "MET"]), 0);
  });
  test("zero weights only: 0", () => {
    assert.equal(scoreRubric([{ requirement: "x", weight: 0 }], ["MET"]), 0);
  });
  test("CANNOT_ASSESS under each policy", () => {
    const v = ["MET", "CANNOT_ASSESS", "CANNOT_ASSESS"] as const;
    close(scoreRubric(binary, v), 10 / 10); // skip: dropped from numerator and denominator
    close(scoreRubric(binary, v, { cannotAssess: "zero" }), 10 / 15);
    close(scoreRubric(binary, v, { cannotAssess: "partial" }), (10 + 2.5) / 15);
    close(scoreRubric(binary, v, { cannotAssess: "partial", partialCredit: 0.2 }), (10 + 1) / 15);
    close(scoreRubric(binary, v, { cannotAssess: "fail" }), (10 + 0 - 5) / 15);
  });
  test("all abstained: null, never a made-up 0", () => {
    assert.equal(scoreRubric(binary, ["CANNOT_ASSESS", "CANNOT_ASSESS", "CANNOT_ASSESS"]), null);
    assert.equal(scoreRubric([], []), null);
  });
  const quality: Criterion = {
    name: "quality",
    weight: 10,
    requirement: "how good",
    options: [
      { label: "Poor", value: 0.2 },
      { label: "Good", value: 0.8 },
      { label: "Great", value: 1 },
      { label: "N/A", value: 0, na: true },
    ],
  };
  test("multi-choice: option values, labels case- and whitespace-insensitive", () => {
    close(scoreRubric([quality], ["good"]), 0.8);
    close(scoreRubric([quality], ["  GREAT "]), 1);
    assert.throws(() => scoreRubric([quality], ["Excellent"]), /not one of its options/);
  });
  test("multi-choice NA abstains; fail takes the worst option (lowest for w ≥ 0, highest for w < 0)", () => {
    assert.equal(scoreRubric([quality], ["N/A"]), null);
    close(scoreRubric([quality, { requirement: "x", weight: 10 }], ["N/A", "MET"], { cannotAssess: "fail" }), (0.2 * 10 + 10) / 20);
    const harm: Criterion = {
      requirement: "harmful",
      weight: -10,
      options: [
        { label: "none", value: 0 },
        { label: "some", value: 0.5 },
        { label: "severe", value: 1 },
        { label: "unsure", value: 0, na: true },
      ],
    };
    close(scoreRubric([harm], ["unsure"], { cannotAssess: "fail" }), 0); // 1 + (-10)/10
    close(scoreRubric([harm], ["some"]), 0.5);
  });
  test("ties on the worst option pick the lowest index", () => {
    const tied: Criterion = {
      requirement: "t",
      weight: -10,
      options: [
        { label: "a", value: 0.3 },
        { label: "b", value: 0.7 },
        { label: "c", value: 0.7 },
        { label: "na", value: 0, na: true },
      ],
    };
    close(scoreRubric([tied], ["na"], { cannotAssess: "fail", normalize: false }), -7);
  });
  test("an NA option's value is ignored, as autorubric ignores it", () => {
    const odd: Criterion = {
      requirement: "q",
      options: [
        { label: "low", value: 0 },
        { label: "high", value: 1 },
        { label: "n/a", value: 7, na: true },
      ],
    };
    close(scoreRubric([odd], ["high"]), 1);
    assert.equal(scoreRubric([odd], ["n/a"]), null);
    close(scoreRubric([odd], ["n/a"], { cannotAssess: "fail" }), 0);
    assert.throws(
      () => scoreRubric([{ ...odd, options: [...(odd.options ?? []), { label: "big", value: 2 }] }], ["low"]),
      /outside \[0, 1\]/,
    );
  });
  test("bad rubrics are refused", () => {
    assert.throws(() => scoreRubric([{ requirement: "x", options: [{ label: "only", value: 1 }] }], ["only"]), /at least 2 non-NA/);
    assert.throws(() => scoreRubric(binary, ["MET"]), /3 criteria but 1 verdicts/);
    assert.throws(() => scoreRubric([{ requirement: "x" }], ["MAYBE"]), /MET, UNMET or CANNOT_ASSESS/);
  });
});
