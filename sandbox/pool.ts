// The server's handle on the sandbox workers: starts them, dispatches requests (one in flight
// per worker, preferring a worker that already holds the grader warm), and supervises them. A
// worker that dies or stops answering is replaced; the request it held is answered with an
// error at once, and queued requests go to the other workers, so nothing ever hangs.

import { type ChildProcess, fork } from "node:child_process";
import { EventEmitter } from "node:events";
import type { WireThread } from "../sdk/thread.ts";
import { packBatch } from "./batch.ts";
import type { GradeErrorCode, GradeOutcome } from "./checks.ts";
import type { EngineLimits, GraderCode, ValidationResult } from "./engine.ts";
import { LIMITS_ENV, type WorkerHello, type WorkerReply, type WorkerRequest } from "./protocol.ts";

export interface PoolOptions {
  size: number;
  limits: EngineLimits;
}

type Payload = DistributiveOmit<WorkerRequest, "id">;
type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;

interface Job {
  payload: Payload;
  graderId?: string;
  resolve: (reply: WorkerReply) => void;
  reject: (error: Error) => void;
  /** ms the worker may take before it is presumed stuck and killed */
  budgetMs: number;
  /** only this worker may take the job (per-worker stats) */
  pin?: Slot;
}

interface Slot {
  child: ChildProcess;
  ready: boolean;
  job?: { id: number; job: Job; timer: NodeJS.Timeout; trusted: boolean };
  /** set when the watchdog killed this worker */
  hung?: boolean;
  /** the end of what the worker wrote to stderr, for the server log */
  stderrTail: string;
  /** graders this worker ran recently: dispatch prefers to send a grader back to them */
  recent: Set<string>;
}

/** Thrown for a request whose worker died under it. */
export class SandboxCrashError extends Error {
  constructor(
    readonly code: GradeErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The pool is shut down: no request can be served. */
export class SandboxUnavailableError extends Error {}

const WORKER = new URL("./worker.ts", import.meta.url);
const TSX = import.meta.resolve("tsx");
const RECENT_MAX = 512;
/** A grader is trusted after this many jobs without a timeout, OOM or crash… */
const TRUST_AFTER_JOBS = 20;
/** …and stops being trusted for this long after one. */
const SUSPECT_MS = 5 * 60 * 1000;
const HEALTH_MAX = 10_000;
/** A batch is split across idle workers in parts of at least this many threads (a part costs one more round trip). */
const MIN_PART = 32;
const FAULT_CODES = new Set<GradeErrorCode>(["GRADER_TIMEOUT", "GRADER_MEMORY_LIMIT", "SANDBOX_CRASHED"]);

interface Health {
  cleanJobs: number;
  lastFaultAt: number;
}

/**
 * Events: "graderFault" (graderId, reason) when a grader's job took its worker down (crash,
 * V8 abort, or a hang the watchdog ended); "workerExit" ({pid, code, signal, stderrTail}).
 *
 * Scheduling: jobs of graders not yet trusted (new ones, validations, and any grader that
 * recently timed out, ran out of memory or crashed) may together hold at most all workers but
 * one, so a runaway grader cannot make a healthy grader wait for a worker.
 */
export class SandboxPool extends EventEmitter {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private readonly health = new Map<string, Health>();
  private nextId = 1;
  private closing = false;
  restarts = 0;

  constructor(readonly options: PoolOptions) {
    super();
  }

  private trusted(graderId: string | undefined): boolean {
    const h = graderId === undefined ? undefined : this.health.get(graderId);
    return !!h && h.cleanJobs >= TRUST_AFTER_JOBS && Date.now() - h.lastFaultAt > SUSPECT_MS;
  }

  private noteOutcome(graderId: string | undefined, faulted: boolean): void {
    if (graderId === undefined) return;
    const h = this.health.get(graderId) ?? { cleanJobs: 0, lastFaultAt: 0 };
    if (faulted) {
      h.cleanJobs = 0;
      h.lastFaultAt = Date.now();
    } else {
      h.cleanJobs++;
    }
    this.health.delete(graderId);
    this.health.set(graderId, h);
    if (this.health.size > HEALTH_MAX) this.health.delete(this.health.keys().next().value as string);
  }

  async start(): Promise<void> {
    await Promise.all(Array.from({ length: this.options.size }, () => this.spawn()));
  }

  get readyWorkers(): number {
    return this.slots.filter((s) => s.ready).length;
  }

  get pids(): number[] {
    return this.slots.filter((s) => s.ready).map((s) => s.child.pid as number);
  }

  private spawn(): Promise<void> {
    const child = fork(WORKER, [], {
      execArgv: ["--no-node-snapshot", "--import", TSX],
      // the V8 serializer copies a packed batch's strings as they are, where JSON would escape them again
      serialization: "advanced",
      env: { ...process.env, [LIMITS_ENV]: JSON.stringify(this.options.limits) },
      // V8 prints pages of heap statistics when it aborts on out-of-memory: keep them off the
      // server's output (the pool reports the abort itself)
      stdio: ["ignore", "inherit", "pipe", "ipc"],
    });
    const slot: Slot = { child, ready: false, recent: new Set(), stderrTail: "" };
    child.stderr?.on("data", (chunk: Buffer) => {
      slot.stderrTail = (slot.stderrTail + chunk.toString()).slice(-2000);
    });
    this.slots.push(slot);
    return new Promise((resolve, reject) => {
      child.on("message", (msg: WorkerReply | WorkerHello) => {
        if (msg.op === "ready") {
          slot.ready = true;
          resolve();
          this.pump();
          return;
        }
        this.settle(slot, msg);
      });
      child.on("exit", (code, signal) => {
        const index = this.slots.indexOf(slot);
        if (index >= 0) this.slots.splice(index, 1);
        if (!slot.ready) reject(new Error(`sandbox worker exited during start-up (code ${code}, signal ${signal})`));
        this.onExit(slot, code, signal);
      });
      child.on("error", () => {}); // 'exit' follows and does the work
    });
  }

  private onExit(slot: Slot, code: number | null, signal: NodeJS.Signals | null): void {
    const held = slot.job;
    if (!this.closing) this.emit("workerExit", { pid: slot.child.pid, code, signal, stderrTail: slot.stderrTail });
    if (held) {
      clearTimeout(held.timer);
      // V8's fatal out-of-memory path aborts the process (SIGABRT, or exit code 134)
      const oom = signal === "SIGABRT" || code === 134;
      const message = oom
        ? "the grader exhausted memory and V8 aborted its sandbox worker"
        : slot.hung
          ? `the sandbox worker stopped answering within ${held.job.budgetMs} ms and was killed`
          : `the sandbox worker died while running this request (${signal ?? `exit code ${code}`})`;
      held.job.reject(new SandboxCrashError(oom ? "GRADER_MEMORY_LIMIT" : "SANDBOX_CRASHED", message));
      if (held.job.graderId !== undefined && !this.closing) {
        this.noteOutcome(held.job.graderId, true);
        this.emit("graderFault", held.job.graderId, message);
      }
    }
    for (const job of this.queue.filter((j) => j.pin === slot)) {
      this.queue.splice(this.queue.indexOf(job), 1);
      job.reject(new SandboxCrashError("SANDBOX_CRASHED", "the sandbox worker exited"));
    }
    if (this.closing) return;
    this.restarts++;
    this.spawn().catch(() => {
      // start-up failing is not a grader's fault: retry after a pause rather than spin
      setTimeout(() => this.closing || this.spawn().catch(() => {}), 1000).unref();
    });
  }

  private settle(slot: Slot, reply: WorkerReply): void {
    const held = slot.job;
    if (!held || held.id !== reply.id) return;
    clearTimeout(held.timer);
    slot.job = undefined;
    if (reply.op === "grade")
      this.noteOutcome(
        held.job.graderId,
        reply.results.some((r) => "error" in r && FAULT_CODES.has(r.error.code)),
      );
    if (reply.op === "failed") held.job.reject(new Error(reply.message));
    else held.job.resolve(reply);
    this.pump();
  }

  private pump(): void {
    for (let qi = 0; qi < this.queue.length; ) {
      const idle = this.slots.filter((s) => s.ready && !s.job);
      if (idle.length === 0) return;
      const job = this.queue[qi];
      if (!job.pin && !this.trusted(job.graderId) && this.untrustedBusy() >= this.untrustedCap()) {
        qi++;
        continue;
      }
      const slot = job.pin
        ? idle.find((s) => s === job.pin)
        : (job.graderId && idle.find((s) => s.recent.has(job.graderId as string))) || idle[0];
      if (!slot) {
        qi++;
        continue;
      }
      this.queue.splice(qi, 1);
      this.dispatch(slot, job);
    }
  }

  /** With two or more workers, one ready worker is always kept for trusted graders. */
  private untrustedCap(): number {
    return this.options.size >= 2 ? this.readyWorkers - 1 : 1;
  }

  private untrustedBusy(): number {
    return this.slots.filter((s) => s.job && !s.job.trusted).length;
  }

  private dispatch(slot: Slot, job: Job): void {
    const id = this.nextId++;
    if (job.graderId) {
      slot.recent.delete(job.graderId);
      slot.recent.add(job.graderId);
      if (slot.recent.size > RECENT_MAX) slot.recent.delete(slot.recent.values().next().value as string);
    }
    const timer = setTimeout(() => {
      slot.hung = true;
      slot.child.kill("SIGKILL");
    }, job.budgetMs);
    slot.job = { id, job, timer, trusted: !!job.pin || this.trusted(job.graderId) };
    slot.child.send({ ...job.payload, id } as WorkerRequest);
  }

  private submit(payload: Payload, budgetMs: number, graderId?: string, pin?: Slot): Promise<WorkerReply> {
    if (this.closing) return Promise.reject(new SandboxUnavailableError("the sandbox is shut down"));
    return new Promise((resolve, reject) => {
      this.queue.push({ payload, graderId, resolve, reject, budgetMs, pin });
      this.pump();
    });
  }

  /** Worst case for n items: each may time out twice (batch call, then alone) plus rebuilds. */
  private budget(items: number): number {
    return this.options.limits.timeoutMs * (2 * items + 4) + 10_000;
  }

  /**
   * Grades threads in order; never rejects for a grader's fault. A trusted grader's batch is
   * split across the workers that are idle now, so one large batch uses every core; a worker
   * lost under one part fails only that part's items.
   */
  async gradeBatch(grader: GraderCode, threads: readonly WireThread[]): Promise<GradeOutcome[]> {
    const idle = this.slots.filter((s) => s.ready && !s.job).length - this.queue.length;
    const parts = this.trusted(grader.id) ? Math.min(idle, Math.floor(threads.length / MIN_PART)) : 1;
    if (parts <= 1) return this.gradePart(grader, threads);
    const size = Math.ceil(threads.length / parts);
    const pending: Array<Promise<GradeOutcome[]>> = [];
    for (let i = 0; i < threads.length; i += size) pending.push(this.gradePart(grader, threads.slice(i, i + size)));
    return (await Promise.all(pending)).flat();
  }

  private async gradePart(grader: GraderCode, threads: readonly WireThread[]): Promise<GradeOutcome[]> {
    try {
      const batch = packBatch(threads);
      const reply = await this.submit({ op: "grade", grader, batch }, this.budget(batch.count), grader.id);
      return (reply as Extract<WorkerReply, { op: "grade" }>).results;
    } catch (error) {
      if (!(error instanceof SandboxCrashError)) throw error;
      return Array.from({ length: threads.length }, () => ({ error: { code: error.code, message: error.message } }));
    }
  }

  async validate(source: string, threads?: readonly WireThread[]): Promise<ValidationResult> {
    const count = threads?.length ?? 0;
    const reply = await this.submit({ op: "validate", source, threads: threads && packBatch(threads) }, this.budget(count + 2) + 20_000);
    return (reply as Extract<WorkerReply, { op: "validate" }>).result;
  }

  /** Warm isolates, evictions and RSS per worker (for metrics and benchmarks). */
  async stats(): Promise<Array<{ warm: number; evictions: number; rss: number }>> {
    const ready = this.slots.filter((s) => s.ready);
    const replies = await Promise.all(ready.map((slot) => this.submit({ op: "stats" }, 10_000, undefined, slot)));
    return replies.map((r) => r as Extract<WorkerReply, { op: "stats" }>).map(({ warm, evictions, rss }) => ({ warm, evictions, rss }));
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const job of this.queue.splice(0)) job.reject(new SandboxUnavailableError("the sandbox is shut down"));
    await Promise.all(
      this.slots.map(
        (slot) =>
          new Promise<void>((resolve) => {
            if (slot.child.exitCode !== null || slot.child.signalCode !== null) return resolve();
            slot.child.once("exit", () => resolve());
            slot.child.disconnect();
            setTimeout(() => slot.child.kill("SIGKILL"), 5000).unref();
          }),
      ),
    );
  }
}
