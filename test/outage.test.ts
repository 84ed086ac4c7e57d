// When the parts under the API fail: no sandbox worker, a closed database. The answers are
// problem+json with stable codes, and 5xx never echo internals.

import assert from "node:assert/strict";
import { test } from "node:test";
import { call, startServer, thread } from "./support/helpers.ts";

test("no sandbox worker: 503 SANDBOX_UNAVAILABLE; the rest of the API still answers", async () => {
  const s = await startServer();
  try {
    assert.equal((await call(s.app, "POST", "/v1/projects/p/graders", { key: "g", source: "async (t) => 1" })).status, 201);
    await s.pool.close();
    const res = await call(s.app, "POST", "/v1/projects/p/graders/g/grade", { thread: thread("x") });
    assert.equal(res.status, 503);
    assert.equal(res.body.code, "SANDBOX_UNAVAILABLE");
    assert.equal((await call(s.app, "GET", "/v1/projects/p/graders/g")).status, 200);
  } finally {
    await s.close();
  }
});

test("an unexpected failure is 500 INTERNAL with a request id and no internals", async () => {
  const s = await startServer();
  try {
    await s.keyFor("p"); // the key exists before the database goes away
    await s.store.db.close();
    const res = await call(s.app, "GET", "/v1/projects/p/graders");
    assert.equal(res.status, 500);
    assert.equal(res.body.code, "INTERNAL");
    assert.ok(res.body.requestId);
    assert.doesNotMatch(JSON.stringify(res.body), /database|sqlite|stack|\.ts/i);
  } finally {
    await s.close();
  }
});
