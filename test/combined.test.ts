// End to end through the SDK: a grader that imports gradebox/graders, results with reasons, and
// a combined grader over three function graders.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ConflictError, combine, Gradebox, GraderRuntimeError, StringThread, UnprocessableEntityError } from "../sdk/index.ts";
import { startServer, type TestServer } from "./support/helpers.ts";

let s: TestServer;
let client: Gradebox;
before(async () => {
  s = await startServer({ listen: true });
  client = new Gradebox({ baseURL: s.url, project: "lib", apiKey: await s.keyFor("lib") });
});
after(() => s.close());

const t = (completion: string, metadata: Record<string, unknown> = {}) =>
  new StringThread(
    [
      ["user", "q"],
      ["assistant", completion],
    ],
    metadata,
  );

describe("a grader that imports gradebox/graders", () => {
  test("registers, bundles the library, and returns score, reason and subscores", async () => {
    const created = await client.graders.create.function({
      key: "library",
      file: new URL("../examples/library.ts", import.meta.url).pathname,
    });
    assert.equal(created.kind, "function");
    const { results } = await client.graders.gradeBatch({
      graderKey: "library",
      threads: [t("42", { expected: "42" }), t("41.8", { expected: "42" }), t("no", { expected: "42" })],
    });
    assert.deepEqual(results[0], {
      outcome: "scored",
      score: 1,
      reason: "3 of 3 checks passed",
      subscores: [
        { name: "exact", score: 1, value: 1, weight: 0.5 },
        { name: "numeric", score: 1, value: 1, weight: 0.25 },
        { name: "overlap", score: 1, value: 1, weight: 0.25 },
      ],
    });
    assert.ok("score" in results[1] && results[1].score === 0.25, JSON.stringify(results[1]));
    assert.ok("score" in results[2] && results[2].score === 0 && results[2].reason === "0 of 3 checks passed");
    // same code, same results: the SDK's copy of the library agrees with the sandbox's (value: score's old name)
    const local = combine([
      { name: "exact", value: 0, weight: 2 },
      { name: "numeric", value: 1 },
      { name: "overlap", value: 0 },
    ]);
    assert.equal(local.score, 0.25);
    assert.equal(local.reward, 0.25);
  });

  test("grade returns reason and metadata with the score", async () => {
    await client.graders.create.function({
      key: "reasoned",
      source: "async (t) => ({ score: 0.5, reason: 'half', metadata: { length: t.completion().length } })",
    });
    const res = await client.graders.grade({ graderKey: "reasoned", thread: t("abcd") });
    assert.equal(res.score, 0.5);
    assert.equal(res.reason, "half");
    assert.deepEqual(res.metadata, { length: 4 });
  });

  test("other value imports are still refused", async () => {
    await assert.rejects(
      client.graders.create.function({ key: "nope", source: 'import { x } from "gradebox/other";\nasync function grade(t) { return 1 }' }),
      /import of "gradebox\/other" is not allowed/,
    );
  });
});

describe("combined graders", () => {
  before(async () => {
    await client.graders.create.function({ key: "has-paris", source: "async (t) => (/paris/i.test(t.completion() ?? '') ? 1 : 0)" });
    await client.graders.create.function({ key: "short", source: "async (t) => ((t.completion() ?? '').length <= 20 ? 1 : 0)" });
    await client.graders.create.function({
      key: "polite",
      source:
        "async (t) => { if (t.metadata.explode) throw new Error('exploded'); return /please|thanks/i.test(t.completion() ?? '') ? 1 : 0 }",
    });
  });

  test("weighted: the reward with every part as a subscore", async () => {
    const created = await client.graders.create.combined({
      key: "answer-quality",
      mode: "weighted",
      graders: [{ graderKey: "has-paris", weight: 2 }, { graderKey: "short" }, { graderKey: "polite", weight: -1, name: "politeness" }],
      description: "Paris, briefly",
    });
    assert.equal(created.kind, "combined");
    assert.equal(created.mode, "weighted");
    assert.deepEqual(created.parts, [
      { graderKey: "has-paris", name: "has-paris", weight: 2, version: 1, pinned: false },
      { graderKey: "short", name: "short", weight: 1, version: 1, pinned: false },
      { graderKey: "polite", name: "politeness", weight: -1, version: 1, pinned: false },
    ]);
    const { results } = await client.graders.gradeBatch({
      graderKey: "answer-quality",
      threads: [t("Paris"), t("It is Paris, thanks"), t("London, I believe, is the answer here")],
    });
    assert.deepEqual(results[0], {
      outcome: "scored",
      score: 1,
      subscores: [
        { name: "has-paris", score: 1, value: 1, weight: 2 / 3 },
        { name: "short", score: 1, value: 1, weight: 1 / 3 },
        { name: "politeness", score: 0, value: 0, weight: -1 },
      ],
    });
    assert.ok("score" in results[1]);
    assert.equal(results[1].score, 0, "1 - 1 penalty");
    assert.ok("score" in results[2] && results[2].score === 0);
  });

  test("any and all", async () => {
    await client.graders.create.combined({ key: "either", mode: "any", graders: [{ graderKey: "has-paris" }, { graderKey: "short" }] });
    await client.graders.create.combined({ key: "both", mode: "all", graders: [{ graderKey: "has-paris" }, { graderKey: "short" }] });
    const threads = [t("Lyon"), t("Paris is the capital city of France")];
    const any = await client.graders.gradeBatch({ graderKey: "either", threads });
    const all = await client.graders.gradeBatch({ graderKey: "both", threads });
    assert.deepEqual(
      any.results.map((r) => ("score" in r ? r.score : "error" in r ? r.error.code : r.abstained.code)),
      [1, 1],
    );
    assert.deepEqual(
      all.results.map((r) => ("score" in r ? r.score : "error" in r ? r.error.code : r.abstained.code)),
      [0, 0],
    );
    const single = await client.graders.grade({ graderKey: "both", thread: t("Paris") });
    assert.equal(single.score, 1);
    assert.equal(single.subscores?.length, 2);
  });

  test("a failing part fails the item with COMPONENT_FAILED naming the part, never a silent 0", async () => {
    const { results } = await client.graders.gradeBatch({
      graderKey: "answer-quality",
      threads: [t("Paris", { explode: true }), t("Paris")],
    });
    assert.ok("error" in results[0]);
    assert.equal(results[0].error.code, "COMPONENT_FAILED");
    assert.match(results[0].error.message, /part "politeness" \(grader polite\) failed with GRADER_ERROR: Error: exploded/);
    assert.ok("score" in results[1]);
    await assert.rejects(client.graders.grade({ graderKey: "answer-quality", thread: t("x", { explode: true }) }), (e: unknown) => {
      assert.ok(e instanceof GraderRuntimeError);
      assert.equal(e.code, "COMPONENT_FAILED");
      return true;
    });
  });

  test("a part in use cannot be deleted (GRADER_IN_USE); parts must exist and not be combined graders", async () => {
    await assert.rejects(client.graders.delete({ graderKey: "short" }), (e: unknown) => {
      assert.ok(e instanceof ConflictError);
      assert.equal(e.code, "GRADER_IN_USE");
      assert.match(e.message, /"answer-quality", "both", "either"/);
      return true;
    });
    await assert.rejects(
      client.graders.create.combined({ key: "ghost", mode: "any", graders: [{ graderKey: "has-paris" }, { graderKey: "missing" }] }),
      (e: unknown) =>
        e instanceof UnprocessableEntityError && e.code === "INVALID_COMPONENT" && /part "missing" does not exist/.test(e.message),
    );
    await assert.rejects(
      client.graders.create.combined({ key: "nested", mode: "any", graders: [{ graderKey: "either" }] }),
      /is a combined grader; parts are function, judge or endpoint graders/,
    );
    await assert.rejects(
      client.graders.create.combined({ key: "penalties", mode: "weighted", graders: [{ graderKey: "short", weight: -1 }] }),
      /positive weight/,
    );
    const keys = (await client.graders.list()).map((g) => g.key);
    for (const k of ["ghost", "nested", "penalties"]) assert.ok(!keys.includes(k), `${k} was not saved`);
  });

  test("combined graders list, get, lock and delete like any grader", async () => {
    const listed = (await client.graders.list()).find((g) => g.key === "either");
    assert.equal(listed?.kind, "combined");
    assert.equal(listed?.mode, "any");
    const got = await client.graders.get({ graderKey: "either" });
    assert.equal(got.source, undefined);
    assert.equal(got.parts?.length, 2);
    await client.graders.lock({ graderKey: "either", locked: true });
    await assert.rejects(client.graders.delete({ graderKey: "either" }), /GRADER_LOCKED/);
    await client.graders.lock({ graderKey: "either", locked: false });
    await client.graders.delete({ graderKey: "either" });
    await client.graders.delete({ graderKey: "both" });
    await client.graders.delete({ graderKey: "answer-quality" });
    await client.graders.delete({ graderKey: "short" }); // no longer in use
  });
});

test("a combined result is held to a result's 16 KiB: past it the parts' metadata is left out, their scores kept", async () => {
  await client.graders.create.function({
    key: "padded",
    source: 'async function grade(t) { return { score: 0.5, reason: "padded", metadata: { pad: "x".repeat(10000) } }; }',
  });
  await client.graders.create.combined({
    key: "padded-thrice",
    mode: "weighted",
    graders: [
      { graderKey: "padded", name: "a" },
      { graderKey: "padded", name: "b" },
      { graderKey: "padded", name: "c" },
    ],
  });
  const { results } = await client.graders.gradeBatch({ graderKey: "padded-thrice", threads: [t("x"), t("y")] });
  for (const r of results) {
    assert.equal(r.outcome, "scored");
    if (r.outcome !== "scored") continue;
    assert.equal(r.score, 0.5);
    assert.ok(JSON.stringify(r).length <= 16 * 1024, `${JSON.stringify(r).length} characters`);
    assert.deepEqual(
      (r.subscores as Array<{ name: string; score: number; metadata?: unknown }>).map((x) => [x.name, x.score, x.metadata]),
      [
        ["a", 0.5, undefined],
        ["b", 0.5, undefined],
        ["c", 0.5, undefined],
      ],
    );
    assert.match(String(r.metadata?.partsMetadata), /^left out: with it this result was \d+ characters of JSON, past the 16384/);
  }
  // one part alone keeps its metadata: it is within the bound
  const [alone] = (await client.graders.gradeBatch({ graderKey: "padded", threads: [t("x")] })).results;
  assert.equal(alone.outcome === "scored" && String(alone.metadata?.pad).length, 10000);
});
