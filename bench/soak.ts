// make soak: the real server under attack, one attack class at a time (bench/soak-attacks.ts),
// from project "attacker", while a healthy grader of project "neighbour" is called without pause
// and /healthz is polled every ~20 ms. Per class: /healthz latency, the neighbour's latency and
// correctness, what the attacker got back, worker restarts, whether the neighbour was
// quarantined, the API process's and the sandbox workers' peak RSS, and whether any of the
// victim's secrets reached the attacker. Targets are checked per row; any FAIL exits 1.
// Writes bench/soak-results.json and prints a Markdown table. Not part of `make test`.
//
// The attacker's remote servers (reward servers, an OpenAI-compatible model) and the victim's
// run in this process on 127.0.0.1 (bench/soak-remotes.ts); the server's egress policy allows
// 127.0.0.1/32. The neighbour is also the victim: before any attack it stores secrets (its own,
// and a server environment secret granted to it alone) and uses them on its models and endpoint.
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
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { Gradebox } from "../sdk/index.ts";
import { FakeOpenAI } from "../test/support/fake-openai.ts";
import { pct } from "./latency.ts";
import { childPids, sandboxWorkers, statusKb } from "./proc.ts";
import { provenance } from "./provenance.ts";
import { ATTACKER_SECRET_PREFIX, ATTACKS, type AttackClass, type AttackContext, VICTIM } from "./soak-attacks.ts";
import { closeAttackerRemotes, RewardServer, SecretWatch, startAttackerRemotes } from "./soak-remotes.ts";

const CONFIG = {
  GRADEBOX_WORKERS: "2",
  GRADEBOX_TIMEOUT_MS: "500",
  GRADEBOX_MEMORY_MB: "64",
  // the default, written out: the workers' RSS bound is derived from it
  GRADEBOX_WARM_HEAP_MB: "384",
  // the attacker's and the victim's servers listen on loopback
  GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32",
};
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
/** A grading call may grow its worker by 2× its heap limit + 64 MB before the worker's watchdog stops it (README, Security model). */
const CALL_GROWTH_MB = 2 * Number(CONFIG.GRADEBOX_MEMORY_MB) + 64;
/** A sandbox worker's own resident set: Node, isolated-vm, the prelude (the validation worker's, with TypeScript, peaks at ~220 MB here), with room. */
const WORKER_BASE_MB = 256;
const TARGETS = {
  healthzMaxMs: 300,
  neighbourMaxMs: 2000,
  apiRssPeakMb: 1024,
  /** the API's RSS after each class, over the baseline class's */
  apiRssOverBaselineMb: 150,
  /**
   * a worker: its base, its warm isolates' heaps, and two calls' growth. The workers' own ceiling
   * (sandbox/memory.ts) is within it: their baseline + the warm heap + an idle slack + one call's growth.
   */
  workerRssMb: WORKER_BASE_MB + Number(CONFIG.GRADEBOX_WARM_HEAP_MB) + 2 * CALL_GROWTH_MB,
  secretLeaks: 0,
};
/**
 * How long the API's RSS is given to come back near the baseline after a class: V8 gives its heap
 * back in a few garbage collections about 8 s apart once allocation slows (its memory reducer).
 */
const RSS_BACK_MS = 20_000;

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
// The main thread: the server, the remote servers, the attacks, the table.

interface Row {
  class: string;
  seconds: number;
  /** the attack loops stopped at CLASS_MS; requests in flight then took this long to come back */
  drainSeconds: number;
  drainTimedOut: boolean;
  healthz: ProbeReport["healthz"];
  neighbour: ProbeReport["neighbour"];
  /** per request: its label, HTTP status and error code (or the client's error) */
  attackerRequests: Record<string, number>;
  /** per graded item of a 200 grade-batch: ok or the item's error code */
  attackerItems: Record<string, number>;
  /** the same, per attacker grader */
  attackerItemsByGrader: Record<string, Record<string, number>>;
  workerRestarts: number | null;
  neighbourQuarantinedAt: string | null;
  neighbourRecentFaults: number | null;
  rssBeforeMb: number;
  /** the API process's peak resident set during the class (VmHWM, reset when the class starts) */
  rssPeakMb: number;
  /** after the class's teardown and the pool settled (waiting up to RSS_BACK_MS for it to come back) */
  rssAfterMb: number;
  /** how long the RSS took to come back within the bound (RSS_BACK_MS: it did not) */
  rssBackSeconds: number;
  /** the API's V8 heap (used, total) and external memory then, from /metrics */
  apiHeapAfterMb: { used?: number; total?: number; external?: number };
  /** the largest resident set any sandbox worker reached during the class (VmHWM, reset when the class starts) */
  workerRssPeakMb: number;
  /** the most file descriptors the API process had open at once (sampled) */
  apiFdsPeak: number;
  /** the API's event loop's longest delay during the class (its /metrics): a stall of the server itself */
  apiLoopLagMaxMs: number | null;
  /** requests reaching the attacker's servers, and answers of the API to the attacker, holding a value of the victim's */
  secretLeaks: number;
  /** per watched value, how many requests or answers held it during the class */
  secretsSeen: Record<string, number>;
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

/** What one class's requests came to. */
interface Counts {
  requests: Record<string, number>;
  items: Record<string, number>;
  byGrader: Record<string, Record<string, number>>;
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
  const hex = () => randomBytes(16).toString("hex");
  // the victim's values; none may ever reach the attacker
  const victimValues = { secret: `victim-secret-${hex()}`, shared: `victim-shared-${hex()}`, env: `victim-env-${hex()}` };
  const watch = new SecretWatch({
    "victim's secret": victimValues.secret,
    "victim's secret of a shared name": victimValues.shared,
    "victim's server env secret": victimValues.env,
    "metrics token": metricsToken,
    "attacker's own secret": ATTACKER_SECRET_PREFIX,
  });
  const LEAKS = ["victim's secret", "victim's secret of a shared name", "victim's server env secret", "metrics token"];
  const remotes = await startAttackerRemotes(watch);
  const victimWatch = new SecretWatch(victimValues);
  const victimModel = await new FakeOpenAI().start();
  const victimEndpoint = await new RewardServer("victim", "honest", victimWatch).start();
  const closeRemotes = () => Promise.all([closeAttackerRemotes(remotes), victimModel.close(), victimEndpoint.close()]);

  const server = await spawnServer({
    GRADEBOX_DB: dbPath,
    GRADEBOX_LOG_LEVEL: "warn",
    GRADEBOX_METRICS_TOKEN: metricsToken,
    ...CONFIG,
    [VICTIM.env]: victimValues.env,
    GRADEBOX_SECRET_GRANTS: `${VICTIM.env}=neighbour`,
  }).catch(async (error: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    await closeRemotes();
    throw error;
  });
  const pid = server.child.pid as number;
  const url = server.url;
  let serverExit: number | null | undefined;
  server.exited.then((code) => (serverExit = code));
  const alive = () => serverExit === undefined;

  const kb = (p: number, field: "VmHWM" | "VmRSS"): number => {
    try {
      return statusKb(p, field);
    } catch {
      return 0; // gone meanwhile
    }
  };
  const rssMb = () => kb(pid, "VmRSS") / 1024;
  /** the sandbox workers now (a worker that ends between the listing and the read is left out) */
  const workers = (): number[] => {
    try {
      return sandboxWorkers(pid);
    } catch {
      return childPids(pid).filter((p) => kb(p, "VmRSS") > 0);
    }
  };
  /** VmHWM starts again from VmRSS (Linux's clear_refs 5): a class's peak is its own */
  const resetPeak = (p: number): boolean => {
    try {
      writeFileSync(`/proc/${p}/clear_refs`, "5");
      return true;
    } catch {
      return false;
    }
  };
  const openFds = (): number => {
    try {
      return readdirSync(`/proc/${pid}/fd`).length;
    } catch {
      return 0;
    }
  };

  /**
   * From /metrics: worker restarts so far, the API process's V8 heap and external memory now (MB),
   * and its event loop's longest delay since the last scrape (prom-client starts it again each time).
   */
  async function scrape(): Promise<{
    restarts: number | null;
    heapUsedMb?: number;
    heapTotalMb?: number;
    externalMb?: number;
    loopLagMaxMs?: number;
  }> {
    const get = async (token: string) =>
      fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(30_000) });
    try {
      let res = await get(metricsToken);
      const written = join(dir, "metrics.token");
      if (res.status === 401 && existsSync(written)) res = await get(readFileSync(written, "utf8").trim());
      const text = await res.text();
      const value = (name: string) => {
        const m = new RegExp(`^${name} (\\S+)`, "m").exec(text);
        return m ? Number(m[1]) : undefined;
      };
      const mb = (name: string) => {
        const v = value(name);
        return v === undefined ? undefined : Math.round(v / 2 ** 20);
      };
      return {
        restarts: value("gradebox_worker_restarts_total") ?? null,
        heapUsedMb: mb("gradebox_api_nodejs_heap_size_used_bytes"),
        heapTotalMb: mb("gradebox_api_nodejs_heap_size_total_bytes"),
        externalMb: mb("gradebox_api_nodejs_external_memory_bytes"),
        loopLagMaxMs: round((value("gradebox_api_nodejs_eventloop_lag_max_seconds") ?? Number.NaN) * 1000),
      };
    } catch {
      return { restarts: null };
    }
  }

  /** One request with `key`; `path` is absolute (/v1/…); a string or Buffer body is sent as it is. */
  async function send(key: string, method: string, path: string, body?: string | Buffer) {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body as BodyInit | undefined,
      signal: AbortSignal.timeout(120_000),
    });
    const text = await res.text();
    let json: Record<string, unknown> = {};
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      json = { unparsed: text.slice(0, 200) };
    }
    return { status: res.status, json, text };
  }

  /** A request of a project under /v1/projects/{project}; a body other than a string is sent as JSON. */
  const api = (project: "neighbour" | "attacker", method: string, path: string, body?: unknown) =>
    send(
      project === "neighbour" ? neighbourKey : attackerKey,
      method,
      `/v1/projects/${project}${path}`,
      body === undefined || typeof body === "string" ? body : JSON.stringify(body),
    );

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
  const created = await api("neighbour", "POST", "/graders", { key: NEIGHBOUR_GRADER, source: NEIGHBOUR_SOURCE });
  if (created.status !== 201) throw new Error(`could not register the neighbour grader: ${JSON.stringify(created.json)}`);
  for (let i = 0; i < 25; i++) {
    const { thread, want } = neighbourThread(i);
    const r = await api("neighbour", "POST", `/graders/${NEIGHBOUR_GRADER}/grade`, { thread });
    if (r.json.score !== want) throw new Error(`the neighbour grader answered ${JSON.stringify(r.json)} before any attack`);
  }

  // The victim's secrets, in use: a model keyed by its own secret, one by the server env secret
  // granted to it alone, an endpoint whose header is its secret of a name the attacker also uses.
  // Each is graded once, and the victim's servers must have received every value: the secrets the
  // attacker goes after are live, on the same host (127.0.0.1) as the attacker's servers.
  {
    const must = async (what: string, answer: Promise<{ status: number; json: Record<string, unknown> }>, ...statuses: number[]) => {
      const r = await answer;
      if (!statuses.includes(r.status)) throw new Error(`the victim's ${what}: ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
      return r;
    };
    await must("secret", api("neighbour", "PUT", `/secrets/${VICTIM.secret}`, { value: victimValues.secret }), 201);
    await must("shared secret", api("neighbour", "PUT", `/secrets/${VICTIM.shared}`, { value: victimValues.shared }), 201);
    const model = { baseURL: victimModel.url, model: "judge", timeoutMs: 5000 };
    await must("model", api("neighbour", "POST", "/models", { key: "victim-model", apiKeySecret: VICTIM.secret, ...model }), 201);
    await must("env model", api("neighbour", "POST", "/models", { key: "victim-env-model", apiKeyEnv: VICTIM.env, ...model }), 201);
    const judge = (key: string, judgeModel: string) => ({ key, judgeModel, criteria: "answers the question" });
    await must("judge", api("neighbour", "POST", "/graders/binary-judge", judge("victim-judge", "victim-model")), 201);
    await must("env judge", api("neighbour", "POST", "/graders/binary-judge", judge("victim-env-judge", "victim-env-model")), 201);
    const endpoint = { key: "victim-endpoint", url: victimEndpoint.url, headersSecret: { "x-api-key": VICTIM.shared } };
    await must("endpoint", api("neighbour", "POST", "/graders/external-endpoint", endpoint), 201);
    for (const key of ["victim-judge", "victim-env-judge", "victim-endpoint"]) {
      const { thread } = neighbourThread(0);
      await must(`grade with ${key}`, api("neighbour", "POST", `/graders/${key}/grade`, { thread }), 200);
    }
    victimWatch.drain(victimModel);
    const unseen = Object.entries(victimWatch.seen).filter(([, n]) => n === 0);
    if (unseen.length > 0) throw new Error(`the victim's servers never received its ${unseen.map(([k]) => k).join(", ")}`);
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
  const graderOf = (path: string) => /\/graders\/([^/]+)\/[^/]/.exec(path)?.[1];

  /** The attacker's requests, counted into `counts`; `honestScore` as the class says. */
  function attackerContext(counts: Counts, honestScore: number | undefined): AttackContext {
    let registered = 0;
    const ctx: AttackContext = {
      remotes,
      async request(label, method, path, body) {
        const full = path.startsWith("/v1/") ? path : `/v1/projects/attacker${path}`;
        const raw = body === undefined || typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body);
        const tag = (outcome: string) => (label ? `${label} ${outcome}` : outcome);
        try {
          const r = await send(attackerKey, method, full, raw);
          watch.scan(r.text);
          const code = typeof r.json.code === "string" ? r.json.code : undefined;
          bump(counts.requests, tag(r.status === 200 ? "200" : `${r.status} ${code ?? ""}`.trim()));
          const key = graderOf(full) ?? "?";
          if (r.status === 200 && Array.isArray(r.json.results)) {
            for (const o of r.json.results as Array<{ score?: number; error?: { code?: string } }>) {
              const outcome = o.error ? String(o.error.code) : honestScore !== undefined && o.score !== honestScore ? "FORGED_SCORE" : "ok";
              bump(counts.items, outcome);
              counts.byGrader[key] ??= {};
              bump(counts.byGrader[key], outcome);
            }
          }
          if (r.status === 423 && graderOf(full)) {
            // quarantined, as it should be: lift it and attack again
            const rel = await send(attackerKey, "POST", `/v1/projects/attacker/graders/${key}/release`);
            bump(counts.requests, rel.status === 200 ? "release" : `release ${rel.status}`);
          }
          return { status: r.status, code, json: r.json };
        } catch (e) {
          bump(counts.requests, tag(describeFailure(e)));
          return { status: 0, json: {} };
        }
      },
      async gradeBatch(key, threads) {
        let body = bodies.get(threads);
        if (!body) {
          body = JSON.stringify({ threads });
          bodies.set(threads, body);
        }
        await ctx.request("", "POST", `/graders/${key}/grade-batch`, body);
      },
      async register(source) {
        try {
          const r = await api("attacker", "POST", "/graders", { key: `reg-${registered++}`, source });
          const check = r.json.check ? `/${r.json.check}` : "";
          bump(counts.requests, r.status === 201 ? "register 201" : `register ${r.status} ${r.json.code ?? ""}${check}`);
        } catch (e) {
          bump(counts.requests, `register ${describeFailure(e)}`);
        }
      },
      async validate(source) {
        try {
          const r = await api("attacker", "POST", "/graders/validate", { source });
          const check = r.json.check ? `/${r.json.check}` : "";
          bump(counts.requests, `validate ${r.status} ${r.json.code ?? (r.json.valid ? "valid" : "")}${check}`.trim());
        } catch (e) {
          bump(counts.requests, `validate ${describeFailure(e)}`);
        }
      },
    };
    return ctx;
  }

  /** The API's RSS when no attack had run yet (the end of the baseline class): each class must come back near it. */
  let baselineRssMb: number | undefined;

  async function runClass(attack: AttackClass | undefined, name: string, ms: number): Promise<Row> {
    log(`— ${name}`);
    const counts: Counts = { requests: {}, items: {}, byGrader: {} };
    const ctx = attackerContext(counts, attack?.honestScore);
    /** what setup and teardown ask is not the attack's: counted apart, and not shown */
    const aside = attackerContext({ requests: {}, items: {}, byGrader: {} }, undefined);
    const setupErrors: string[] = [];

    // the class's graders were registered at the start; they are warmed up before the measurement starts
    setupErrors.push(...(registrationErrors.get(name) ?? []));
    if (attack?.warmUp) {
      for (let i = 0; i < attack.warmUp.calls; i++) {
        const thread = { turns: [{ role: "assistant", content: "fine" }], metadata: {} };
        const r = await api("attacker", "POST", `/graders/${attack.warmUp.key}/grade`, { thread });
        if (r.status !== 200) setupErrors.push(`warm-up ${i}: ${r.status} ${JSON.stringify(r.json).slice(0, 200)}`);
      }
    }
    try {
      await attack?.setup?.(aside);
    } catch (e) {
      setupErrors.push((e as Error).message);
    }
    for (const e of setupErrors) log(`  setup: ${e}`);

    const loadAvg = Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);
    const restartsBefore = (await scrape()).restarts;
    const seenBefore = watch.snapshot();
    const rssBefore = rssMb();
    let watched = workers();
    const peaksReset = [pid, ...watched].every(resetPeak);
    // without clear_refs, VmHWM would be the process's whole life: the sampled VmRSS then
    const field = peaksReset ? "VmHWM" : "VmRSS";
    let rssPeak = rssBefore;
    let workerPeak = 0;
    let fdsPeak = openFds();
    let tick = 0;
    const sampler = setInterval(() => {
      if (++tick % 5 === 0) watched = workers(); // a replaced worker starts with its own peak
      rssPeak = Math.max(rssPeak, kb(pid, field) / 1024);
      for (const w of watched) workerPeak = Math.max(workerPeak, kb(w, field) / 1024);
      fdsPeak = Math.max(fdsPeak, openFds());
    }, 100);
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
          bump(counts.requests, `step threw: ${(e as Error).message.slice(0, 80)}`);
        }
        if (performance.now() - s < 5) await sleep(5); // a request that fails at once must not spin this loop
      }
    });
    await sleep(Math.max(0, deadline - Date.now()));
    attack?.finish?.(ctx);
    const attackEnd = performance.now();
    const drained = await Promise.race([Promise.all(loops).then(() => true), sleep(DRAIN_MAX_MS).then(() => false)]);
    const drainSeconds = (performance.now() - attackEnd) / 1000;
    const report = await probeStop();
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    rssPeak = Math.max(rssPeak, kb(pid, field) / 1024);
    for (const w of watched) workerPeak = Math.max(workerPeak, kb(w, field) / 1024);
    const { restarts: restartsAfter, loopLagMaxMs } = await scrape();
    let quarantinedAt: string | null = null;
    let recentFaults: number | null = null;
    try {
      const g = await api("neighbour", "GET", `/graders/${NEIGHBOUR_GRADER}`);
      quarantinedAt = (g.json.quarantinedAt as string | null | undefined) ?? null;
      recentFaults = typeof g.json.recentFaults === "number" ? g.json.recentFaults : null;
    } catch (e) {
      setupErrors.push(`could not read the neighbour grader: ${(e as Error).message}`);
    }
    watch.drain(remotes.model);
    const seen = Object.fromEntries(Object.entries(watch.snapshot()).map(([k, n]) => [k, n - (seenBefore[k] ?? 0)]));
    const leaks = LEAKS.reduce((sum, k) => sum + (seen[k] ?? 0), 0);
    const classFailures = attack?.verify?.(ctx) ?? [];

    // the class's graders and what its setup made go, so they do not weigh on the next class
    for (const key of Object.keys(attack?.graders ?? {})) await api("attacker", "DELETE", `/graders/${key}`).catch(() => {});
    try {
      await attack?.teardown?.(aside);
    } catch (e) {
      setupErrors.push(`teardown: ${(e as Error).message}`);
    }
    await settle();
    // back near the baseline: V8 gives memory back a while after a spike, so it is given up to RSS_BACK_MS
    const backFrom = Date.now();
    let rssAfter = rssMb();
    const bound = (baselineRssMb ?? Number.POSITIVE_INFINITY) + TARGETS.apiRssOverBaselineMb;
    for (const end = Date.now() + RSS_BACK_MS; rssAfter > bound && Date.now() < end && alive(); rssAfter = rssMb()) await sleep(500);
    // what the RSS holds: V8's heap (live or not yet given back) or memory outside it
    const rssBackSeconds = round((Date.now() - backFrom) / 1000) as number;
    const { heapUsedMb, heapTotalMb, externalMb } = await scrape();

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
    if (rssPeak > TARGETS.apiRssPeakMb) failures.push(`API RSS peak ${Math.round(rssPeak)} MB > ${TARGETS.apiRssPeakMb} MB`);
    if (baselineRssMb !== undefined && rssAfter > bound) {
      const already = rssBefore > bound ? ` (already ${Math.round(rssBefore)} MB when it began)` : "";
      failures.push(
        `API RSS ${Math.round(rssAfter)} MB after the class${already}, ${Math.round(rssAfter - baselineRssMb)} MB over the baseline's ${Math.round(baselineRssMb)} MB > ${TARGETS.apiRssOverBaselineMb} MB`,
      );
    }
    if (workerPeak > TARGETS.workerRssMb)
      failures.push(`a sandbox worker's RSS reached ${Math.round(workerPeak)} MB > ${TARGETS.workerRssMb} MB`);
    if (leaks > TARGETS.secretLeaks)
      failures.push(`${leaks} secret leak(s): ${LEAKS.filter((k) => seen[k] > 0).map((k) => `${k} ×${seen[k]}`)}`);
    failures.push(...classFailures);
    if (setupErrors.length > 0) failures.push(`setup: ${setupErrors.length} error(s)`);
    if (!drained) failures.push(`attacker requests still in flight ${DRAIN_MAX_MS / 1000} s after the attack stopped`);
    baselineRssMb ??= rssAfter;

    const row: Row = {
      class: name,
      seconds: round(seconds) as number,
      drainSeconds: round(drainSeconds) as number,
      drainTimedOut: !drained,
      healthz: h,
      neighbour: nb,
      attackerRequests: counts.requests,
      attackerItems: counts.items,
      attackerItemsByGrader: counts.byGrader,
      workerRestarts: restartsBefore === null || restartsAfter === null ? null : restartsAfter - restartsBefore,
      neighbourQuarantinedAt: quarantinedAt,
      neighbourRecentFaults: recentFaults,
      rssBeforeMb: Math.round(rssBefore),
      rssPeakMb: Math.round(rssPeak),
      rssAfterMb: Math.round(rssAfter),
      rssBackSeconds,
      apiHeapAfterMb: { used: heapUsedMb, total: heapTotalMb, external: externalMb },
      workerRssPeakMb: Math.round(workerPeak),
      apiFdsPeak: fdsPeak,
      apiLoopLagMaxMs: loopLagMaxMs ?? null,
      secretLeaks: leaks,
      secretsSeen: seen,
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
        `n=${nb.n} wrong=${nb.wrong} failed=${nb.failed}, restarts ${row.workerRestarts}, API RSS ${row.rssBeforeMb}→${row.rssAfterMb} MB ` +
        `(peak ${row.rssPeakMb}; after ${row.rssBackSeconds} s; heap ${heapUsedMb}/${heapTotalMb}, external ${externalMb}), worker RSS peak ${row.workerRssPeakMb} MB, API fds peak ${fdsPeak}, API event loop delay max ${row.apiLoopLagMaxMs} ms, drain ${row.drainSeconds} s, ` +
        `secrets seen ${JSON.stringify(seen)}, requests ${JSON.stringify(counts.requests)}, items ${JSON.stringify(counts.items)}`,
    );
    const graders = Object.entries(counts.byGrader);
    for (const [key, codes] of graders.slice(0, 8)) log(`    ${key}: ${JSON.stringify(codes)}`);
    if (graders.length > 8) log(`    … and ${graders.length - 8} more graders`);
    for (const s of nb.samples) log(`    neighbour: ${s}`);
    if (row.slowNeighbourCalls.length > 0)
      log(`    slow neighbour calls (s since start: ms): ${row.slowNeighbourCalls.map((c) => `${c.t}: ${c.ms}`).join(", ")}`);
    if (row.slowHealthz.length > 0)
      log(`    slow /healthz (s since start: ms): ${row.slowHealthz.map((c) => `${c.t}: ${c.ms}`).join(", ")}`);
    if (row.fewerWorkers.length > 0)
      log(`    fewer workers ready (s since start: ms, ready): ${row.fewerWorkers.map((d) => `${d.t}: ${d.ms} (${d.ready})`).join(", ")}`);
    log(`    probe thread's own worst timer lag ${row.probeLagMaxMs} ms; load average ${loadAvg} at the start`);
    // one line per kind of event: a grader quarantined again and again is one line with its count
    const events = new Map<string, { t: number; n: number }>();
    for (const e of row.serverEvents) {
      const kind = `${e.msg} (${e.detail.replace(/^pid \d+ /, "")})`;
      const seen = events.get(kind);
      if (seen) seen.n++;
      else events.set(kind, { t: e.t, n: 1 });
    }
    for (const [kind, { t, n }] of events) log(`    server ${t} s${n > 1 ? ` and ${n - 1} more times` : ""}: ${kind}`);
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
      const r = await api("attacker", "POST", "/graders", { key, source });
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
    await closeRemotes();
  }
  const runtimeSeconds = Math.round((performance.now() - started) / 1000);
  const serverLogTail = server.logs().slice(-4000);
  rmSync(dir, { recursive: true, force: true });

  // the table
  const counted = (m: Record<string, number>) =>
    Object.entries(m)
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ×${n}`)
      .join(", ");
  const fewer = (r: Row) =>
    r.fewerWorkers.length === 0 ? "0" : `${r.fewerWorkers.reduce((a, d) => a + d.ms, 0)} / ${Math.max(...r.fewerWorkers.map((d) => d.ms))}`;
  const lines = [
    "| class | s | /healthz p99 / max ms | neighbour p50 / p99 / max ms | neighbour calls (wrong, failed) | attacker requests | attacker items | worker restarts | < all workers ready: total / longest ms | neighbour quarantined | API RSS MB before → after (peak) | worker RSS peak MB | secrets leaked | API loop delay max ms | probe lag ms | result |",
    "|---|---:|---:|---:|---:|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|",
  ];
  for (const r of rows) {
    const n = r.neighbour;
    lines.push(
      `| ${r.class} | ${r.seconds} | ${r.healthz.p99Ms} / ${r.healthz.maxMs} | ${n.p50Ms} / ${n.p99Ms} / ${n.maxMs} | ${n.n} (${n.wrong}, ${n.failed}) | ` +
        `${counted(r.attackerRequests)} | ${counted(r.attackerItems)} | ${r.workerRestarts ?? "?"} | ${fewer(r)} | ${r.neighbourQuarantinedAt ? `yes (${r.neighbourQuarantinedAt})` : "no"} | ` +
        `${r.rssBeforeMb} → ${r.rssAfterMb} (${r.rssPeakMb}) | ${r.workerRssPeakMb} | ${r.secretLeaks} | ${r.apiLoopLagMaxMs ?? "?"} | ${r.probeLagMaxMs} | ${r.failures.length ? `FAIL: ${r.failures.join("; ")}` : "PASS"} |`,
    );
  }
  const { commit, machine } = provenance();
  const failed = rows.filter((r) => r.failures.length > 0);
  console.log(
    `\nGradebox soak — commit ${commit}, ${machine}; ${CONFIG.GRADEBOX_WORKERS} workers, ${CONFIG.GRADEBOX_TIMEOUT_MS} ms time limit, ` +
      `${CONFIG.GRADEBOX_MEMORY_MB} MB heap; ${CLASS_MS / 1000} s per class; took ${runtimeSeconds} s\n` +
      `targets: /healthz max ≤ ${TARGETS.healthzMaxMs} ms; neighbour max ≤ ${TARGETS.neighbourMaxMs} ms, every score correct, never quarantined; ` +
      `no API crash; API RSS peak ≤ ${TARGETS.apiRssPeakMb} MB and within ${TARGETS.apiRssOverBaselineMb} MB of the baseline's after each class; ` +
      `every sandbox worker's RSS ≤ ${TARGETS.workerRssMb} MB; ${TARGETS.secretLeaks} secrets leaked to the attacker. ` +
      `"API loop delay" is the API process's longest event-loop delay (its own /metrics); "probe lag" is how late a 10 ms timer of ` +
      `the soak's own probe thread fired at worst: stalls of this machine, not of the server\n`,
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
