// Quarantine and fair scheduling: a grader that keeps taking its worker down is stopped, and
// runaway graders cannot make a healthy grader wait for a worker.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";

let s: TestServer;
const base = "/v1/projects/q/graders";
before(async () => {
  s = await startServer({ env: { GRADEBOX_TIMEOUT_MS: "200", GRADEBOX_WORKERS: "2" } });
  for (const [key, source] of Object.entries({
    aborter: "async (t) => { if (t.metadata.boom) new Array(6e7).fill(0); return 1 }",
    looper: "async (t) => { if (t.metadata.spin) for (;;) {} return 1 }",
    healthy: "async (t) => (t.completion() === 'yes' ? 1 : 0)",
  })) {
    assert.equal((await call(s.app, "POST", base, { key, source })).status, 201);
  }
});
after(() => s.close());

const boom = () => call(s.app, "POST", `${base}/aborter/grade`, { thread: thread("x", { boom: true }) });

test("3 worker-killing faults in 10 minutes quarantine a grader until it is released", async () => {
  for (let i = 1; i <= 3; i++) {
    const res = await boom();
    assert.equal(res.body.code, "GRADER_MEMORY_LIMIT");
    const got = await call(s.app, "GET", `${base}/aborter`);
    assert.equal(got.body.recentFaults, i, "the count is visible in get");
    assert.equal(got.body.quarantinedAt === null, i < 3);
  }
  const restarts = s.pool.restarts;
  const refused = await call(s.app, "POST", `${base}/aborter/grade`, { thread: thread("x") });
  assert.equal(refused.status, 423);
  assert.equal(refused.body.code, "GRADER_QUARANTINED");
  assert.match(refused.body.detail, /release/);
  const batch = await call(s.app, "POST", `${base}/aborter/grade-batch`, { threads: [thread("x")] });
  assert.equal(batch.body.code, "GRADER_QUARANTINED");
  assert.equal(s.pool.restarts, restarts, "a quarantined grader never reaches a worker");
  const listed = await call(s.app, "GET", base);
  assert.ok(listed.body.data.find((g: { key: string }) => g.key === "aborter").quarantinedAt);

  const released = await call(s.app, "POST", `${base}/aborter/release`);
  assert.equal(released.status, 200);
  assert.equal(released.body.quarantinedAt, null);
  assert.equal(released.body.recentFaults, 0);
  assert.equal((await call(s.app, "POST", `${base}/aborter/grade`, { thread: thread("x") })).body.score, 1);
});

test("timeouts inside the isolate do not count towards quarantine (the worker survives them)", async () => {
  for (let i = 0; i < 4; i++) {
    assert.equal((await call(s.app, "POST", `${base}/looper/grade`, { thread: thread("x", { spin: true }) })).body.code, "GRADER_TIMEOUT");
  }
  const got = await call(s.app, "GET", `${base}/looper`);
  assert.equal(got.body.recentFaults, 0);
  assert.equal(got.body.quarantinedAt, null);
});

function p99(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)];
}

async function healthyLatencies(n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const res = await call(s.app, "POST", `${base}/healthy/grade`, { thread: thread(i % 2 ? "yes" : "no") });
    out.push(performance.now() - started);
    assert.equal(res.body.score, i % 2 ? 1 : 0, "correct during the attack");
  }
  return out;
}

test("a healthy grader keeps its latency while runaway graders are hammered concurrently", async () => {
  await healthyLatencies(30); // earns trust: 20 clean jobs
  const alone = p99(await healthyLatencies(200));

  let attacking = true;
  let hostileCalls = 0;
  const hammer = async (url: string, body: unknown) => {
    while (attacking) {
      await call(s.app, "POST", url, body);
      hostileCalls++;
    }
  };
  await call(s.app, "POST", `${base}/aborter/release`);
  const attackers = [
    ...Array.from({ length: 4 }, () => hammer(`${base}/looper/grade`, { thread: thread("x", { spin: true }) })),
    hammer(`${base}/looper/grade-batch`, { threads: Array.from({ length: 5 }, () => thread("x", { spin: true })) }),
    hammer(`${base}/aborter/grade`, { thread: thread("x", { boom: true }) }),
  ];
  await new Promise((r) => setTimeout(r, 300)); // let the attack saturate the queue
  const under = p99(await healthyLatencies(200));
  attacking = false;
  await Promise.all(attackers);

  const ratio = under / alone;
  console.log(
    `# healthy grader p99: alone ${alone.toFixed(2)} ms, under attack ${under.toFixed(2)} ms (${ratio.toFixed(2)}x); ${hostileCalls} hostile calls`,
  );
  assert.ok(hostileCalls > 5, "the attack really ran");
  // The scheduling property, with a margin no noisy machine erases: a healthy call never
  // waits for a runaway call to finish (each holds a worker for the 200 ms limit).
  assert.ok(under < 200, `healthy p99 ${under.toFixed(1)} ms must stay below one runaway call (200 ms)`);
});
