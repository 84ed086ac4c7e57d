// make bench: grading throughput and latency, every row measured in this run and reported as
// a ratio to (a), the grader called natively in this process. Writes bench/results.json.

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import vm from "node:vm";
import { SandboxPool } from "../sandbox/host/pool.ts";
import { Gradebox } from "../sdk/index.ts";
import { StringThread, type WireThread } from "../sdk/thread.ts";
import { spawnServer } from "../test/support/helpers.ts";
import { codeExecRows } from "./code-exec.ts";
import { GRADERS, makeThreads } from "./corpus.ts";
import { deadlineExtra } from "./deadlines.ts";
import { endpointRows } from "./endpoints.ts";
import { bareFastify, ipcRoundTrip, nativeScaling } from "./floors.ts";
import { judgeRows } from "./judges.ts";
import { latencies, pct } from "./latency.ts";
import { multinodeRows } from "./multinode.ts";
import { type Grade, gradeAll, nativeGrader, stringThreadPrelude } from "./native.ts";
import { childPids, cpuUs, sandboxWorkers, serverRole, statusKb } from "./proc.ts";
import { provenance } from "./provenance.ts";
import { pythonRows } from "./python.ts";
import { type Row, type Target, targetsTable, workerdRows, workerdTargets, workerdVersion } from "./workerd.ts";

const LIMITS = { timeoutMs: 1000, memoryMb: 64, maxWarm: 256, maxWarmHeapMb: 384 };
const BATCH = 250;
const threads = makeThreads(2000);
const rows: Row[] = [];
const extra: Record<string, number | string> = {};
const log = (msg: string) => process.stderr.write(`${msg}\n`);

/**
 * Runs fn repeatedly for at least `ms` (after one warm-up pass): items per second, and the CPU
 * time per item of each group of processes in `watch`.
 */
async function measure(
  fn: () => Promise<number>,
  watch: Record<string, number[]> = {},
  ms = 1500,
): Promise<Pick<Row, "itemsPerSec" | "cpuUsPerItem">> {
  await fn();
  let items = 0;
  const groups = Object.entries(watch);
  const before = groups.map(([, pids]) => pids.reduce((a, pid) => a + cpuUs(pid), 0));
  const start = performance.now();
  while (performance.now() - start < ms) items += await fn();
  const itemsPerSec = items / ((performance.now() - start) / 1000);
  if (groups.length === 0) return { itemsPerSec };
  const cpuUsPerItem = Object.fromEntries(
    groups.map(([name, pids], i) => [name, +((pids.reduce((a, pid) => a + cpuUs(pid), 0) - before[i]) / items).toFixed(1)]),
  );
  return { itemsPerSec, cpuUsPerItem };
}
const throughput = async (fn: () => Promise<number>, ms = 1500) => (await measure(fn, {}, ms)).itemsPerSec as number;

const pool = new SandboxPool({ size: 2, limits: LIMITS });
await pool.start();
const compiled: Record<string, string> = {};
for (const [name, source] of Object.entries(GRADERS)) {
  const v = await pool.validate("bench", source);
  if (!v.ok) throw new Error(`${name}: ${v.failure.message}`);
  compiled[name] = v.compiled;
}

// (a) native and (b) node:vm: the same compiled script, in this process
function vmGrader(code: string): Grade {
  const ctx = vm.createContext({ StringThread, __name: (f: unknown) => f });
  vm.runInContext(code, ctx);
  return ctx.__gradebox_grade as Grade;
}
const loop = (grade: Grade) => () => gradeAll(grade, threads);

// what any design that moves threads between processes pays at least once: parsing them
const batchJson = JSON.stringify(threads);
const parsedLoop = (grade: Grade) => () => gradeAll(grade, JSON.parse(batchJson) as WireThread[]);

const native: Record<string, number> = {};
for (const name of Object.keys(GRADERS)) {
  native[name] = await throughput(loop(nativeGrader(compiled[name])));
  rows.push({ row: "(a) native, same process", grader: name, itemsPerSec: native[name] });
  rows.push({
    row: "(a′) native + JSON.parse of the batch",
    grader: name,
    itemsPerSec: await throughput(parsedLoop(nativeGrader(compiled[name]))),
    note: "the data floor of any out-of-process design",
  });
  rows.push({ row: "(b) node:vm context, reused", grader: name, itemsPerSec: await throughput(loop(vmGrader(compiled[name]))) });
}
log("native and vm done");

// (c) a fresh process per call, the way jail-based graders run (a small sample)
{
  const prelude = stringThreadPrelude();
  const script = `${prelude}\n${compiled["exact-match"]}\nconst t = JSON.parse(process.argv[1]); globalThis.__gradebox_grade(new StringThread(t.turns, t.metadata)).then((s) => process.stdout.write(String(s)));`;
  const n = 20;
  const start = performance.now();
  for (let i = 0; i < n; i++) spawnSync(process.execPath, ["-e", script, JSON.stringify(threads[i])], { encoding: "utf8" });
  rows.push({
    row: "(c) fresh process per call",
    grader: "exact-match",
    itemsPerSec: n / ((performance.now() - start) / 1000),
    note: `${n} calls`,
  });
}
log("fresh process done");

// (d) the sandbox engine through the pool and its worker processes, no HTTP
const batches: WireThread[][] = [];
for (let i = 0; i < threads.length; i += BATCH) batches.push(threads.slice(i, i + BATCH));
async function engineBatch(p: SandboxPool, id: string, code: string, concurrency: number): Promise<number> {
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < batches.length) {
        const b = batches[next++];
        const results = await p.gradeBatch({ id, project: "bench", compiled: code }, b);
        if (results.some((r) => "error" in r)) throw new Error(JSON.stringify(results.find((r) => "error" in r)));
        done += b.length;
      }
    }),
  );
  return done;
}
for (const name of Object.keys(GRADERS)) {
  // 20 clean jobs make a grader trusted, and only trusted graders may use every worker
  for (let i = 0; i < 25; i++) await pool.gradeBatch({ id: name, project: "bench", compiled: compiled[name] }, [threads[i]]);
  const isolateCpu = async () => (await pool.stats()).reduce((a, s) => a + s.isolateCpuUs, 0);
  const isolateBefore = await isolateCpu();
  let graded = 0;
  const row: Row = {
    row: "(d) sandbox engine, batch",
    grader: name,
    ...(await measure(
      async () => {
        const n = await engineBatch(pool, name, compiled[name], 2);
        graded += n;
        return n;
      },
      { bench: [process.pid], workers: pool.pids },
    )),
  };
  // inside the isolates alone (isolated-vm's cpuTime, every pass including measure's warm-up)
  (row.cpuUsPerItem as Record<string, number>)["in isolates"] = +(((await isolateCpu()) - isolateBefore) / graded).toFixed(1);
  rows.push(row);
  const single = async () => {
    for (let i = 0; i < 200; i++) await pool.gradeBatch({ id: name, project: "bench", compiled: compiled[name] }, [threads[i]]);
    return 200;
  };
  rows.push({ row: "(d) sandbox engine, single", grader: name, itemsPerSec: await throughput(single) });
}
rows.push({
  row: "(d₀) floor: Node IPC round trip, one thread",
  grader: "",
  ...(await ipcRoundTrip(threads[0])),
  note: "what any call into a worker process costs here",
});
log("engine done");

// throughput with 1 vs 2 workers
{
  const one = new SandboxPool({ size: 1, limits: LIMITS });
  await one.start();
  const c = compiled["exact-match"];
  const w1 = await throughput(() => engineBatch(one, "w", c, 2), 2500);
  // (d¹) the heavy grader's CPU inside the isolate with one worker and nothing else grading: the
  // same conditions as (a), one busy core (with two workers the two slow each other down, as two
  // native processes do)
  for (let i = 0; i < 25; i++) await one.gradeBatch({ id: "heavy", project: "bench", compiled: compiled.heavy }, [threads[i]]);
  const isolateUs = async () => (await one.stats())[0].isolateCpuUs;
  const before = await isolateUs();
  let graded = 0;
  const heavyOne = await throughput(async () => {
    const n = await engineBatch(one, "heavy", compiled.heavy, 1);
    graded += n;
    return n;
  }, 3000);
  const inIsolates = +(((await isolateUs()) - before) / graded).toFixed(1);
  rows.push({
    row: "(d¹) sandbox engine, batch, one worker",
    grader: "heavy",
    itemsPerSec: heavyOne,
    cpuUsPerItem: { "in isolate": inIsolates },
    note: "in-isolate CPU with one busy core, as (a)",
  });
  await one.close();
  const w2 = await throughput(() => engineBatch(pool, "exact-match", c, 2), 2500);
  extra.workers1ItemsPerSec = Math.round(w1);
  extra.workers2ItemsPerSec = Math.round(w2);
  extra.workers2over1 = +(w2 / w1).toFixed(2);
  // the same question asked of the native grader with no sandbox and no producer: what two
  // processes give over one on this machine for this kind of work
  extra.nativeProcesses2over1 = +(await nativeScaling(c, 2500)).toFixed(2);
}

// memory per warm grader: 200 distinct graders warmed in the pool's workers
{
  const before = (await pool.stats()).reduce((a, s) => a + s.rss, 0);
  const warmBefore = (await pool.stats()).reduce((a, s) => a + s.warm, 0);
  for (let i = 0; i < 200; i++) {
    const v = await pool.validate("bench", `${GRADERS["exact-match"]}\n// variant ${i}`);
    if (!v.ok) throw new Error(v.failure.message);
    await pool.gradeBatch({ id: `mem-${i}`, project: "bench", compiled: v.compiled }, [threads[i]]);
  }
  const after = await pool.stats();
  const warm = after.reduce((a, s) => a + s.warm, 0) - warmBefore;
  extra.memoryPerWarmGraderMB = +((after.reduce((a, s) => a + s.rss, 0) - before) / warm / 1024 / 1024).toFixed(2);
}
await pool.close();
log("pool rows done");

// (e) over HTTP through the SDK, against the real server in its own process
const dir = mkdtempSync(join(tmpdir(), "gradebox-bench-"));
// the real server in its own process, started as the tests start it; the memory row registers
// 1,000 graders beside the rows' own, past the default quota of 1,000 per project
const server = await spawnServer({
  GRADEBOX_DB: join(dir, "g.db"),
  GRADEBOX_WORKERS: "2",
  GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32",
  GRADEBOX_QUOTA_GRADERS: "2000",
});
try {
  const url = server.url;
  const client = new Gradebox({ baseURL: url, project: "default", apiKey: readFileSync(join(dir, "default.key"), "utf8").trim() });
  for (const [name, source] of Object.entries(GRADERS)) await client.graders.create.function({ key: name, source });

  for (const name of Object.keys(GRADERS)) {
    for (let i = 0; i < 25; i++) await client.graders.grade({ graderKey: name, thread: threads[i] });
    const httpBatch = async () => {
      let next = 0;
      let done = 0;
      await Promise.all(
        Array.from({ length: 2 }, async () => {
          while (next < batches.length) {
            const b = batches[next++];
            done += (await client.graders.gradeBatch({ graderKey: name, threads: b })).results.length;
          }
        }),
      );
      return done;
    };
    const serverPid = server.child.pid as number;
    const watch = { bench: [process.pid], server: [serverPid], workers: sandboxWorkers(serverPid) };
    rows.push({ row: "(e) HTTP gradeBatch (SDK)", grader: name, ...(await measure(httpBatch, watch)) });
  }
  rows.push({
    row: "(e) HTTP single grade (SDK)",
    grader: "exact-match",
    ...(await latencies((i) => client.graders.grade({ graderKey: "exact-match", thread: threads[i % threads.length] }), 2500, 500)),
  });
  const floor = await bareFastify(threads[0]);
  rows.push({
    row: "(e₀) floor: bare Fastify route, one thread, the SDK's transport",
    grader: "",
    ...floor,
    note: "what one HTTP request costs here before any grading",
  });
  log("http rows done");

  const judge = await judgeRows(client, {
    turns: [
      { role: "user", content: "What is the capital of France?" },
      { role: "assistant", content: "Paris." },
    ],
  });
  rows.push(judge.row, judge.single, judge.directRow);
  Object.assign(extra, judge.extra);
  // the SDK-to-Gradebox hop is e₀'s; what is left is Gradebox's own work per judge call
  extra.judgeOverheadBeyondHttpFloorP50Ms = +(judge.extra.judgeOverheadP50Ms - floor.p50Ms).toFixed(2);
  log("judge rows done");

  const ep = await endpointRows(client);
  rows.push(...ep.rows);
  Object.assign(extra, ep.extra);
  log("endpoint rows done");

  // registration latency (five checks), warm server
  const reg: number[] = [];
  for (let i = 0; i < 60; i++) {
    const t0 = performance.now();
    await client.graders.create.function({ key: `reg-${i}`, source: `${GRADERS.keywords}\n// ${i}` });
    reg.push(performance.now() - t0);
  }
  extra.registrationP50Ms = +pct(reg.slice(10), 0.5).toFixed(2);
  extra.registrationP99Ms = +pct(reg.slice(10), 0.99).toFixed(2);

  // 1,000 registered graders, all invoked: RSS of the server and its workers
  let next = 0;
  await Promise.all(
    Array.from({ length: 2 }, async () => {
      while (next < 1000) {
        const i = next++;
        await client.graders.create.function({ key: `many-${i}`, source: `${GRADERS["exact-match"]}\n// ${i}` });
        await client.graders.grade({ graderKey: `many-${i}`, thread: threads[i % threads.length] });
      }
    }),
  );
  const pids = [server.child.pid as number, ...childPids(server.child.pid as number)];
  const rssMb = (pid: number) => statusKb(pid, "VmRSS") / 1024;
  extra.rssWith1000GradersMB = Math.round(pids.reduce((a, pid) => a + rssMb(pid), 0));
  // where that memory is: the API process, each grading worker, the validation worker, esbuild
  const apiPid = server.child.pid as number;
  extra.rssWith1000GradersByProcessMB = pids.map((pid) => `${serverRole(pid, apiPid)} ${Math.round(rssMb(pid))}`).join(", ");
  log("registration and memory done");
} finally {
  server.child.kill("SIGTERM");
  await server.exited;
  rmSync(dir, { recursive: true, force: true });
}

// (w) Gradebox against workerd on the same graders, threads and client, each measured alone
const workerd = await workerdRows({ log, threads });
rows.push(...workerd.rows);
Object.assign(extra, workerd.extra);
log("workerd rows done");

// (m) 1, 2 and 3 nodes on one PostgreSQL registry behind HAProxy, after the single server is gone
const multinode = await multinodeRows({ log });
rows.push(...multinode.rows);
Object.assign(extra, multinode.extra);
log("multi-node rows done");

// (py) Python graders (issue 24): their rows, measures and targets join this table's
const python = await pythonRows({ log, threads });
rows.push(...python.rows);
Object.assign(extra, python.extra);
log("python rows done");

// (code) code execution (issue 29): runs with fresh state against python3 per run, and through the pool
const code = await codeExecRows({ log });
rows.push(...code.rows);
Object.assign(extra, code.extra);
log("code rows done");

// (dl) batch deadlines (issue 25): 1,000 threads, 5 that hang, a 1.5 s deadline
Object.assign(extra, await deadlineExtra({ log }));
log("deadline rows done");

// the table
const fmt = (n?: number, d = 0) =>
  n === undefined ? "" : n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const lines = [
  "| row | grader | items/s | × native | p50 ms | p99 ms | p99.9 ms | CPU µs/item |",
  "|---|---|---:|---:|---:|---:|---:|---|",
];
for (const r of rows) {
  const ratio = r.itemsPerSec && native[r.grader] ? r.itemsPerSec / native[r.grader] : undefined;
  const cpu = r.cpuUsPerItem
    ? Object.entries(r.cpuUsPerItem)
        .map(([who, us]) => `${who} ${us}`)
        .join(" · ")
    : "";
  lines.push(
    `| ${r.row} | ${r.grader} | ${fmt(r.itemsPerSec)} | ${ratio === undefined ? "" : ratio < 0.01 ? ratio.toExponential(1) : ratio.toFixed(2)} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p99Ms, 2)} | ${fmt(r.p999Ms, 2)} | ${cpu} |`,
  );
}
// issue 17's targets, each read off this run
const heavyEngine = rows.find((r) => r.row === "(d) sandbox engine, batch" && r.grader === "heavy");
const heavyOneWorker = rows.find((r) => r.row === "(d¹) sandbox engine, batch, one worker");
const heavyNativeUs = 1e6 / native.heavy;
const targets: Target[] = [
  {
    target: "heavy grader: CPU per item inside the isolate ÷ native (d¹ ÷ a)",
    measured: +((heavyOneWorker?.cpuUsPerItem?.["in isolate"] ?? Number.NaN) / heavyNativeUs).toFixed(2),
    limit: 1.2,
    atLeast: false,
  },
  ...workerdTargets(extra, ["keywords", "medium", "heavy"]),
  { target: "registration p50 (ms)", measured: extra.registrationP50Ms as number, limit: 25, atLeast: false },
  {
    target: "1,000 warm graders: RSS of the server and its workers (MB)",
    measured: extra.rssWith1000GradersMB as number,
    limit: 1536,
    atLeast: false,
  },
];
targets.push(...python.targets, ...code.targets);
extra.heavyIsolateCpuOverNative = targets[0].measured;
// with two workers busy (d), against the same native figure: the two cores' mutual slowdown included
extra.heavyIsolatesCpuOverNative2Workers = +((heavyEngine?.cpuUsPerItem?.["in isolates"] ?? Number.NaN) / heavyNativeUs).toFixed(2);
extra.heavyWorkersCpuOverNative2Workers = +((heavyEngine?.cpuUsPerItem?.workers ?? Number.NaN) / heavyNativeUs).toFixed(2);

const { commit, machine } = provenance();
console.log(`\nGradebox bench — commit ${commit}, ${machine}, workerd ${workerdVersion()}\n`);
console.log(lines.join("\n"));
console.log("\n| measure | value |\n|---|---:|");
for (const [k, v] of Object.entries(extra)) console.log(`| ${k} | ${v} |`);
console.log(`\n${targetsTable(targets, "target (issues 17, 24, 28, 29)")}`);
writeFileSync(
  new URL("results.json", import.meta.url),
  `${JSON.stringify({ commit, node: process.version, machine, workerd: workerdVersion(), date: new Date().toISOString(), rows, extra, targets }, null, 2)}\n`,
);
process.exit(0);
