// Faults in the sandbox: runaway graders and dying workers. The API process stays up, the
// grader at fault gets its code, and a healthy grader keeps answering correctly throughout.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { call, startServer, type TestServer, thread } from "./helpers.ts";

let s: TestServer;
const base = "/v1/projects/faults/graders";
before(async () => {
  s = await startServer({ env: { GRADEBOX_TIMEOUT_MS: "400", GRADEBOX_WORKERS: "2" } });
  const graders = {
    healthy: "async (t) => (t.completion() === 'yes' ? 1 : 0)",
    spin: "async (t) => { for (;;) {} }",
    microspin: "async (t) => { await Promise.resolve(); Promise.resolve().then(() => { for (;;) {} }); return 1 }",
    never: "async (t) => new Promise(() => {})",
    // V8 aborts the whole process on this path instead of honouring isolated-vm's memoryLimit
    abort: "async (t) => { if (t.metadata.boom) new Array(6e7).fill(0); return 1 }",
    sleepy: "async (t) => { const end = Date.now() + Number(t.metadata.ms ?? 0); while (Date.now() < end) {} return 1 }",
  };
  for (const [key, source] of Object.entries(graders)) {
    const res = await call(s.app, "POST", base, { key, source });
    if (key === "spin" || key === "never" || key === "microspin") assert.equal(res.status, 422, `${key} fails its test run`);
    else assert.equal(res.status, 201, JSON.stringify(res.body));
  }
});
after(() => s.close());

const healthy = async () => {
  const res = await call(s.app, "POST", `${base}/healthy/grade-batch`, { threads: [thread("yes"), thread("no")] });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body.results, [{ score: 1 }, { score: 0 }]);
};

test("a V8 out-of-memory abort kills only a worker: GRADER_MEMORY_LIMIT, worker replaced, others keep answering", async () => {
  const pidsBefore = s.pool.pids;
  const restarts = s.pool.restarts;
  const [bad] = await Promise.all([
    call(s.app, "POST", `${base}/abort/grade`, { thread: thread("x", { boom: true }) }),
    healthy(),
    healthy(),
  ]);
  assert.equal(bad.status, 422, JSON.stringify(bad.body));
  assert.equal(bad.body.code, "GRADER_MEMORY_LIMIT");
  assert.equal(s.pool.restarts, restarts + 1, "exactly one worker was replaced");
  await healthy();
  const ok = await call(s.app, "POST", `${base}/abort/grade`, { thread: thread("x") });
  assert.equal(ok.body.score, 1, "the same grader works on input that does not blow up");
  await waitFor(() => s.pool.readyWorkers === 2);
  assert.notDeepEqual(s.pool.pids, pidsBefore);
});

test("a module body that makes V8 abort its worker fails validation (execution) and saves nothing", async () => {
  const res = await call(s.app, "POST", base, {
    key: "abort-at-load",
    source: "new Array(6e7).fill(0);\nasync function grade(t) { return 1 }",
  });
  assert.equal(res.status, 422, JSON.stringify(res.body));
  assert.equal(res.body.code, "VALIDATION_FAILED");
  assert.equal(res.body.check, "execution");
  assert.match(res.body.message, /GRADER_MEMORY_LIMIT/);
  assert.equal(s.store.get("faults", "abort-at-load"), undefined);
  await healthy();
});

test("a worker killed mid-batch: SANDBOX_CRASHED for the items it held, the next call succeeds", async () => {
  const pending = call(s.app, "POST", `${base}/sleepy/grade-batch`, {
    threads: Array.from({ length: 8 }, () => thread("x", { ms: 150 })),
  });
  // wait until one worker holds the batch, then kill it the way the OOM killer would
  await new Promise((r) => setTimeout(r, 300));
  const busy = (s.pool as unknown as { slots: Array<{ job?: unknown; child: { kill(sig: string): void } }> }).slots.find((x) => x.job);
  assert.ok(busy, "a worker is busy with the batch");
  busy.child.kill("SIGKILL");
  const res = await pending;
  assert.equal(res.status, 200);
  assert.equal(res.body.results.length, 8);
  for (const r of res.body.results) assert.equal(r.error.code, "SANDBOX_CRASHED");
  assert.match(res.body.results[0].error.message, /SIGKILL/);
  await healthy();
  const again = await call(s.app, "POST", `${base}/sleepy/grade`, { thread: thread("x", { ms: 1 }) });
  assert.equal(again.body.score, 1);
});

test("grading keeps up for a healthy grader while another grader times out repeatedly", async () => {
  await call(s.app, "POST", base, { key: "sometimes", source: "async (t) => { if (t.metadata.spin) for (;;) {} return 1 }" });
  const hostile = Array.from({ length: 3 }, () =>
    call(s.app, "POST", `${base}/sometimes/grade`, { thread: thread("x", { spin: true }) }).then((r) => r.body.code),
  );
  const friendly = Array.from({ length: 10 }, () => healthy());
  const codes = await Promise.all(hostile);
  await Promise.all(friendly);
  assert.deepEqual(codes, ["GRADER_TIMEOUT", "GRADER_TIMEOUT", "GRADER_TIMEOUT"]);
});

test("a grader cannot leave state for the next call of another grader", async () => {
  await call(s.app, "POST", base, {
    key: "polluter",
    source: "async (t) => { Array.prototype.includes = () => true; String.prototype.trim = () => 'owned'; globalThis.leak = 1; return 1 }",
  });
  await call(s.app, "POST", base, {
    key: "victim",
    source: "async (t) => (typeof globalThis.leak === 'undefined' && ' a '.trim() === 'a' && ![1].includes(2) ? 1 : 0)",
  });
  assert.equal((await call(s.app, "POST", `${base}/polluter/grade`, { thread: thread("x") })).body.score, 1);
  assert.equal((await call(s.app, "POST", `${base}/victim/grade`, { thread: thread("x") })).body.score, 1);
});

test("the sandbox has no host APIs and no WebAssembly", async () => {
  await call(s.app, "POST", base, {
    key: "probe",
    source: `async (t) => [typeof process, typeof globalThis.require, typeof WebAssembly, typeof SharedArrayBuffer, typeof fetch, typeof setTimeout]
      .every((x) => x === "undefined") ? 1 : 0`,
  });
  assert.equal((await call(s.app, "POST", `${base}/probe/grade`, { thread: thread("x") })).body.score, 1);
});

async function waitFor(cond: () => boolean, ms = 10_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}
