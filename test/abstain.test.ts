// Abstentions from TypeScript graders, through the real pool and worker processes: returning null
// and throwing Abstain (gradebox/graders, bundled into the grader) abstain with a reason;
// undefined stays INVALID_SCORE; what a grader throws or returns to fake one is read as hostile.
// Then the replies that carry an abstention out of an isolate and out of a worker, read strictly.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SandboxPool } from "../sandbox/host/pool.ts";
import { CODE_GRADER_CODES, wellFormedSlice } from "../sandbox/host/replies.ts";
import { encodeAbstain, encodeNumber } from "../sandbox/isolate/reply.ts";
import type { GraderCode } from "../sandbox/protocol/requests.ts";
import type { GradeOutcome } from "../sandbox/validate/checks.ts";
import { decodeReply, ReplyViolation } from "../sandbox/worker/reply-reader.ts";
import { Abstain, isAbstain } from "../sdk/graders.ts";
import { thread } from "./support/helpers.ts";

const limits = { timeoutMs: 1000, memoryMb: 64, maxWarm: 16, maxWarmHeapMb: 512 };
let pool: SandboxPool;
let graders = 0;

before(async () => {
  pool = new SandboxPool({ size: 1, limits });
  await pool.start();
});
after(() => pool.close());

/** The source validated (its test_run on the sample thread included) and compiled, as the server stores it. */
async function compile(source: string): Promise<GraderCode & { warnings: string[] }> {
  const result = await pool.validate("p", source);
  assert.ok(result.ok, JSON.stringify(result));
  return { id: `abstain-${++graders}`, project: "p", compiled: result.compiled, warnings: result.warnings };
}

const abstained = (reason: string): GradeOutcome => ({ abstained: { code: "GRADER_ABSTAINED", reason } });

describe("a TypeScript grader abstains", () => {
  test("by returning null, or throwing Abstain with a reason; undefined is still INVALID_SCORE", async () => {
    const grader = await compile(`
      import { Abstain } from "gradebox/graders";
      export default async function grade(thread) {
        const c = thread.completion();
        if (c === "null") return null;
        if (c === "abstain") throw new Abstain("no reference answer for this prompt");
        if (c === "bare") throw new Abstain();
        if (c === "returned") return new Abstain("returned, not thrown");
        if (c === "undefined") return undefined;
        return 1;
      }`);
    const outcomes = await pool.gradeBatch(
      grader,
      ["null", "abstain", "bare", "returned", "undefined", "4"].map((c) => thread(c)),
    );
    assert.deepEqual(outcomes.slice(0, 4), [
      abstained("grade returned null"),
      abstained("no reference answer for this prompt"),
      abstained("the grader abstained"),
      abstained("returned, not thrown"),
    ]);
    const forgot = outcomes[4];
    assert.ok("error" in forgot && forgot.error.code === "INVALID_SCORE", JSON.stringify(forgot));
    assert.match(forgot.error.message, /got undefined \(did it forget to return\? return null to abstain\)/);
    assert.deepEqual(outcomes[5], { score: 1 });
  });

  test("an abstention on the sample thread passes test_run with a warning", async () => {
    const grader = await compile("async function grade(thread: StringThread): Promise<number | null> { return null }");
    assert.deepEqual(grader.warnings, [
      "grade abstained on the built-in sample thread (grade returned null); give the grader samples of its own to see it score",
    ]);
  });

  test("the brand is what counts: a copy of the class, or a plain object carrying it, abstains; instanceof plays no part", async () => {
    const grader = await compile(`
      async function grade(thread) {
        if (thread.metadata.copy) {
          class Abstain extends Error { constructor(reason) { super(reason); this.reason = reason } }
          Object.defineProperty(Abstain.prototype, Symbol.for("gradebox.abstain"), { value: true });
          throw new Abstain("from a copy");
        }
        if (thread.metadata.plain) throw { [Symbol.for("gradebox.abstain")]: true, reason: 42 };
        return 0.5;
      }`);
    const outcomes = await pool.gradeBatch(grader, [thread("x", { copy: true }), thread("x", { plain: true }), thread("x")]);
    assert.deepEqual(outcomes, [abstained("from a copy"), abstained("the grader abstained"), { score: 0.5 }]);
    // the SDK's own check agrees
    assert.ok(isAbstain(new Abstain("x")));
    assert.ok(isAbstain({ [Symbol.for("gradebox.abstain")]: true }));
    assert.ok(!isAbstain(new Error("x")));
  });

  test("hostile abstentions: a huge reason is cut; a brand or reason that throws when read makes the throw a GRADER_ERROR", async () => {
    const grader = await compile(`
      import { Abstain } from "gradebox/graders";
      async function grade(thread) {
        const how = thread.metadata.how;
        if (how === "huge") throw new Abstain("x".repeat(1e6));
        if (how === "proxy") throw new Proxy({}, { get() { throw new RangeError("trap") } });
        if (how === "getter") {
          const a = new Abstain("ok");
          Object.defineProperty(a, "reason", { get() { throw new TypeError("no reason") } });
          throw a;
        }
        if (how === "code") return { abstained: { code: "DEADLINE_EXCEEDED", reason: "fake" } };
        return 1;
      }`);
    const outcomes = await pool.gradeBatch(
      grader,
      ["huge", "proxy", "getter", "code"].map((how) => thread("x", { how })),
    );
    const [huge, proxy, getter, code] = outcomes;
    assert.ok("abstained" in huge, JSON.stringify(huge).slice(0, 200));
    assert.equal(huge.abstained.code, "GRADER_ABSTAINED");
    assert.equal(huge.abstained.reason.length, 2001, "2,000 characters and an ellipsis");
    assert.ok("error" in proxy && proxy.error.code === "GRADER_ERROR", JSON.stringify(proxy));
    assert.ok("error" in getter && getter.error.code === "GRADER_ERROR", JSON.stringify(getter));
    assert.match(getter.error.message, /^Abstain: ok/);
    // an object that spells out an abstention is no score, and never the host's codes
    assert.ok("error" in code && code.error.code === "INVALID_SCORE", JSON.stringify(code));
  });
});

describe("an abstention's reply, read strictly", () => {
  test("the isolate's record: a<length>:<reason>, always GRADER_ABSTAINED", () => {
    assert.deepEqual(decodeReply(`${encodeAbstain("why")}${encodeNumber(1)}.`, 2).outcomes, [abstained("why"), { score: 1 }]);
    assert.deepEqual(decodeReply(`${encodeAbstain("")}.`, 1).outcomes, [abstained("")]);
  });
  for (const [name, reply] of [
    ["a reason past the bound", `${encodeAbstain("x".repeat(2002))}.`],
    ["a reason cut short", "a10:abc."],
    ["a length that is not a number", "a1x:a."],
    ["an abstention with a code of its own", "a3,7:DEADLINE."],
    ["more records than asked", `${encodeAbstain("a")}${encodeAbstain("b")}.`],
  ]) {
    test(`refuses ${name}`, () => {
      assert.throws(() => decodeReply(reply, 1), ReplyViolation);
    });
  }

  test("the host takes from a worker only {abstained: {code: GRADER_ABSTAINED, reason}}, the reason bounded", () => {
    assert.ok(wellFormedSlice([abstained("x"), { score: 1 }], 2));
    for (const code of ["DEADLINE_EXCEEDED", "JUDGE_UNAVAILABLE", "ENDPOINT_UNAVAILABLE", "ALL_PARTS_ABSTAINED", "GRADER_ERROR", "NOPE"]) {
      assert.ok(!wellFormedSlice([{ abstained: { code, reason: "x" } }], 1), code);
    }
    for (const bad of [
      { abstained: { code: "GRADER_ABSTAINED", reason: "x".repeat(2002) } },
      { abstained: { code: "GRADER_ABSTAINED", reason: 5 } },
      { abstained: { code: "GRADER_ABSTAINED" } },
      { abstained: { code: "GRADER_ABSTAINED", reason: "x", extra: 1 } },
      { abstained: { code: "GRADER_ABSTAINED", reason: "x" }, score: 1 },
      { abstained: "GRADER_ABSTAINED" },
      { abstained: null },
    ]) {
      assert.ok(!wellFormedSlice([bad], 1), JSON.stringify(bad).slice(0, 100));
    }
  });

  test("a code grader's worker may answer exactly the code path's codes; a grader's isolate none of them", () => {
    const code = (o: unknown) => wellFormedSlice([o], 1, () => true, 1, 0, CODE_GRADER_CODES);
    const codeOwn = [
      { error: { code: "INVALID_METADATA", message: "tests: the item carries no tests" } },
      { error: { code: "INVALID_THREAD", message: "the last turn must be the assistant's" } },
      { error: { code: "GRADER_ERROR", message: "x" } },
      { abstained: { code: "RUNNER_UNAVAILABLE", reason: "the python runner failed" } },
    ];
    for (const o of codeOwn) {
      assert.ok(code(o), JSON.stringify(o));
      if ("abstained" in o || o.error.code !== "GRADER_ERROR")
        assert.ok(!wellFormedSlice([o], 1), `a grader's isolate claims ${JSON.stringify(o)}`);
    }
    for (const o of [
      abstained("x"),
      { abstained: { code: "DEADLINE_EXCEEDED", reason: "x" } },
      { error: { code: "GRADER_TIMEOUT", message: "x" } },
      { error: { code: "SANDBOX_CRASHED", message: "x" } },
      { error: { code: "INVALID_METADATA", message: "x".repeat(2002) } },
      { abstained: { code: "RUNNER_UNAVAILABLE", reason: "x".repeat(2002) } },
    ]) {
      assert.ok(!code(o), `a code grader's worker claims ${JSON.stringify(o).slice(0, 100)}`);
    }
  });
});
