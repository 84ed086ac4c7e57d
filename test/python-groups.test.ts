// Python graders that abstain and grade groups, through the real pool, worker and Pyodide: None
// and Abstain abstain, grade_group gets each group whole and answers per thread, and a grader
// without grade_group given groups grades thread by thread in the library's slices.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SandboxPool } from "../sandbox/host/pool.ts";
import type { GraderCode } from "../sandbox/protocol/requests.ts";
import type { GradeOutcome } from "../sandbox/validate/checks.ts";
import { thread } from "./support/helpers.ts";

const limits = { timeoutMs: 2000, memoryMb: 64, maxWarm: 16, maxWarmHeapMb: 1024 };
let pool: SandboxPool;
let graders = 0;

before(async () => {
  pool = new SandboxPool({ size: 1, limits });
  await pool.start();
});
after(() => pool.close());

async function compile(source: string): Promise<GraderCode & { shape?: string; warnings: string[] }> {
  const result = await pool.validate("p", source, undefined, { language: "python" });
  assert.ok(result.ok, JSON.stringify(result));
  return {
    id: `pyg-${++graders}`,
    project: "p",
    language: "python",
    compiled: result.compiled,
    shape: result.shape,
    warnings: result.warnings,
  };
}

const abstained = (reason: string): GradeOutcome => ({ abstained: { code: "GRADER_ABSTAINED", reason } });
const codes = (outcomes: GradeOutcome[]) =>
  outcomes.map((o) => ("error" in o ? o.error.code : "abstained" in o ? o.abstained.reason : o.score));

describe("a Python grader abstains", () => {
  test("by returning None or raising Abstain (from gradebox or gradebox.graders); in slices and item by item", async () => {
    const grader = await compile(`
from gradebox import Abstain
from gradebox import graders

async def grade(thread: StringThread) -> float | None:
    c = thread.completion()
    if c.startswith("none"):
        return None
    if c.startswith("abstain"):
        raise Abstain("no reference for " + c)
    if c.startswith("bare"):
        raise graders.Abstain()
    if c.startswith("huge"):
        raise Abstain("x" * 100000)
    return 1.0
`);
    assert.equal(grader.shape, "thread");
    // Latin-1 text goes in one slice; a surrogate pair sends the batch item by item
    for (const suffix of ["", " 😀"]) {
      const outcomes = await pool.gradeBatch(
        grader,
        ["none", "abstain", "bare", "huge", "4"].map((c) => thread(c + suffix)),
      );
      assert.deepEqual(outcomes.slice(0, 3), [
        abstained("grade returned None"),
        abstained(`no reference for abstain${suffix}`),
        abstained("the grader abstained"),
      ]);
      const huge = outcomes[3];
      assert.ok("abstained" in huge && huge.abstained.reason.length === 2001, JSON.stringify(huge).slice(0, 200));
      assert.deepEqual(outcomes[4], { score: 1 });
    }
  });

  test("a grade without any return value is warned about at validation, and abstains", async () => {
    const grader = await compile("async def grade(thread: StringThread) -> float:\n    thread.completion()\n");
    assert.ok(
      grader.warnings.some((w) => w.startsWith("grade has no `return <value>`")),
      JSON.stringify(grader.warnings),
    );
    assert.ok(grader.warnings.some((w) => w.startsWith("grade abstained on the built-in sample thread")));
    assert.deepEqual(await pool.gradeBatch(grader, [thread("x")]), [abstained("grade returned None")]);
  });
});

describe("a Python group grader", () => {
  test("ranks 4 real groups of 8 with rank_in_group, each group whole in one call", async () => {
    const grader = await compile(`
from gradebox.graders import rank_in_group

async def grade_group(threads):
    lengths = [len(t.completion()) for t in threads]
    return [{"score": r, "metadata": {"n": len(threads), "group": threads[0].metadata.get("g")}} for r in rank_in_group(lengths)]
`);
    assert.equal(grader.shape, "group");
    const threads = [];
    const expected: number[] = [];
    for (let g = 0; g < 4; g++) {
      // eight distinct lengths, in an order of their own per group
      const base = [3, 7, 1, 8, 2, 6, 4, 5];
      const lengths = [...base.slice(g * 3), ...base.slice(0, g * 3)];
      for (const n of lengths) {
        threads.push(thread("x".repeat(n + g), { g }));
        expected.push((n - 1) / 7);
      }
    }
    const outcomes = await pool.gradeBatch(grader, threads, { groups: [8, 8, 8, 8] });
    assert.deepEqual(
      outcomes.map((o) => ("score" in o ? o.score : o)),
      expected,
    );
    outcomes.forEach((o, i) => {
      assert.ok("score" in o);
      assert.deepEqual(o.metadata, { n: 8, group: Math.floor(i / 8) });
    });
  });

  test("wrong lengths, a raise, Abstain and None: per group or per thread, as in TypeScript", async () => {
    const grader = await compile(`
from gradebox import Abstain

async def grade_group(threads):
    how = threads[0].completion()
    if how == "short":
        return [1.0]
    if how == "dict":
        return {"score": 1.0}
    if how == "raise":
        raise ValueError("bad group")
    if how == "abstain":
        raise Abstain("whole group")
    if how == "mixed":
        return [0.5, None, Abstain("this one"), {"score": 2, "reason": "r"}]
    return [1.0] * len(threads)
`);
    const kinds = ["ok", "short", "dict", "raise", "abstain", "mixed", "ok"];
    const outcomes = await pool.gradeBatch(
      grader,
      kinds.flatMap((how) => Array.from({ length: 4 }, () => thread(how))),
      { groups: kinds.map(() => 4) },
    );
    const group = (g: number) => outcomes.slice(g * 4, g * 4 + 4);
    assert.deepEqual(codes(group(0)), [1, 1, 1, 1]);
    assert.deepEqual(codes(group(1)), Array(4).fill("INVALID_SCORE"));
    const short = group(1)[0];
    assert.match("error" in short ? short.error.message : "", /returned 1 results for a group of 4 threads/);
    assert.deepEqual(codes(group(2)), Array(4).fill("INVALID_SCORE"));
    assert.deepEqual(codes(group(3)), Array(4).fill("GRADER_ERROR"));
    const raised = group(3)[0];
    assert.ok("error" in raised && raised.error.line === 11, JSON.stringify(raised));
    assert.deepEqual(group(4), Array(4).fill(abstained("whole group")));
    assert.deepEqual(group(5), [
      { score: 0.5 },
      abstained("grade_group returned None for this thread"),
      abstained("this one"),
      { score: 2, reason: "r" },
    ]);
    assert.deepEqual(codes(group(6)), [1, 1, 1, 1]);
  });

  test("grade and grade_group: groups to grade_group; a grade-only grader given groups, and a group-only one without", async () => {
    const both = await compile(
      "async def grade(thread: StringThread) -> float:\n    return 1.0\nasync def grade_group(threads):\n    return [float(len(threads))] * len(threads)\n",
    );
    assert.equal(both.shape, "both");
    const threads = [thread("a"), thread("b"), thread("c")];
    assert.deepEqual(codes(await pool.gradeBatch(both, threads, { groups: [2, 1] })), [2, 2, 1]);
    assert.deepEqual(codes(await pool.gradeBatch(both, threads)), [1, 1, 1]);
    const single = await compile("async def grade(thread: StringThread) -> float:\n    return float(len(thread.completion()))\n");
    assert.deepEqual(codes(await pool.gradeBatch(single, [thread("a"), thread("bb"), thread("ccc")], { groups: [1, 2] })), [1, 2, 3]);
    const only = await compile("async def grade_group(threads):\n    return [1.0] * len(threads)\n");
    for (const o of await pool.gradeBatch(only, threads)) {
      assert.ok("error" in o && /grades groups only/.test(o.error.message), JSON.stringify(o));
    }
  });
});
