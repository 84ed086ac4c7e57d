// Faults in the sandbox: runaway graders and dying workers. The API process stays up, the
// grader at fault gets its code, and a healthy grader keeps answering correctly throughout.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";

let s: TestServer;
const base = "/v1/projects/faults/graders";
before(async () => {
  s = await startServer({ env: { GRADEBOX_TIMEOUT_MS: "400", GRADEBOX_WORKERS: "2" } });
  const graders = {
    healthy: "async (t) => (t.completion() === 'yes' ? 1 : 0)",
    spin: "async (t) => { for (;;) {} }",
    microspin: "async (t) => { await Promise.resolve(); Promise.resolve().then(() => { for (;;) {} }); return 1 }",
    never: "async (t) => new Promise(() => {})",
    // on Node 20 V8 aborted the whole process here; on Node 24 it grows the worker far past
    // isolated-vm's memoryLimit instead, until the worker's watchdog stops it
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
  assert.deepEqual(res.body.results, [
    { outcome: "scored", score: 1 },
    { outcome: "scored", score: 0 },
  ]);
};

test("a heap bomb is stopped within 2× the limit + 1 s, grows its worker by at most 2× the isolate limit + 64 MB, and kills only that worker", async () => {
  const pidsBefore = s.pool.pids;
  const restarts = s.pool.restarts;
  // the worker's RSS, sampled from /proc while the bomb goes off
  const statm = (pid: number) => Number(readFileSync(`/proc/${pid}/statm`, "ascii").split(" ")[1]) * 4096;
  const baseline = new Map(pidsBefore.map((pid) => [pid, statm(pid)]));
  let peakGrowth = 0;
  const sampler = setInterval(() => {
    for (const [pid, base] of baseline) {
      try {
        peakGrowth = Math.max(peakGrowth, statm(pid) - base);
      } catch {} // the worker is gone
    }
  }, 5);
  const t0 = performance.now();
  const [bad] = await Promise.all([
    call(s.app, "POST", `${base}/abort/grade`, { thread: thread("x", { boom: true }) }).then((r) => [r, performance.now() - t0] as const),
    healthy(),
    healthy(),
  ]);
  clearInterval(sampler);
  const [res, ms] = bad;
  assert.equal(res.status, 422, JSON.stringify(res.body));
  assert.equal(res.body.code, "GRADER_MEMORY_LIMIT");
  assert.ok(ms <= 2 * 400 + 1000, `stopped after ${Math.round(ms)} ms`);
  // the watchdog samples every 10 ms: allow what 10 ms of filling adds past its bound
  const bound = (2 * 64 + 64 + 32) * 1024 * 1024;
  assert.ok(peakGrowth <= bound, `the worker grew by ${Math.round(peakGrowth / 1048576)} MB`);
  assert.equal(s.pool.restarts, restarts + 1, "exactly one worker was replaced");
  assert.equal((await call(s.app, "GET", `${base}/abort`)).body.recentFaults, 1, "the fault is counted against the bomb");
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
  assert.equal(await s.store.get("faults", "abort-at-load"), undefined);
  await healthy();
});

test("a worker killed from outside mid-batch: its slice is graded again on a fresh worker, and nobody is blamed", async () => {
  const restarts = s.pool.restarts;
  const pending = call(s.app, "POST", `${base}/sleepy/grade-batch`, {
    threads: Array.from({ length: 8 }, () => thread("x", { ms: 150 })),
  });
  // as soon as a worker holds the batch, kill it the way the OOM killer would
  // the pool's worker handles (sandbox/host/supervisor.ts)
  const workers = (
    s.pool as unknown as { workers: { workers: Array<{ running?: unknown; role: string; child: { kill(sig: string): void } }> } }
  ).workers.workers;
  await waitFor(() => workers.some((x) => x.role === "grade" && x.running));
  workers.find((x) => x.role === "grade" && x.running)?.child.kill("SIGKILL");
  const res = await pending;
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.results, Array(8).fill({ outcome: "scored", score: 1 }));
  assert.equal(s.pool.restarts, restarts + 1);
  assert.equal((await call(s.app, "GET", `${base}/sleepy`)).body.recentFaults, 0, "an outside kill is nobody's fault");
  await healthy();
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

// Every global name an isolate has: the language's own, V8's inert console, and the two the
// prelude defines. A host-backed global added anywhere (a log function, a fetch) fails this.
const ALLOWED_GLOBALS = [
  ...["AggregateError", "Array", "ArrayBuffer", "AsyncDisposableStack", "BigInt", "BigInt64Array", "BigUint64Array", "Boolean"],
  ...["DataView", "Date", "DisposableStack", "Error", "EvalError", "Float16Array", "Float32Array", "Float64Array", "Function"],
  ...["Infinity", "Int16Array", "Int32Array", "Int8Array", "Intl", "Iterator", "JSON", "Map", "Math", "NaN", "Number", "Object"],
  ...["Promise", "Proxy", "RangeError", "ReferenceError", "Reflect", "RegExp", "Set", "String", "StringThread", "SuppressedError"],
  ...["Symbol", "SyntaxError", "TypeError", "URIError", "Uint16Array", "Uint32Array", "Uint8Array", "Uint8ClampedArray", "WeakMap"],
  ...["WeakRef", "WeakSet", "__name", "console", "decodeURI", "decodeURIComponent", "encodeURI", "encodeURIComponent", "escape"],
  ...["eval", "globalThis", "isFinite", "isNaN", "parseFloat", "parseInt", "undefined", "unescape"],
];

test("the isolate's global names are exactly the allow-list", async () => {
  await call(s.app, "POST", base, {
    key: "globals",
    source: "async (t) => ({ score: 1, metadata: { names: Reflect.ownKeys(globalThis).map(String).sort() } })",
  });
  const res = await call(s.app, "POST", `${base}/globals/grade`, { thread: thread("x") });
  assert.deepEqual(res.body.metadata.names, [...ALLOWED_GLOBALS].sort());
});

async function waitFor(cond: () => boolean, ms = 10_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}
