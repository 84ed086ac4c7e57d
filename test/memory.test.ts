// Memory a grader holds is accounted by bytes, and given back when it is deleted: warm isolates
// are evicted by heap bytes as well as by count, and a worker left holding memory that its
// warm isolates do not explain is replaced. Real workers, real isolates; RSS from /proc.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";

let s: TestServer;
before(async () => {
  s = await startServer({ env: { GRADEBOX_WORKERS: "1", GRADEBOX_WARM_HEAP_MB: "64", GRADEBOX_MEMORY_MB: "64" } });
});
after(() => s.close());

const MB = 1024 * 1024;
/** a grader whose module keeps ~`mb` MB of heap alive for as long as its isolate lives */
const hoarder = (mb: number) => `const keep = new Float64Array(${mb * 131072}).fill(1.5); async (t) => keep.length > 0 ? 1 : 0`;
const rss = async () => (await s.pool.stats()).reduce((a, w) => a + w.rss, 0);
const waitFor = async (what: string, ok: () => Promise<boolean>, ms = 8000) => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
};

test("warm isolates are evicted by heap bytes, not only by count", async () => {
  for (let i = 0; i < 6; i++) {
    assert.equal((await call(s.app, "POST", "/v1/projects/mem/graders", { key: `h${i}`, source: hoarder(20) })).status, 201);
    assert.equal((await call(s.app, "POST", `/v1/projects/mem/graders/h${i}/grade`, { thread: thread("x") })).body.score, 1);
  }
  const [stats] = await s.pool.stats();
  assert.ok(
    stats.warmHeapBytes <= 64 * MB + 25 * MB,
    `warm heap ${Math.round(stats.warmHeapBytes / MB)} MB within the 64 MB cap (+ the one in use)`,
  );
  assert.ok(stats.warm < 6, `${stats.warm} of 6 hoarders kept warm`);
  assert.ok(stats.evictions >= 3, `${stats.evictions} evictions`);
});

test("after its graders are deleted a worker's RSS returns near its baseline", async () => {
  await call(s.app, "POST", "/v1/projects/mem/graders", { key: "plain", source: "async (t) => 1" });
  await call(s.app, "POST", "/v1/projects/mem/graders/plain/grade", { thread: thread("x") });
  const pid = s.pool.pids[0];
  // warm isolates may hold 64 MB together; hoard well past that, then delete everything
  for (let i = 0; i < 6; i++) await call(s.app, "DELETE", `/v1/projects/mem/graders/h${i}`);
  const baseline = await rss();
  for (let i = 0; i < 10; i++) {
    await call(s.app, "POST", "/v1/projects/mem/graders", { key: `big${i}`, source: hoarder(30) });
    await call(s.app, "POST", `/v1/projects/mem/graders/big${i}/grade`, { thread: thread("x") });
  }
  const grown = await rss();
  for (let i = 0; i < 10; i++) assert.equal((await call(s.app, "DELETE", `/v1/projects/mem/graders/big${i}`)).status, 204);
  await waitFor("the worker's RSS to come back", async () => (await rss()) < baseline + 96 * MB);
  const back = await rss();
  console.log(
    `# worker RSS: ${Math.round(baseline / MB)} MB before, ${Math.round(grown / MB)} MB with 10 hoarders, ${Math.round(back / MB)} MB after deleting them${s.pool.pids[0] === pid ? "" : " (worker replaced)"}`,
  );
  assert.equal((await call(s.app, "POST", "/v1/projects/mem/graders/plain/grade", { thread: thread("x") })).body.score, 1);
});
