// What the pool accepts from a worker process: verdict lines and validation results are read
// as hostile input, strictly, whatever the worker sends.

import assert from "node:assert/strict";
import { test } from "node:test";
import { checkedValidation, parseVerdict } from "../sandbox/host/replies.ts";

test("verdict lines: well-formed ones are read, anything else is dropped", () => {
  // a worker past 1 GB is exactly the one to recycle
  assert.deepEqual(parseVerdict('{"verdict":"recycle","rss":1500000000}'), { verdict: "recycle", rss: 1_500_000_000 });
  assert.deepEqual(parseVerdict('{"verdict":"memory","job":7,"from":3,"count":1,"detail":"grew"}'), {
    verdict: "memory",
    job: 7,
    from: 3,
    count: 1,
    detail: "grew",
  });
  for (const bad of [
    "not json",
    '{"verdict":"blame-someone","job":1,"from":0,"count":1,"detail":""}',
    '{"verdict":"timeout","job":-1,"from":0,"count":1,"detail":""}',
    '{"verdict":"timeout","job":1,"from":0.5,"count":1,"detail":""}',
    '{"verdict":"timeout","job":1,"from":0,"count":1}',
    '{"verdict":"recycle","rss":"lots"}',
    `{"verdict":"timeout","job":1,"from":0,"count":1,"detail":"${"x".repeat(5000)}"}`,
  ]) {
    assert.equal(parseVerdict(bad), undefined, bad.slice(0, 80));
  }
});

test("validation results: copied field by field, bounded, malformed ones refused", () => {
  assert.deepEqual(checkedValidation({ ok: true, compiled: "x", warnings: ["w"], extra: 1 }), { ok: true, compiled: "x", warnings: ["w"] });
  assert.deepEqual(checkedValidation({ ok: false, failure: { check: "syntax", message: "m", line: 2, column: 3, costly: true } }), {
    ok: false,
    failure: { check: "syntax", message: "m", line: 2, column: 3, costly: true },
  });
  for (const bad of [
    null,
    { ok: "yes" },
    { ok: true, compiled: 5, warnings: [] },
    { ok: true, compiled: "x".repeat(8 * 1024 * 1024 + 1), warnings: [] },
    { ok: true, compiled: "x", warnings: Array(101).fill("w") },
    { ok: false, failure: { check: "vibes", message: "m" } },
    { ok: false, failure: { check: "syntax", message: "m", line: 0 } },
    { ok: false, failure: { check: "syntax", message: "m", costly: "yes" } },
  ]) {
    assert.equal(checkedValidation(bad), undefined, JSON.stringify(bad)?.slice(0, 80));
  }
});
