// /metrics (Prometheus), /healthz and /readyz on the real app.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";

let s: TestServer;
before(async () => {
  s = await startServer({ env: { GRADEBOX_TIMEOUT_MS: "300", GRADEBOX_WARM_ISOLATES: "2" } });
});
after(() => s.close());

const metrics = async () => {
  const res = await s.app.inject({ method: "GET", url: "/metrics", headers: { authorization: `Bearer ${s.metricsToken}` } });
  assert.equal(res.statusCode, 200, res.body);
  return res.body;
};
const value = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

test("grades by grader and result code, latency histograms, batch sizes", async () => {
  await call(s.app, "POST", "/v1/projects/m/graders", {
    key: "g",
    source: "async (t) => { if (t.metadata.bad) throw new Error('x'); return 1 }",
  });
  await call(s.app, "POST", "/v1/projects/m/graders/g/grade", { thread: thread("a") });
  await call(s.app, "POST", "/v1/projects/m/graders/g/grade-batch", { threads: [thread("a"), thread("b", { bad: true }), thread("c")] });
  const text = await metrics();
  assert.equal(value(text, 'gradebox_grades_total{project="m",grader="g",code="ok"}'), 3);
  assert.equal(value(text, 'gradebox_grades_total{project="m",grader="g",code="GRADER_ERROR"}'), 1);
  assert.equal(value(text, 'gradebox_grading_duration_seconds_count{route="grade"}'), 1);
  assert.equal(value(text, 'gradebox_grading_duration_seconds_count{route="grade-batch"}'), 1);
  assert.equal(value(text, 'gradebox_batch_size_bucket{le="2"}'), 1, "one request of 1 thread");
  assert.equal(value(text, 'gradebox_batch_size_bucket{le="5"}'), 2, "and one of 3");
  assert.equal(value(text, "gradebox_sandbox_workers_ready"), 2);
  assert.match(text, /^gradebox_api_process_resident_memory_bytes \d+/m);
});

test("warm isolates, evictions and worker restarts", async () => {
  for (const k of ["e1", "e2", "e3", "e4"]) {
    await call(s.app, "POST", "/v1/projects/m/graders", { key: k, source: "async (t) => 1" });
    await call(s.app, "POST", `/v1/projects/m/graders/${k}/grade`, { thread: thread("x") });
  }
  let text = await metrics();
  const warm = value(text, "gradebox_warm_isolates");
  assert.ok(warm !== undefined && warm >= 1 && warm <= 4, `at most 2 warm per worker, got ${warm}`);
  assert.ok((value(text, "gradebox_isolate_evictions") ?? 0) >= 1, "the LRU evicted");
  const restarts = value(text, "gradebox_worker_restarts_total") ?? 0;
  await call(s.app, "POST", "/v1/projects/m/graders", {
    key: "boom",
    source: "async (t) => { if (t.metadata.boom) new Array(6e7).fill(0); return 1 }",
  });
  await call(s.app, "POST", "/v1/projects/m/graders/boom/grade", { thread: thread("x", { boom: true }) });
  text = await metrics();
  assert.equal(value(text, "gradebox_worker_restarts_total"), restarts + 1);
  assert.equal(value(text, 'gradebox_grades_total{project="m",grader="boom",code="GRADER_MEMORY_LIMIT"}'), 1);
});

test("/healthz is liveness; /readyz needs the database and a worker", async () => {
  assert.equal((await s.app.inject({ method: "GET", url: "/healthz" })).statusCode, 200);
  for (let i = 0; i < 200 && s.pool.readyWorkers < 2; i++) await new Promise((r) => setTimeout(r, 50)); // the replaced worker
  const ready = await s.app.inject({ method: "GET", url: "/readyz" });
  assert.equal(ready.statusCode, 200);
  assert.deepEqual(JSON.parse(ready.body), { status: "ready", database: true, workers: 2 });
  await s.pool.close();
  const notReady = await s.app.inject({ method: "GET", url: "/readyz" });
  assert.equal(notReady.statusCode, 503);
  assert.equal(JSON.parse(notReady.body).workers, 0);
  assert.equal((await s.app.inject({ method: "GET", url: "/healthz" })).statusCode, 200, "still alive");
});
