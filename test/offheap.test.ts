// Memory a grader holds outside its isolate's heap counts: Intl objects (malloc'd ICU state that
// neither isolated-vm's limit nor its heap statistics see) and resizable ArrayBuffers (reserved
// outside isolated-vm's allocator). A grader that keeps them call after call is stopped and
// blamed, the worker is bounded whatever it does, and a neighbour keeps being graded. Real
// server, real workers and isolates; RSS read from /proc as a bound, never as a timing.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";

const MB = 1024 * 1024;
// small limits make small bounds: a call may grow a worker by 2×16 + 64 = 96 MB, a grader may
// keep 96 MB outside its heap, and a worker is killed past baseline + 32 + 2×96 = baseline + 224 MB
const ENV = { GRADEBOX_MEMORY_MB: "16", GRADEBOX_WARM_HEAP_MB: "32" };
const CEILING_OVER_BASELINE = (32 + 2 * 96) * MB;
/** the watchdog looks every 10 ms: what a call can add between two looks, and the sampler's own lag */
const SLACK = 32 * MB;

/** keeps `n` new DateTimeFormats per graded item (about 26 KB each) */
const intlHoarder = (n: number) =>
  `const keep = [];
async (t) => {
  if (!t.metadata.attack) return 0.5;
  for (let i = 0; i < ${n}; i++) keep.push(new Intl.DateTimeFormat("en-US", { timeZone: "UTC" }));
  return 1;
}`;
/** keeps a resizable ArrayBuffer of `mb` MB, every page written, per graded item */
const bufferHoarder = (mb: number) =>
  `const keep = [];
async (t) => {
  if (!t.metadata.attack) return 0.5;
  const b = new ArrayBuffer(0, { maxByteLength: ${mb} * 1048576 });
  b.resize(${mb} * 1048576);
  new Uint8Array(b).fill(1);
  keep.push(b);
  return 1;
}`;

const status = (pid: number, field: string): number => {
  try {
    const kb = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? 0 : Number(kb) * 1024;
  } catch {
    return 0; // the worker has exited
  }
};

/** The highest RSS any grading worker reached while `work` ran (VmHWM, sampled every 20 ms). */
async function peakRssDuring(s: TestServer, work: Promise<unknown>): Promise<number> {
  const pids = new Set<number>();
  let peak = 0;
  const sample = () => {
    for (const pid of s.pool.pids) pids.add(pid);
    for (const pid of pids) peak = Math.max(peak, status(pid, "VmHWM"));
  };
  const timer = setInterval(sample, 20);
  try {
    await work;
  } finally {
    clearInterval(timer);
    sample();
  }
  return peak;
}

let s: TestServer;
/** the largest RSS of a fresh grading worker: at least its baseline, which the bounds are measured from */
let fresh = 0;
before(async () => {
  s = await startServer({ env: { ...ENV, GRADEBOX_WORKERS: "2" } });
  // the neighbour: 20 clean jobs make it trusted, as a grader in steady use is
  const neighbour = "async (t) => (t.completion() === t.metadata.expected ? 1 : 0)";
  assert.equal((await call(s.app, "POST", "/v1/projects/neighbour/graders", { key: "n", source: neighbour })).status, 201);
  for (let i = 0; i < 21; i++) await gradeNeighbour();
  fresh = Math.max(...(await s.pool.stats()).map((w) => w.rss));
});
after(() => s.close());

let neighbourItems = 0;
async function gradeNeighbour(): Promise<void> {
  const threads = [thread("yes", { expected: "yes" }), thread("no", { expected: "yes" }), thread("b", { expected: "b" })];
  const res = await call(s.app, "POST", "/v1/projects/neighbour/graders/n/grade-batch", { threads });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(
    res.body.results.map((r: { score?: number }) => r.score),
    [1, 0, 1],
  );
  neighbourItems += threads.length;
}

/**
 * Grades the attacker back to back (at most `calls` requests, until it is quarantined) while the
 * neighbour grades in a loop; returns the attacker's error codes, in order.
 */
async function attack(project: string, key: string, calls: number): Promise<string[]> {
  const codes: string[] = [];
  let done = false;
  const attacker = (async () => {
    try {
      for (let i = 0; i < calls; i++) {
        const res = await call(s.app, "POST", `/v1/projects/${project}/graders/${key}/grade`, { thread: thread("x", { attack: 1 }) });
        codes.push(res.status === 200 ? "ok" : res.body.code);
        if (res.status === 423) break;
      }
    } finally {
      done = true;
    }
  })();
  const neighbour = (async () => {
    while (!done) await gradeNeighbour();
  })();
  await Promise.all([attacker, neighbour]);
  return codes;
}

for (const [name, source, perCallMb] of [
  ["Intl.DateTimeFormat objects", intlHoarder(1500), 39],
  ["resizable ArrayBuffers", bufferHoarder(40), 40],
] as const) {
  test(`a grader that keeps ${name} (${perCallMb} MB per call, under the per-call bound) is stopped, blamed, and the worker stays bounded`, async () => {
    const project = `hoard-${perCallMb}`;
    assert.equal((await call(s.app, "POST", `/v1/projects/${project}/graders`, { key: "h", source })).status, 201);
    const neighbourBefore = neighbourItems;
    let codes: string[] = [];
    const peak = await peakRssDuring(
      s,
      attack(project, "h", 30).then((c) => (codes = c)),
    );
    const bound = fresh + CEILING_OVER_BASELINE;
    console.log(
      `# ${name}: ${codes.join(" ")}; worker peak ${Math.round(peak / MB)} MB (ceiling ≤ ${Math.round(bound / MB)} MB), ` +
        `${s.pool.recycled} workers recycled, ${neighbourItems - neighbourBefore} neighbour items graded`,
    );
    assert.ok(peak <= bound + SLACK, `a worker reached ${Math.round(peak / MB)} MB; the ceiling is ${Math.round(bound / MB)} MB`);
    assert.ok(codes.includes("GRADER_MEMORY_LIMIT"), `the hoarder was stopped: ${codes.join(" ")}`);
    // 30 calls would keep 1.2 GB: it was stopped once its isolate on each of the two workers kept 96 MB
    assert.ok(codes.indexOf("GRADER_MEMORY_LIMIT") <= 2 * Math.ceil(96 / perCallMb), `stopped early: ${codes.join(" ")}`);
    const got = await call(s.app, "GET", `/v1/projects/${project}/graders/h`);
    assert.ok(got.body.recentFaults > 0, "the faults count against the hoarder");
    assert.equal((await call(s.app, "GET", "/v1/projects/neighbour/graders/n")).body.recentFaults, 0, "and not against the neighbour");
    assert.ok(neighbourItems > neighbourBefore, "the neighbour was graded meanwhile");
    await gradeNeighbour();
  });
}

test("a grader that makes a new formatter per item and keeps none is not blamed: its garbage is collected", async () => {
  const source = `async (t) => {
  if (!t.metadata.attack) return 0.5;
  let n = 0;
  for (let i = 0; i < 1000; i++) n += new Intl.DateTimeFormat("en-US", { timeZone: "UTC", month: "long" }).format(new Date(i * 1e9)).length;
  return n > 0 ? 1 : 0;
}`;
  assert.equal((await call(s.app, "POST", "/v1/projects/tidy/graders", { key: "t", source })).status, 201);
  const codes: string[] = [];
  // 20 calls make 20,000 formatters (about 500 MB had they been kept, far past the 96 MB a grader may keep)
  const peak = await peakRssDuring(
    s,
    (async () => {
      for (let i = 0; i < 20; i++) {
        const res = await call(s.app, "POST", "/v1/projects/tidy/graders/t/grade", { thread: thread("x", { attack: 1 }) });
        codes.push(res.status === 200 ? String(res.body.score) : res.body.code);
      }
    })(),
  );
  console.log(`# per-item formatters: worker peak ${Math.round(peak / MB)} MB`);
  assert.deepEqual(codes, Array(20).fill("1"));
  assert.equal((await call(s.app, "GET", "/v1/projects/tidy/graders/t")).body.recentFaults, 0);
  assert.ok(peak <= fresh + CEILING_OVER_BASELINE + SLACK);
});

test("past its ceiling during a call, the worker is killed and the running call's grader blamed", async () => {
  // one worker: the two graders share it. The first keeps 80 MB from its module load on; the
  // second's module load keeps 80 MB more and, with no check between a load and the first call,
  // its first call (80 MB more, under the 96 MB a call may grow) carries the worker past
  // baseline + 224 MB
  const one = await startServer({ env: { ...ENV, GRADEBOX_WORKERS: "1" } });
  try {
    const keepAtLoad =
      "const kept = new ArrayBuffer(0, { maxByteLength: 80 * 1048576 }); kept.resize(80 * 1048576); new Uint8Array(kept).fill(1);";
    const first = `${keepAtLoad}\nasync (t) => kept.byteLength > 0 ? 1 : 0`;
    const second = `${keepAtLoad}
const more = [];
async (t) => {
  if (!t.metadata.attack) return 0.5;
  const b = new ArrayBuffer(0, { maxByteLength: 80 * 1048576 });
  b.resize(80 * 1048576);
  new Uint8Array(b).fill(1);
  more.push(b);
  // stay in the call long enough for the watchdog to look (well within the time limit)
  const until = Date.now() + 300;
  while (Date.now() < until);
  return kept.byteLength > 0 ? 1 : 0;
}`;
    for (const [key, source] of [
      ["first", first],
      ["second", second],
    ]) {
      assert.equal((await call(one.app, "POST", "/v1/projects/ceiling/graders", { key, source })).status, 201);
    }
    assert.equal((await call(one.app, "POST", "/v1/projects/ceiling/graders/first/grade", { thread: thread("x") })).body.score, 1);
    const pid = one.pool.pids[0];
    const res = await call(one.app, "POST", "/v1/projects/ceiling/graders/second/grade", { thread: thread("x", { attack: 1 }) });
    assert.equal(res.body.code, "GRADER_MEMORY_LIMIT", JSON.stringify(res.body));
    assert.match(res.body.detail, /ceiling/);
    assert.notEqual(one.pool.pids[0], pid, "the worker was replaced");
    assert.equal((await call(one.app, "GET", "/v1/projects/ceiling/graders/second")).body.recentFaults, 1);
    assert.equal((await call(one.app, "GET", "/v1/projects/ceiling/graders/first")).body.recentFaults, 0);
    assert.equal((await call(one.app, "POST", "/v1/projects/ceiling/graders/first/grade", { thread: thread("x") })).body.score, 1);
  } finally {
    await one.close();
  }
});
