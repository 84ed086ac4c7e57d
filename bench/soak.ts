// make soak: the real server under attack, one attack class at a time (bench/soak-attacks.ts),
// from project "attacker", while a healthy grader of project "neighbour" is called without pause
// and /healthz is polled every ~20 ms. Per class: /healthz latency, the neighbour's latency and
// correctness, what the attacker got back, worker restarts, whether the neighbour was
// quarantined, and the API process's RSS. Targets are checked per row; any FAIL exits 1.
// Writes bench/soak-results.json and prints a Markdown table. Not part of `make test`.
//
// The probes (neighbour calls and /healthz) run on their own thread, so the attacker's request
// building and response parsing on the main thread never delays a probe's timer or socket.
// Each row also lists (in the JSON and on stderr) the slow neighbour calls and /healthz polls,
// the stretches with fewer grading workers ready, and the worker exits and quarantines the
// server logged, all on one clock, so a failure can be traced to what the server was doing.
//
// SOAK_CLASS_MS (default 12000) sets each class's attack time; SOAK_ONLY=3,7 runs the baseline
// and those classes only.

import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { Gradebox } from "../sdk/index.ts";
import { pct } from "./latency.ts";
import { provenance } from "./provenance.ts";
import { ATTACKS, type AttackClass, type AttackContext } from "./soak-attacks.ts";

const CONFIG = { GRADEBOX_WORKERS: "2", GRADEBOX_TIMEOUT_MS: "500", GRADEBOX_MEMORY_MB: "64" };
/** how long each class attacks; requests in flight at the end are waited for (and measured) */
const CLASS_MS = Number(process.env.SOAK_CLASS_MS ?? 12_000);
const BASELINE_MS = 5_000;
const DRAIN_MAX_MS = 45_000;
const HEALTHZ_EVERY_MS = 20;
/** neighbour calls slower than this are listed with their start time, to line them up with the server's log */
const SLOW_MS = 500;
const SLOW_HEALTHZ_MS = 100;
const NEIGHBOUR_GRADER = "exact-match";
const NEIGHBOUR_SOURCE = `async function grade(thread) {
  const completion = thread.completion() ?? "";
  const expected = thread.metadata.expected ?? "";
  return completion.trim() === String(expected).trim() ? 1 : 0;
}`;
const TARGETS = { healthzMaxMs: 300, neighbourMaxMs: 2000, rssGrowthMb: 200 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number | undefined, d = 1) => (n === undefined || !Number.isFinite(n) ? undefined : +n.toFixed(d));

// ---------------------------------------------------------------------------------------------
// The probe thread: /healthz every ~20 ms and sequential neighbour grades, between start and stop.

interface ProbeInit {
  url: string;
  key: string;
  /** grading workers the server was started with */
  workers: number;
}

export interface ProbeReport {
  healthz: {
    n: number;
    errors: number;
    p50Ms?: number;
    p99Ms?: number;
    maxMs?: number;
    /** polls over SLOW_HEALTHZ_MS: when they started (epoch ms) and how long they took */
    slow: Array<{ at: number; ms: number }>;
  };
  /** stretches during which /healthz reported fewer grading workers ready than configured (a worker being replaced) */
  degraded: Array<{ at: number; ms: number; ready: number }>;
  /** the longest a 10 ms timer of the probe thread itself fired late: this machine's own stalls, not the server's */
  probeLagMaxMs: number;
  neighbour: {
    n: number;
    wrong: number;
    failed: number;
    p50Ms?: number;
    p99Ms?: number;
    maxMs?: number;
    samples: string[];
    /** calls over SLOW_MS: when they started (epoch ms) and how long they took */
    slow: Array<{ at: number; ms: number }>;
  };
}

const neighbourThread = (i: number) => {
  const expected = `answer-${i % 7}`;
  const completion = i % 2 === 0 ? expected : `wrong-${i}`;
  return {
    thread: {
      turns: [
        { role: "user" as const, content: `question ${i}` },
        { role: "assistant" as const, content: completion },
      ],
      metadata: { expected },
    },
    want: i % 2 === 0 ? 1 : 0,
  };
};

function runProbe({ url, key, workers }: ProbeInit): void {
  const port = parentPort!;
  const client = new Gradebox({ baseURL: url, project: "neighbour", apiKey: key, maxRetries: 0, timeout: 60_000 });
  let running = false;
  let loops: Promise<void>[] = [];
  let health: number[] = [];
  let healthErrors = 0;
  let grades: number[] = [];
  let wrong = 0;
  let failed = 0;
  let samples: string[] = [];
  let slow: Array<{ at: number; ms: number }> = [];
  let slowHealth: Array<{ at: number; ms: number }> = [];
  let lagMax = 0;
  let degraded: Array<{ at: number; ms: number; ready: number }> = [];
  /** the stretch of fewer ready workers now going on */
  let down: { at: number; ready: number } | undefined;
  let seq = 0;
  const note = (s: string) => samples.length < 5 && samples.push(s);

  async function healthLoop() {
    while (running) {
      const t0 = performance.now();
      const at = Date.now();
      try {
        const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(60_000) });
        const body = (await res.json()) as { workers?: number };
        if (!res.ok) healthErrors++;
        const ready = typeof body.workers === "number" ? body.workers : workers;
        if (ready < workers) {
          if (!down) down = { at, ready };
          down.ready = Math.min(down.ready, ready);
        } else if (down) {
          degraded.push({ at: down.at, ms: Date.now() - down.at, ready: down.ready });
          down = undefined;
        }
      } catch {
        healthErrors++;
      }
      const ms = performance.now() - t0;
      health.push(ms);
      if (ms > SLOW_HEALTHZ_MS && slowHealth.length < 20) slowHealth.push({ at, ms: Math.round(ms) });
      if (ms < HEALTHZ_EVERY_MS) await sleep(HEALTHZ_EVERY_MS - ms);
    }
  }

  async function lagLoop() {
    while (running) {
      const t0 = performance.now();
      await sleep(10);
      lagMax = Math.max(lagMax, performance.now() - t0 - 10);
    }
  }

  async function neighbourLoop() {
    while (running) {
      const i = seq++;
      const { thread, want } = neighbourThread(i);
      const t0 = performance.now();
      const at = Date.now();
      try {
        const { score } = await client.graders.grade({ graderKey: NEIGHBOUR_GRADER, thread });
        if (score !== want) {
          wrong++;
          note(`call ${i}: score ${score}, expected ${want}`);
        }
      } catch (error) {
        failed++;
        note(`call ${i}: ${(error as Error).message.slice(0, 300)}`);
      }
      const ms = performance.now() - t0;
      grades.push(ms);
      if (ms > SLOW_MS && slow.length < 20) slow.push({ at, ms: Math.round(ms) });
    }
  }

  port.on("message", async (msg: { op: "start" | "stop" }) => {
    if (msg.op === "start") {
      health = [];
      healthErrors = 0;
      grades = [];
      wrong = 0;
      failed = 0;
      samples = [];
      slow = [];
      slowHealth = [];
      lagMax = 0;
      degraded = [];
      down = undefined;
      running = true;
      loops = [healthLoop(), neighbourLoop(), lagLoop()];
      return;
    }
    running = false;
    await Promise.all(loops);
    if (down) degraded.push({ at: down.at, ms: Date.now() - down.at, ready: down.ready });
    const stats = (xs: number[]) =>
      xs.length === 0 ? {} : { p50Ms: round(pct(xs, 0.5)), p99Ms: round(pct(xs, 0.99)), maxMs: round(Math.max(...xs)) };
    const report: ProbeReport = {
      healthz: { n: health.length, errors: healthErrors, ...stats(health), slow: slowHealth },
      probeLagMaxMs: round(lagMax) as number,
      degraded,
      neighbour: { n: grades.length, wrong, failed, ...stats(grades), samples, slow },
    };
    port.postMessage(report);
  });
}

if (!isMainThread) runProbe(workerData as ProbeInit);
else await main();

// ---------------------------------------------------------------------------------------------
// The main thread: the server, the attacks, the table.

interface Row {
  class: string;
  seconds: number;
  /** the attack loops stopped at CLASS_MS; requests in flight then took this long to come back */
  drainSeconds: number;
  drainTimedOut: boolean;
  healthz: ProbeReport["healthz"];
  neighbour: ProbeReport["neighbour"];
  /** per request: HTTP status and error code (or the client's error) */
  attackerRequests: Record<string, number>;
  /** per graded item of a 200 grade-batch: ok or the item's error code */
  attackerItems: Record<string, number>;
  /** the same, per attacker grader */
  attackerItemsByGrader: Record<string, Record<string, number>>;
  workerRestarts: number | null;
  neighbourQuarantinedAt: string | null;
  neighbourRecentFaults: number | null;
  rssBeforeMb: number;
  rssPeakMb: number;
  rssAfterMb: number;
  serverAlive: boolean;
  /** neighbour calls over SLOW_MS and /healthz polls over SLOW_HEALTHZ_MS (t: seconds since the class started) */
  slowNeighbourCalls: Array<{ t: number; ms: number }>;
  slowHealthz: Array<{ t: number; ms: number }>;
  /** the probe thread's own worst timer lag (ms): how much of a stall was this machine's */
  probeLagMaxMs: number;
  /** stretches with fewer grading workers ready than configured, as /healthz saw them */
  fewerWorkers: Array<{ t: number; ms: number; ready: number }>;
  /** /proc/loadavg (1 min) when the class started: other work on this machine */
  loadAvg: number;
  /** the worker exits and quarantines the server logged (t: seconds since the class started) */
  serverEvents: Array<{ t: number; msg: string; detail: string }>;
  setupErrors: string[];
  failures: string[];
}

async function main(): Promise<void> {
  const { spawnServer } = await import("../test/support/helpers.ts");
  const { Store } = await import("../server/store.ts");
  const started = performance.now();
  const log = (msg: string) => process.stderr.write(`${msg}\n`);

  const dir = mkdtempSync(join(tmpdir(), "gradebox-soak-"));
  const dbPath = join(dir, "gradebox.db");
  const store = await Store.open({ db: dbPath });
  const neighbourKey = (await store.keys.create("neighbour", "soak")).key;
  const attackerKey = (await store.keys.create("attacker", "soak")).key;
  await store.close();
  const metricsToken = `soak_${randomBytes(12).toString("hex")}`;
  const server = await spawnServer({
    GRADEBOX_DB: dbPath,
    GRADEBOX_LOG_LEVEL: "warn",
    GRADEBOX_METRICS_TOKEN: metricsToken,
    ...CONFIG,
  }).catch((error: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  const pid = server.child.pid as number;
  const url = server.url;
  let serverExit: number | null | undefined;
  server.exited.then((code) => (serverExit = code));
  const alive = () => serverExit === undefined;

  const rssMb = (): number => {
    try {
      return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
    } catch {
      return 0;
    }
  };

  async function restarts(): Promise<number | null> {
    const scrape = async (token: string) =>
      fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(30_000) });
    try {
      let res = await scrape(metricsToken);
      const written = join(dir, "metrics.token");
      if (res.status === 401 && existsSync(written)) res = await scrape(readFileSync(written, "utf8").trim());
      const m = /^gradebox_worker_restarts_total (\d+)/m.exec(await res.text());
      return m ? Number(m[1]) : null;
    } catch {
      return null;
    }
  }

  async function api(project: "neighbour" | "attacker", method: string, path: string, body?: string) {
    const key = project === "neighbour" ? neighbourKey : attackerKey;
    const res = await fetch(`${url}/v1/projects/${project}/graders${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body,
      signal: AbortSignal.timeout(120_000),
    });
    const text = await res.text();
    let json: Record<string, unknown> = {};
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      json = { unparsed: text.slice(0, 200) };
    }
    return { status: res.status, json };
  }

  /** worker exits and quarantines the server logged between two instants (its log is pino JSON lines) */
  function serverEvents(from: number, to: number): Row["serverEvents"] {
    const events: Row["serverEvents"] = [];
    for (const line of server.logs().split("\n")) {
      if (!line.startsWith("{") || !/exited|quarantine/.test(line)) continue;
      try {
        const { time, msg, pid: worker, code, signal, graderId, reason } = JSON.parse(line) as Record<string, unknown>;
        if (typeof time !== "number" || time < from || time > to || events.length >= 40) continue;
        const detail = graderId ? `${graderId}: ${String(reason).slice(0, 160)}` : `pid ${worker} code ${code} signal ${signal}`;
        events.push({ t: round((time - from) / 1000, 2) as number, msg: String(msg), detail });
      } catch {}
    }
    return events;
  }

  /** pool settled: both grading workers up again after a class */
  async function settle(): Promise<void> {
    const end = Date.now() + 20_000;
    while (Date.now() < end && alive()) {
      try {
        const h = (await (await fetch(`${url}/healthz`)).json()) as { workers?: number };
        if (h.workers === Number(CONFIG.GRADEBOX_WORKERS)) break;
      } catch {}
      await sleep(100);
    }
    await sleep(300);
  }

  // the neighbour's grader, trusted by the pool (20+ clean jobs) before any attack
  const created = await api("neighbour", "POST", "", JSON.stringify({ key: NEIGHBOUR_GRADER, source: NEIGHBOUR_SOURCE }));
  if (created.status !== 201) throw new Error(`could not register the neighbour grader: ${JSON.stringify(created.json)}`);
  for (let i = 0; i < 25; i++) {
    const { thread, want } = neighbourThread(i);
    const r = await api("neighbour", "POST", `/${NEIGHBOUR_GRADER}/grade`, JSON.stringify({ thread }));
    if (r.json.score !== want) throw new Error(`the neighbour grader answered ${JSON.stringify(r.json)} before any attack`);
  }

  const probe = new Worker(new URL(import.meta.url), {
    workerData: { url, key: neighbourKey, workers: Number(CONFIG.GRADEBOX_WORKERS) } satisfies ProbeInit,
  });
  probe.on("error", (e) => log(`probe thread failed: ${e.message}`));
  const probeStop = () =>
    new Promise<ProbeReport>((resolve) => {
      probe.once("message", resolve);
      probe.postMessage({ op: "stop" });
    });

  const bodies = new WeakMap<unknown[], string>();
  const bump = (m: Record<string, number>, k: string, n = 1) => {
    m[k] = (m[k] ?? 0) + n;
  };
  const describeFailure = (e: unknown) => {
    const err = e as Error & { cause?: { code?: string } };
    return `client error ${err.cause?.code ?? err.name}`;
  };

  async function runClass(attack: AttackClass | undefined, name: string, ms: number): Promise<Row> {
    log(`— ${name}`);
    const requests: Record<string, number> = {};
    const items: Record<string, number> = {};
    const byGrader: Record<string, Record<string, number>> = {};
    const setupErrors: string[] = [];
    let registered = 0;
    const ctx: AttackContext = {
      async gradeBatch(key, threads) {
        let body = bodies.get(threads);
        if (!body) {
          body = JSON.stringify({ threads });
          bodies.set(threads, body);
        }
        try {
          const r = await api("attacker", "POST", `/${key}/grade-batch`, body);
          bump(requests, r.status === 200 ? "200" : `${r.status} ${r.json.code ?? ""}`.trim());
          if (r.status === 200 && Array.isArray(r.json.results)) {
            for (const o of r.json.results as Array<{ score?: number; error?: { code?: string } }>) {
              const code = o.error
                ? String(o.error.code)
                : attack?.honestScore !== undefined && o.score !== attack.honestScore
                  ? "FORGED_SCORE"
                  : "ok";
              bump(items, code);
              byGrader[key] ??= {};
              bump(byGrader[key], code);
            }
          }
          if (r.status === 423) {
            // quarantined, as it should be: lift it and attack again
            const rel = await api("attacker", "POST", `/${key}/release`);
            bump(requests, rel.status === 200 ? "release" : `release ${rel.status}`);
          }
        } catch (e) {
          bump(requests, describeFailure(e));
        }
      },
      async register(source) {
        try {
          const r = await api("attacker", "POST", "", JSON.stringify({ key: `reg-${registered++}`, source }));
          const check = r.json.check ? `/${r.json.check}` : "";
          bump(requests, r.status === 201 ? "register 201" : `register ${r.status} ${r.json.code ?? ""}${check}`);
        } catch (e) {
          bump(requests, `register ${describeFailure(e)}`);
        }
      },
      async validate(source) {
        try {
          const r = await api("attacker", "POST", "/validate", JSON.stringify({ source }));
          const check = r.json.check ? `/${r.json.check}` : "";
          bump(requests, `validate ${r.status} ${r.json.code ?? (r.json.valid ? "valid" : "")}${check}`.trim());
        } catch (e) {
          bump(requests, `validate ${describeFailure(e)}`);
        }
      },
    };

    // the class's graders were registered at the start; they are warmed up before the measurement starts
    setupErrors.push(...(registrationErrors.get(name) ?? []));
    if (attack?.warmUp) {
      for (let i = 0; i < attack.warmUp.calls; i++) {
        const thread = { turns: [{ role: "assistant", content: "fine" }], metadata: {} };
        const r = await api("attacker", "POST", `/${attack.warmUp.key}/grade`, JSON.stringify({ thread }));
        if (r.status !== 200) setupErrors.push(`warm-up ${i}: ${r.status} ${JSON.stringify(r.json).slice(0, 200)}`);
      }
    }
    for (const e of setupErrors) log(`  setup: ${e}`);

    const loadAvg = Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);
    const restartsBefore = await restarts();
    const rssBefore = rssMb();
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, rssMb());
    }, 200);
    probe.postMessage({ op: "start" });
    const t0 = performance.now();
    const startedAt = Date.now();
    const deadline = Date.now() + ms;
    const loops = Array.from({ length: attack?.loops ?? 0 }, async (_, loop) => {
      for (let n = 0; Date.now() < deadline && alive(); n++) {
        const s = performance.now();
        try {
          await attack?.step(ctx, loop, n);
        } catch (e) {
          bump(requests, `step threw: ${(e as Error).message.slice(0, 80)}`);
        }
        if (performance.now() - s < 5) await sleep(5); // a request that fails at once must not spin this loop
      }
    });
    if (!attack) await sleep(ms);
    await sleep(Math.max(0, deadline - Date.now()));
    const attackEnd = performance.now();
    const drained = await Promise.race([Promise.all(loops).then(() => true), sleep(DRAIN_MAX_MS).then(() => false)]);
    const drainSeconds = (performance.now() - attackEnd) / 1000;
    const report = await probeStop();
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    const rssAfter = rssMb();
    const restartsAfter = await restarts();
    let quarantinedAt: string | null = null;
    let recentFaults: number | null = null;
    try {
      const g = await api("neighbour", "GET", `/${NEIGHBOUR_GRADER}`);
      quarantinedAt = (g.json.quarantinedAt as string | null | undefined) ?? null;
      recentFaults = typeof g.json.recentFaults === "number" ? g.json.recentFaults : null;
    } catch (e) {
      setupErrors.push(`could not read the neighbour grader: ${(e as Error).message}`);
    }

    const failures: string[] = [];
    const h = report.healthz;
    const nb = report.neighbour;
    if (!alive()) failures.push(`the API server exited (code ${serverExit})`);
    if (h.n === 0 || h.errors > 0 || (h.maxMs ?? Number.POSITIVE_INFINITY) > TARGETS.healthzMaxMs)
      failures.push(`/healthz max ${h.maxMs} ms (${h.errors} errors) > ${TARGETS.healthzMaxMs} ms`);
    if (nb.n === 0 || (nb.maxMs ?? Number.POSITIVE_INFINITY) > TARGETS.neighbourMaxMs)
      failures.push(`neighbour max ${nb.maxMs} ms > ${TARGETS.neighbourMaxMs} ms`);
    if (nb.wrong + nb.failed > 0) failures.push(`neighbour ${nb.wrong} wrong, ${nb.failed} failed`);
    if (quarantinedAt) failures.push(`neighbour quarantined at ${quarantinedAt}`);
    if (rssAfter - rssBefore > TARGETS.rssGrowthMb)
      failures.push(`API RSS grew ${Math.round(rssAfter - rssBefore)} MB > ${TARGETS.rssGrowthMb} MB`);
    if (setupErrors.length > 0) failures.push(`setup: ${setupErrors.length} error(s)`);
    if (!drained) failures.push(`attacker requests still in flight ${DRAIN_MAX_MS / 1000} s after the attack stopped`);

    // the class's graders go, so their warm isolates do not weigh on the next class
    for (const key of Object.keys(attack?.graders ?? {})) await api("attacker", "DELETE", `/${key}`).catch(() => {});
    await settle();

    const row: Row = {
      class: name,
      seconds: round(seconds) as number,
      drainSeconds: round(drainSeconds) as number,
      drainTimedOut: !drained,
      healthz: h,
      neighbour: nb,
      attackerRequests: requests,
      attackerItems: items,
      attackerItemsByGrader: byGrader,
      workerRestarts: restartsBefore === null || restartsAfter === null ? null : restartsAfter - restartsBefore,
      neighbourQuarantinedAt: quarantinedAt,
      neighbourRecentFaults: recentFaults,
      rssBeforeMb: Math.round(rssBefore),
      rssPeakMb: Math.round(rssPeak),
      rssAfterMb: Math.round(rssAfter),
      serverAlive: alive(),
      slowNeighbourCalls: nb.slow.map(({ at, ms }) => ({ t: round((at - startedAt) / 1000, 2) as number, ms })),
      slowHealthz: h.slow.map(({ at, ms }) => ({ t: round((at - startedAt) / 1000, 2) as number, ms })),
      probeLagMaxMs: report.probeLagMaxMs,
      fewerWorkers: report.degraded.map(({ at, ms, ready }) => ({ t: round((at - startedAt) / 1000, 2) as number, ms, ready })),
      loadAvg,
      serverEvents: serverEvents(startedAt, Date.now()),
      setupErrors,
      failures,
    };
    log(
      `  ${failures.length ? `FAIL (${failures.join("; ")})` : "PASS"}: healthz max ${h.maxMs} ms, neighbour ${nb.p50Ms}/${nb.p99Ms}/${nb.maxMs} ms ` +
        `n=${nb.n} wrong=${nb.wrong} failed=${nb.failed}, restarts ${row.workerRestarts}, RSS ${row.rssBeforeMb}→${row.rssAfterMb} MB, ` +
        `requests ${JSON.stringify(requests)}, items ${JSON.stringify(items)}`,
    );
    for (const [key, codes] of Object.entries(byGrader)) log(`    ${key}: ${JSON.stringify(codes)}`);
    for (const s of nb.samples) log(`    neighbour: ${s}`);
    if (row.slowNeighbourCalls.length > 0)
      log(`    slow neighbour calls (s since start: ms): ${row.slowNeighbourCalls.map((c) => `${c.t}: ${c.ms}`).join(", ")}`);
    if (row.slowHealthz.length > 0)
      log(`    slow /healthz (s since start: ms): ${row.slowHealthz.map((c) => `${c.t}: ${c.ms}`).join(", ")}`);
    if (row.fewerWorkers.length > 0)
      log(`    fewer workers ready (s since start: ms, ready): ${row.fewerWorkers.map((d) => `${d.t}: ${d.ms} (${d.ready})`).join(", ")}`);
    log(`    probe thread's own worst timer lag ${row.probeLagMaxMs} ms; load average ${loadAvg} at the start`);
    for (const e of row.serverEvents) log(`    server ${e.t} s: ${e.msg} (${e.detail})`);
    return row;
  }

  /** SOAK_ONLY=3,7 runs the baseline and those classes only (for looking into one) */
  const only = process.env.SOAK_ONLY?.split(",").map((s) => s.trim());
  // Every class's graders are registered before any attack: a project whose validations keep
  // taking the validation worker down (class 5) may be refused further registrations for a while.
  const registrationErrors = new Map<string, string[]>();
  for (const attack of ATTACKS) {
    if (only && !only.includes(attack.name.split(" ")[0])) continue;
    for (const [key, source] of Object.entries(attack.graders)) {
      const r = await api("attacker", "POST", "", JSON.stringify({ key, source }));
      if (r.status === 201) continue;
      const errors = registrationErrors.get(attack.name) ?? [];
      errors.push(`${key}: ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
      registrationErrors.set(attack.name, errors);
    }
  }
  const rows: Row[] = [];
  try {
    rows.push(await runClass(undefined, "0 baseline (no attack)", BASELINE_MS));
    for (const attack of ATTACKS) {
      if (!alive()) break;
      if (only && !only.includes(attack.name.split(" ")[0])) continue;
      rows.push(await runClass(attack, attack.name, CLASS_MS));
    }
  } finally {
    await probe.terminate();
    server.child.kill("SIGTERM");
    const stopped = await Promise.race([server.exited.then(() => true), sleep(15_000).then(() => false)]);
    if (!stopped) server.child.kill("SIGKILL");
  }
  const runtimeSeconds = Math.round((performance.now() - started) / 1000);
  const serverLogTail = server.logs().slice(-4000);
  rmSync(dir, { recursive: true, force: true });

  // the table
  const counts = (m: Record<string, number>) =>
    Object.entries(m)
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ×${n}`)
      .join(", ");
  const fewer = (r: Row) =>
    r.fewerWorkers.length === 0 ? "0" : `${r.fewerWorkers.reduce((a, d) => a + d.ms, 0)} / ${Math.max(...r.fewerWorkers.map((d) => d.ms))}`;
  const lines = [
    "| class | s | /healthz p99 / max ms | neighbour p50 / p99 / max ms | neighbour calls (wrong, failed) | attacker requests | attacker items | worker restarts | < all workers ready: total / longest ms | neighbour quarantined | API RSS MB before → after (peak) | probe lag ms | result |",
    "|---|---:|---:|---:|---:|---|---|---:|---:|---|---:|---:|---|",
  ];
  for (const r of rows) {
    const n = r.neighbour;
    lines.push(
      `| ${r.class} | ${r.seconds} | ${r.healthz.p99Ms} / ${r.healthz.maxMs} | ${n.p50Ms} / ${n.p99Ms} / ${n.maxMs} | ${n.n} (${n.wrong}, ${n.failed}) | ` +
        `${counts(r.attackerRequests)} | ${counts(r.attackerItems)} | ${r.workerRestarts ?? "?"} | ${fewer(r)} | ${r.neighbourQuarantinedAt ? `yes (${r.neighbourQuarantinedAt})` : "no"} | ` +
        `${r.rssBeforeMb} → ${r.rssAfterMb} (${r.rssPeakMb}) | ${r.probeLagMaxMs} | ${r.failures.length ? `FAIL: ${r.failures.join("; ")}` : "PASS"} |`,
    );
  }
  const { commit, machine } = provenance();
  const failed = rows.filter((r) => r.failures.length > 0);
  console.log(
    `\nGradebox soak — commit ${commit}, ${machine}; ${CONFIG.GRADEBOX_WORKERS} workers, ${CONFIG.GRADEBOX_TIMEOUT_MS} ms time limit, ` +
      `${CONFIG.GRADEBOX_MEMORY_MB} MB heap; ${CLASS_MS / 1000} s per class; took ${runtimeSeconds} s\n` +
      `targets: /healthz max ≤ ${TARGETS.healthzMaxMs} ms; neighbour max ≤ ${TARGETS.neighbourMaxMs} ms, every score correct, never quarantined; ` +
      `API RSS growth ≤ ${TARGETS.rssGrowthMb} MB. "probe lag" is how late a 10 ms timer of the soak's own probe thread fired at worst: ` +
      `stalls of this machine, not of the server\n`,
  );
  console.log(lines.join("\n"));
  console.log(`\n${failed.length === 0 ? "PASS: every class met every target" : `FAIL: ${failed.map((r) => r.class).join(", ")}`}`);
  writeFileSync(
    new URL("soak-results.json", import.meta.url),
    `${JSON.stringify(
      {
        commit,
        node: process.version,
        machine,
        date: new Date().toISOString(),
        config: CONFIG,
        classMs: CLASS_MS,
        targets: TARGETS,
        runtimeSeconds,
        rows,
        serverLogTail,
      },
      null,
      2,
    )}\n`,
  );
  process.exit(failed.length === 0 && (only !== undefined || rows.length === ATTACKS.length + 1) ? 0 : 1);
}
