// The grading routes' fast body check (server/fast-body.ts) against zod, the schema it stands in
// for: whatever the check passes, zod must accept and return unchanged; and the common bodies
// must pass it, or the fast path would never be taken.

import assert from "node:assert/strict";
import { test } from "node:test";
import { safeParse } from "zod/v4/core";
import { makeThreads } from "../bench/corpus.ts";
import { fastBodies, gradeBodies } from "../server/fast-body.ts";
import { MAX_METADATA_DEPTH } from "../server/schemas.ts";
import { call, startServer } from "./support/helpers.ts";

const config = { maxTurns: 4, maxContent: 50 };
const { GradeBody, GradeBatchBody } = gradeBodies(config);
const fastGrade = fastBodies.get(GradeBody) as (b: unknown) => boolean;
const fastBatch = fastBodies.get(GradeBatchBody) as (b: unknown) => boolean;

const deep = (levels: number): unknown => (levels === 0 ? 1 : { a: deep(levels - 1) });
const turn = (role: unknown, content: unknown) => ({ role, content });
const ok = { turns: [turn("user", "hi"), turn("assistant", "hello")], metadata: { expected: "hello", n: [1, { x: null }] } };

/** every way a thread can differ from a plain one that the check must notice */
const variants: Array<[string, unknown]> = [
  ["plain", ok],
  ["no metadata", { turns: ok.turns }],
  ["empty metadata", { turns: ok.turns, metadata: {} }],
  ["metadata at the depth limit", { turns: ok.turns, metadata: deep(MAX_METADATA_DEPTH - 1) }],
  ["metadata past the depth limit", { turns: ok.turns, metadata: deep(MAX_METADATA_DEPTH + 1) }],
  ["metadata null", { turns: ok.turns, metadata: null }],
  ["metadata an array", { turns: ok.turns, metadata: [1] }],
  ["metadata a string", { turns: ok.turns, metadata: "x" }],
  ["metadata undefined", { turns: ok.turns, metadata: undefined }],
  ["an extra key", { ...ok, extra: 1 }],
  ["an extra key in a turn", { turns: [{ ...turn("user", "hi"), name: "x" }] }],
  ["no turns", { metadata: {} }],
  ["turns empty", { turns: [] }],
  ["turns past the limit", { turns: Array.from({ length: 5 }, () => turn("user", "x")) }],
  ["turns at the limit", { turns: Array.from({ length: 4 }, () => turn("user", "x")) }],
  ["turns an object", { turns: { 0: turn("user", "x") } }],
  ["a role outside ROLES", { turns: [turn("developer", "x")] }],
  ["a role at its length limit", { turns: [turn("r".repeat(64), "x")] }],
  ["a role past its length limit", { turns: [turn("r".repeat(65), "x")] }],
  ["an empty role", { turns: [turn("", "x")] }],
  ["a role with a control character", { turns: [turn("dev\u0007", "x")] }],
  ["a role of another type", { turns: [turn(1, "x")] }],
  ["content a number", { turns: [turn("user", 5)] }],
  ["content null", { turns: [turn("user", null)] }],
  ["content missing", { turns: [{ role: "user" }] }],
  ["content at the limit", { turns: [turn("user", "x".repeat(50))] }],
  ["content past the limit", { turns: [turn("user", "x".repeat(51))] }],
  ["a turn null", { turns: [null] }],
  ["a turn an array", { turns: [["user", "x"]] }],
  ["thread null", null],
  ["thread an array", [ok]],
  ["thread with a prototype", Object.assign(Object.create({ inherited: 1 }), ok)],
  ["a turn with a prototype", { turns: [Object.assign(Object.create(null), turn("user", "x"))] }],
];

test("whatever the fast check passes, zod accepts unchanged; the plain bodies pass it", () => {
  let passed = 0;
  const bodies: Array<[string, unknown, (b: unknown) => boolean, typeof GradeBody | typeof GradeBatchBody]> = [];
  for (const [name, thread] of variants) {
    bodies.push([`grade: ${name}`, { thread }, fastGrade, GradeBody]);
    bodies.push([`batch: ${name}`, { threads: [ok, thread] }, fastBatch, GradeBatchBody]);
  }
  bodies.push(["grade: with a version", { thread: ok, version: 2 }, fastGrade, GradeBody]);
  bodies.push(["grade: a version as text", { thread: ok, version: "2" }, fastGrade, GradeBody]);
  bodies.push(["batch: with a version", { threads: [ok], version: 1 }, fastBatch, GradeBatchBody]);
  for (const version of [0, 1.5, 1_000_000_001, -1, null, true, [1]]) {
    bodies.push([`grade: version ${JSON.stringify(version)}`, { thread: ok, version }, fastGrade, GradeBody]);
    bodies.push([`batch: version ${JSON.stringify(version)}`, { threads: [ok], version }, fastBatch, GradeBatchBody]);
  }
  bodies.push(["batch: empty", { threads: [] }, fastBatch, GradeBatchBody]);
  bodies.push(["batch: threads an object", { threads: { 0: ok } }, fastBatch, GradeBatchBody]);
  bodies.push(["batch: a thread key", { thread: ok }, fastBatch, GradeBatchBody]);
  bodies.push(["grade: a threads key", { threads: [ok] }, fastGrade, GradeBody]);
  bodies.push(["grade: an extra key", { thread: ok, dryRun: true }, fastGrade, GradeBody]);
  for (const [name, body, fast, schema] of bodies) {
    if (!fast(body)) continue;
    passed++;
    const parsed = safeParse(schema, body);
    assert.ok(parsed.success, `${name}: the fast check passed what zod refuses (${parsed.error?.message})`);
    assert.deepEqual(parsed.data, body, `${name}: zod would have changed it`);
  }
  // the plain ones (and only those) take the fast path
  const fastNames = bodies.filter(([, body, fast]) => fast(body)).map(([name]) => name);
  assert.deepEqual(fastNames.sort(), [
    "batch: a role at its length limit",
    "batch: a role outside ROLES",
    "batch: content at the limit",
    "batch: empty metadata",
    "batch: metadata at the depth limit",
    "batch: no metadata",
    "batch: plain",
    "batch: turns at the limit",
    "batch: with a version",
    "grade: a role at its length limit",
    "grade: a role outside ROLES",
    "grade: content at the limit",
    "grade: empty metadata",
    "grade: metadata at the depth limit",
    "grade: no metadata",
    "grade: plain",
    "grade: turns at the limit",
    "grade: with a version",
  ]);
  assert.equal(passed, 18);
});

test("the bench corpus, as JSON.parse makes it, takes the fast path (and zod agrees)", () => {
  const { GradeBatchBody: schema } = gradeBodies({ maxTurns: 1000, maxContent: 1_000_000 });
  const body = JSON.parse(JSON.stringify({ threads: makeThreads(200) }));
  assert.equal(fastBodies.get(schema)?.(body), true);
  assert.deepEqual(safeParse(schema, body).data, body);
});

test("through the server: a plain body grades; a body off the fast path still gets zod's error, word for word", async () => {
  const s = await startServer();
  try {
    assert.equal(
      (
        await call(s.app, "POST", "/v1/projects/default/graders", {
          key: "n",
          source: 'async (t) => (t.metadata.expected === "hello" ? 2 : 1)',
        })
      ).status,
      201,
    );
    const plain = await call(s.app, "POST", "/v1/projects/default/graders/n/grade-batch", {
      threads: [ok, { turns: [turn("user", "x")] }],
    });
    assert.deepEqual(
      plain.body.results.map((r: { score: number }) => r.score),
      [2, 1],
    );
    const badBody = { thread: { turns: [turn("r".repeat(65), "x")] } };
    const bad = await call(s.app, "POST", "/v1/projects/default/graders/n/grade", badBody);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, "INVALID_REQUEST");
    const [issue] = safeParse(GradeBody, badBody).error?.issues ?? [];
    assert.equal(bad.body.detail, `body.${issue.path.join(".")}: ${issue.message}`);
    // an unknown key goes to zod (which strips it) and the thread still grades
    const extra = await call(s.app, "POST", "/v1/projects/default/graders/n/grade", { thread: { ...ok, extra: 1 }, also: 2 });
    assert.equal(extra.status, 200);
    assert.equal(extra.body.score, 2);
  } finally {
    await s.close();
  }
});
