// The server's handle on the sandbox workers: starts them, schedules work on them fairly across
// projects, and supervises them. Grading workers take grading slices; a dedicated validation
// worker takes registrations and validations, so they never wait behind grading.
//
// Everything a worker says is read as hostile input: replies are checked for shape and bounds
// before use, and no loop runs over a length or index a worker sent. A grader is blamed for a
// worker's death only on the worker's own watchdog verdict naming its call (watchdog.ts), or
// when V8 aborted the process while it ran that grader's call; an external kill, a stall or a
// neighbour's fault never counts against anyone.

import { type ChildProcess, fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Readable } from "node:stream";
import type { WireThread } from "../../sdk/thread.ts";
import { type PackedBatch, packBatch } from "../protocol/batch.ts";
import {
  MAX_MESSAGE,
  MAX_RESULT,
  type ValidationResult,
  VERDICT_FD,
  type Verdict,
  type WorkerHello,
  type WorkerReply,
} from "../protocol/replies.ts";
import {
  type EngineLimits,
  type GraderCode,
  hardDeadline,
  LIMITS_ENV,
  ROLE_ENV,
  type SliceOptions,
  type WorkerNotice,
  type WorkerRequest,
} from "../protocol/requests.ts";
import { CHECKS, type CheckFailure, type GradeErrorCode, type GradeOutcome, SANDBOX_ERROR_CODES } from "../validate/checks.ts";

export interface PoolOptions {
  /** grading workers */
  size: number;
  limits: EngineLimits;
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

const WORKER = new URL("../worker/worker.ts", import.meta.url);
const TSX = import.meta.resolve("tsx");
const RECENT_MAX = 512;
/** A grader is trusted after this many jobs without a timeout, OOM or crash… */
const TRUST_AFTER_JOBS = 20;
/** …and stops being trusted for this long after one. */
const SUSPECT_MS = 5 * 60 * 1000;
const HEALTH_MAX = 10_000;
/** A trusted grader's batch is split across idle workers in parts of at least this many threads. */
const MIN_PART = 32;
/** Worker deaths one batch may cause before the rest of it fails fast. */
export const MAX_CRASHES_PER_BATCH = 3;
const FAULT_CODES = new Set<GradeErrorCode>(["GRADER_TIMEOUT", "GRADER_MEMORY_LIMIT", "SANDBOX_CRASHED"]);
const CODES = new Set<string>(SANDBOX_ERROR_CODES);
/** How often the pool looks for workers that stopped answering altogether. */
const BACKSTOP_TICK_MS = 250;
const MAX_VERDICT_LINE = 4096;
/** the id prefix of a source being validated (no stored grader) */
const VALIDATION_ID = "validate:";

interface Health {
  cleanJobs: number;
  lastFaultAt: number;
}

/** One batch (or one part of a split batch) of one grader, graded slice by slice. */
interface GradeTask {
  kind: "grade";
  project: string;
  grader: GraderCode;
  batch: PackedBatch;
  count: number;
  outcomes: GradeOutcome[];
  /** the next item to grade: every item before it has its outcome */
  next: number;
  /** grade one item per slice: a worker died under this batch and the item that did it is unknown */
  single: boolean;
  /** items known to have taken a worker down, with the error each gets instead of another try */
  culprits: Map<number, { code: GradeErrorCode; message: string }>;
  crashes: number;
  /** the worker that ran the last slice (it holds the grader warm) */
  lastSlot?: Slot;
  resolve: (outcomes: GradeOutcome[]) => void;
}

interface ValidateTask {
  kind: "validate";
  project: string;
  source: string;
  mock: boolean;
  resolve: (result: ValidationResult) => void;
  reject: (error: Error) => void;
}

interface StatsTask {
  kind: "stats";
  slot: Slot;
  resolve: (reply: Extract<WorkerReply, { op: "stats" }>) => void;
  reject: (error: Error) => void;
}

type Task = GradeTask | ValidateTask | StatsTask;

interface Running {
  id: number;
  task: Task;
  sentAt: number;
  /** ms after which a worker that has said nothing is presumed stuck and killed (no one is blamed) */
  budgetMs: number;
  /** for a grading slice: its first item, and whether it was a single item */
  from: number;
  single: boolean;
  trusted: boolean;
}

interface Slot {
  role: "grade" | "validate";
  child: ChildProcess;
  ready: boolean;
  /** replaced already; closes once idle */
  retiring: boolean;
  running?: Running;
  /** set when the pool's backstop killed this worker */
  hung?: boolean;
  /** the watchdog's last verdict line */
  verdict?: Verdict;
  verdictBuffer: string;
  /** the end of what the worker wrote to stderr, for the server log */
  stderrTail: string;
  /** graders this worker ran recently: dispatch prefers to send a grader back to them */
  recent: Set<string>;
}

/** Per-project FIFO queues served round-robin. */
class FairQueue<T extends { project: string }> {
  private readonly queues = new Map<string, T[]>();
  /** projects with queued tasks, in the order they are served */
  private ring: string[] = [];

  push(task: T): void {
    const q = this.queues.get(task.project);
    if (q) q.push(task);
    else {
      this.queues.set(task.project, [task]);
      this.ring.push(task.project);
    }
  }

  get size(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  /** The first task, in round-robin order of projects, that `eligible` accepts; the project then goes to the back. */
  take(eligible: (task: T, waiting: readonly string[]) => boolean): T | undefined {
    for (let r = 0; r < this.ring.length; r++) {
      const project = this.ring[r];
      const q = this.queues.get(project) as T[];
      const at = q.findIndex((t) => eligible(t, this.ring));
      if (at < 0) continue;
      const [task] = q.splice(at, 1);
      this.ring.splice(r, 1);
      if (q.length > 0) this.ring.push(project);
      else this.queues.delete(project);
      return task;
    }
    return undefined;
  }

  drain(): T[] {
    const all = [...this.queues.values()].flat();
    this.queues.clear();
    this.ring = [];
    return all;
  }
}

/**
 * Events: "graderFault" (graderId, reason) when a grader's call took its worker down (its
 * worker's verdict, or V8 aborting under it), broke the reply format, or left its isolate
 * holding more outside its heap than a grader may (engine.ts); "validationFault" (project,
 * reason) when a validation did; "workerExit" ({pid, code, signal, stderrTail}). A worker
 * that holds more memory than it should is replaced without dying (`recycled`).
 *
 * Scheduling: per-project queues served round-robin. A project holds at most its share of the
 * grading workers (all of them divided by the projects with work) while another project waits;
 * a long batch runs in slices and goes to the back of its project's queue after each one.
 * Graders not yet trusted (new ones, and any that recently timed out, ran out of memory or
 * crashed) may together hold at most all grading workers but one.
 */
export class SandboxPool extends EventEmitter {
  private readonly slots: Slot[] = [];
  private readonly grading = new FairQueue<GradeTask>();
  private readonly validations = new FairQueue<ValidateTask>();
  private readonly pinned: StatsTask[] = [];
  private readonly health = new Map<string, Health>();
  private readonly busyByProject = new Map<string, number>();
  private readonly backstop: NodeJS.Timeout;
  private nextId = 1;
  private closing = false;
  restarts = 0;
  /** workers replaced because they held more memory than they should (none of them died) */
  recycled = 0;

  constructor(readonly options: PoolOptions) {
    super();
    this.backstop = setInterval(() => this.checkStuck(), BACKSTOP_TICK_MS);
    this.backstop.unref();
  }

  private get sliceMs(): number {
    return Math.max(50, this.options.limits.timeoutMs / 2);
  }

  private trusted(graderId: string | undefined): boolean {
    const h = graderId === undefined ? undefined : this.health.get(graderId);
    return !!h && h.cleanJobs >= TRUST_AFTER_JOBS && Date.now() - h.lastFaultAt > SUSPECT_MS;
  }

  private noteOutcome(graderId: string, faulted: boolean): void {
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
    await Promise.all([...Array.from({ length: this.options.size }, () => this.spawn("grade")), this.spawn("validate")]);
  }

  private gradingSlots(): Slot[] {
    return this.slots.filter((s) => s.role === "grade" && s.ready && !s.retiring);
  }

  /** Grading workers ready to take work. */
  get readyWorkers(): number {
    return this.gradingSlots().length;
  }

  /** Process ids of the ready grading workers. */
  get pids(): number[] {
    return this.gradingSlots().map((s) => s.child.pid as number);
  }

  /** Process ids of the ready validation workers. */
  get validatorPids(): number[] {
    return this.slots.filter((s) => s.role === "validate" && s.ready).map((s) => s.child.pid as number);
  }

  private spawn(role: Slot["role"]): Promise<void> {
    const child = fork(WORKER, [], {
      // isolated-vm sizes each isolate's young generation from its memory limit (64 MB: ~1.4 MB), so
      // an allocating grader paid a scavenge every ~11 items; 2 MB semi-spaces cut CPU per item of a
      // ~100 µs grader from 1.13× native to 1.08× (measured), and leave a warm isolate's RSS as it was
      execArgv: ["--no-node-snapshot", "--max-semi-space-size=2", "--import", TSX],
      // the V8 serializer copies a packed batch's strings as they are, where JSON would escape them again
      serialization: "advanced",
      env: { ...process.env, [LIMITS_ENV]: JSON.stringify(this.options.limits), [ROLE_ENV]: role },
      // V8 prints pages of heap statistics when it aborts on out-of-memory: keep them off the
      // server's output (the pool reports the abort itself). fd 4 carries watchdog verdicts.
      stdio: ["ignore", "inherit", "pipe", "ipc", "pipe"],
    });
    const slot: Slot = { role, child, ready: false, retiring: false, recent: new Set(), stderrTail: "", verdictBuffer: "" };
    child.stderr?.on("data", (chunk: Buffer) => {
      slot.stderrTail = (slot.stderrTail + chunk.toString()).slice(-2000);
    });
    const verdicts = child.stdio[VERDICT_FD] as Readable | null;
    verdicts?.on("data", (chunk: Buffer) => this.onVerdictData(slot, chunk));
    this.slots.push(slot);
    return new Promise((resolve, reject) => {
      child.on("message", (msg: WorkerReply | WorkerHello) => {
        if (msg?.op === "ready") {
          slot.ready = true;
          resolve();
          this.pump();
          return;
        }
        this.settle(slot, msg);
      });
      // A verdict is written just before the watchdog kills the process: act on the exit only
      // once the verdict pipe has been read to its end (or shortly after, should it stay open).
      let pipeOpen = verdicts !== null && !verdicts.closed;
      let exited: [number | null, NodeJS.Signals | null] | undefined;
      let done = false;
      const finish = () => {
        if (done || !exited || pipeOpen) return;
        done = true;
        const [code, signal] = exited;
        const index = this.slots.indexOf(slot);
        if (index >= 0) this.slots.splice(index, 1);
        if (!slot.ready) reject(new Error(`sandbox worker exited during start-up (code ${code}, signal ${signal})`));
        this.onExit(slot, code, signal);
      };
      verdicts?.on("close", () => {
        pipeOpen = false;
        finish();
      });
      child.on("exit", (code, signal) => {
        exited = [code, signal];
        finish();
        setTimeout(() => {
          pipeOpen = false;
          finish();
        }, 250).unref();
      });
      child.on("error", () => {}); // 'exit' follows and does the work
    });
  }

  /** Verdict lines, read strictly: one JSON object per line, bounded in length. */
  private onVerdictData(slot: Slot, chunk: Buffer): void {
    slot.verdictBuffer += chunk.toString();
    let nl = slot.verdictBuffer.indexOf("\n");
    while (nl >= 0) {
      const line = slot.verdictBuffer.slice(0, nl);
      slot.verdictBuffer = slot.verdictBuffer.slice(nl + 1);
      const verdict = parseVerdict(line);
      if (verdict?.verdict === "recycle") this.retire(slot);
      else if (verdict) slot.verdict = verdict;
      nl = slot.verdictBuffer.indexOf("\n");
    }
    if (slot.verdictBuffer.length > MAX_VERDICT_LINE) slot.verdictBuffer = "";
  }

  /** Replaces a worker that holds memory it should not: a new one starts, the old one closes once idle. */
  private retire(slot: Slot): void {
    if (slot.retiring || this.closing) return;
    slot.retiring = true;
    this.recycled++;
    this.spawn(slot.role).catch(() => {});
    if (!slot.running && slot.child.connected) slot.child.disconnect();
  }

  private onExit(slot: Slot, code: number | null, signal: NodeJS.Signals | null): void {
    const running = slot.running;
    slot.running = undefined;
    if (!this.closing && !slot.retiring) this.emit("workerExit", { pid: slot.child.pid, code, signal, stderrTail: slot.stderrTail });
    if (running) {
      this.release(running);
      this.onLost(slot, running, code, signal);
    }
    for (const task of this.pinned.filter((t) => t.slot === slot)) {
      this.pinned.splice(this.pinned.indexOf(task), 1);
      task.reject(new SandboxCrashError("SANDBOX_CRASHED", "the sandbox worker exited"));
    }
    if (!this.closing && !slot.retiring) {
      this.restarts++;
      this.spawn(slot.role).catch(() => {
        // start-up failing is not a grader's fault: retry after a pause rather than spin
        setTimeout(() => this.closing || this.spawn(slot.role).catch(() => {}), 1000).unref();
      });
    }
    this.pump();
  }

  /** A worker died holding `running`: decide whose fault it was and what each item gets. */
  private onLost(slot: Slot, running: Running, code: number | null, signal: NodeJS.Signals | null): void {
    const task = running.task;
    const verdict = slot.verdict && "job" in slot.verdict && slot.verdict.job === running.id ? slot.verdict : undefined;
    // V8's fatal out-of-memory path aborts the process (SIGABRT, or exit code 134)
    const aborted = !verdict && (signal === "SIGABRT" || code === 134);
    let errorCode: GradeErrorCode = "SANDBOX_CRASHED";
    let message = `the sandbox worker died while running this request (${signal ?? `exit code ${code}`}); it was not this grader's fault`;
    let blamed = false;
    if (verdict?.verdict === "memory") {
      errorCode = "GRADER_MEMORY_LIMIT";
      message = `exceeded the ${this.options.limits.memoryMb} MB memory limit (${verdict.detail}); its sandbox worker was replaced`;
      blamed = true;
    } else if (verdict?.verdict === "timeout") {
      errorCode = "GRADER_TIMEOUT";
      message = `exceeded the ${this.options.limits.timeoutMs} ms time limit inside a built-in that cannot be interrupted (${verdict.detail}); its sandbox worker was replaced`;
      blamed = true;
    } else if (verdict?.verdict === "stalled") {
      message = `the sandbox worker stalled (${verdict.detail}) and was replaced; it was not this grader's fault`;
    } else if (aborted) {
      errorCode = "GRADER_MEMORY_LIMIT";
      message = "the grader exhausted memory and V8 aborted its sandbox worker";
      blamed = true;
    } else if (slot.hung) {
      message = `the sandbox worker stopped answering within ${running.budgetMs} ms and was replaced; it was not this grader's fault`;
    }

    if (task.kind === "stats") {
      task.reject(new SandboxCrashError("SANDBOX_CRASHED", message));
      return;
    }
    if (task.kind === "validate") {
      // a validation worker runs nothing but this project's validation: when it stops answering, that is the source's doing
      if ((blamed || slot.hung) && !this.closing) this.emit("validationFault", task.project, message);
      task.reject(new SandboxCrashError(errorCode, message));
      return;
    }
    if (this.closing) {
      this.finish(task, { code: "SANDBOX_CRASHED", message: "the sandbox is shutting down" });
      return;
    }
    if (blamed) {
      this.noteOutcome(task.grader.id, true);
      // threads graded with a source under validation have no stored grader: the project answers for them
      if (task.grader.id.startsWith(VALIDATION_ID)) this.emit("validationFault", task.project, message);
      else this.emit("graderFault", task.grader.id, message);
    }
    task.crashes++;
    // which item was running: the verdict names the call; a single-item slice names it too
    const from = verdict ? verdict.from : running.from;
    const count = verdict ? verdict.count : running.single ? 1 : -1;
    if (count === 0 && blamed) {
      // the grader's module itself took the worker down while loading: no item can be graded
      this.finish(task, { code: errorCode, message });
      return;
    }
    if (count === 1 && from >= task.next && from < task.count) {
      // the culprit is known: it gets the error; the items before it (graded in the lost slice) are graded again
      task.culprits.set(from, { code: errorCode, message });
      task.single = false;
    } else {
      task.single = true; // one item per slice from here on, so a further crash names its item
    }
    if (task.crashes >= MAX_CRASHES_PER_BATCH) {
      this.finish(task, {
        code: errorCode,
        message: `not run: this batch took ${task.crashes} sandbox workers down, so the rest of it fails fast (last: ${message})`,
      });
      return;
    }
    this.requeue(task);
  }

  /** Every item not yet graded gets this error (a known culprit keeps its own); the task is done. */
  private finish(task: GradeTask, error: { code: GradeErrorCode; message: string }): void {
    while (task.next < task.count) {
      task.outcomes.push({ error: task.culprits.get(task.next) ?? error });
      task.next++;
    }
    task.resolve(task.outcomes);
  }

  private requeue(task: GradeTask): void {
    for (let error = task.culprits.get(task.next); error; error = task.culprits.get(task.next)) {
      task.outcomes.push({ error });
      task.next++;
    }
    if (task.next >= task.count) task.resolve(task.outcomes);
    else this.grading.push(task);
  }

  private settle(slot: Slot, reply: WorkerReply): void {
    const running = slot.running;
    if (!running || !reply || typeof reply !== "object" || reply.id !== running.id) return;
    slot.running = undefined;
    this.release(running);
    const task = running.task;
    if (reply.op === "failed") {
      const error = new Error(typeof reply.message === "string" ? reply.message.slice(0, MAX_MESSAGE) : "the worker failed");
      if (task.kind === "grade") this.finish(task, { code: "SANDBOX_CRASHED", message: error.message });
      else task.reject(error);
    } else if (task.kind === "grade" && reply.op === "grade") {
      this.takeSlice(slot, task, reply);
    } else if (task.kind === "validate" && reply.op === "validate") {
      if (reply.retire === true) this.retire(slot);
      const result = checkedValidation(reply.result);
      if (result) task.resolve(result);
      else task.reject(new Error("the validation worker answered in an unknown form"));
    } else if (task.kind === "stats" && reply.op === "stats") {
      const { warm, warmHeapBytes, evictions, rss } = reply;
      if ([warm, warmHeapBytes, evictions, rss].every(isBytes)) task.resolve(reply);
      else task.reject(new Error("the sandbox worker's stats were malformed"));
    } else if (task.kind === "grade") {
      this.finish(task, { code: "SANDBOX_CRASHED", message: "the sandbox worker answered out of turn" });
    } else {
      task.reject(new Error("the sandbox worker answered out of turn"));
    }
    if (slot.retiring && slot.child.connected) slot.child.disconnect();
    this.pump();
  }

  /** A slice's outcomes, checked before use: at least one, at most the items left, each well-formed. */
  private takeSlice(slot: Slot, task: GradeTask, reply: Extract<WorkerReply, { op: "grade" }>): void {
    let left = task.count - task.next;
    for (const at of task.culprits.keys()) if (at >= task.next) left = Math.min(left, at - task.next);
    const outcomes = reply.outcomes;
    if (!Array.isArray(outcomes) || outcomes.length < 1 || outcomes.length > left || !outcomes.every(isOutcome)) {
      this.noteOutcome(task.grader.id, true);
      this.finish(task, { code: "SANDBOX_CRASHED", message: "the sandbox worker's reply was malformed" });
      slot.child.kill("SIGKILL");
      return;
    }
    for (const outcome of outcomes) task.outcomes.push(outcome);
    task.next += outcomes.length;
    task.lastSlot = slot;
    const faulted = typeof reply.violation === "string" || outcomes.some((o) => "error" in o && FAULT_CODES.has(o.error.code));
    this.noteOutcome(task.grader.id, faulted);
    if (typeof reply.violation === "string" && !task.grader.id.startsWith(VALIDATION_ID)) {
      this.emit("graderFault", task.grader.id, `broke the sandbox's reply format: ${reply.violation.slice(0, 200)}`);
    }
    if (typeof reply.fault === "string") {
      const reason = `exceeded the memory a grader may keep: ${reply.fault.slice(0, MAX_MESSAGE)}`;
      // threads graded with a source under validation have no stored grader: the project answers for them
      if (task.grader.id.startsWith(VALIDATION_ID)) this.emit("validationFault", task.project, reason);
      else this.emit("graderFault", task.grader.id, reason);
    }
    // the worker holds more than it should: a new one starts, and this one closes after this reply
    if (reply.retire === true) this.retire(slot);
    this.requeue(task);
  }

  private release(running: Running): void {
    const task = running.task;
    if (task.kind !== "grade") return;
    const n = (this.busyByProject.get(task.project) ?? 1) - 1;
    if (n <= 0) this.busyByProject.delete(task.project);
    else this.busyByProject.set(task.project, n);
  }

  private pump(): void {
    if (this.closing) return;
    for (const task of [...this.pinned]) {
      if (!task.slot.ready || task.slot.running) continue;
      this.pinned.splice(this.pinned.indexOf(task), 1);
      this.dispatch(task.slot, task);
    }
    for (;;) {
      const idle = this.slots.filter((s) => s.role === "validate" && s.ready && !s.running && !s.retiring);
      if (idle.length === 0) break;
      const task = this.validations.take(() => true);
      if (!task) break;
      this.dispatch(idle[0], task);
    }
    for (;;) {
      const idle = this.gradingSlots().filter((s) => !s.running);
      if (idle.length === 0) break;
      const task = this.grading.take((t, waiting) => this.eligible(t, waiting));
      if (!task) break;
      const slot =
        (task.lastSlot && idle.includes(task.lastSlot) ? task.lastSlot : undefined) ??
        idle.find((s) => s.recent.has(task.grader.id)) ??
        idle[0];
      this.dispatch(slot, task);
    }
  }

  /** Fair share: a project beyond its share waits while another project waits; untrusted graders leave one worker free. */
  private eligible(task: GradeTask, waiting: readonly string[]): boolean {
    const workers = this.readyWorkers;
    const busy = this.busyByProject.get(task.project) ?? 0;
    const othersWaiting = waiting.some((p) => p !== task.project);
    if (othersWaiting) {
      const active = new Set([...this.busyByProject.keys(), ...waiting]).size;
      if (busy >= Math.max(1, Math.floor(workers / active))) return false;
    }
    if (!this.trusted(task.grader.id)) {
      // one worker stays free for trusted graders; while a worker is being replaced the
      // untrusted get fewer, so a runaway grader cannot take the last one the pool has
      const untrustedBusy = this.slots.filter((s) => s.running && !s.running.trusted).length;
      const cap = this.options.size >= 2 ? workers - 1 : 1;
      if (untrustedBusy >= cap) return false;
    }
    return true;
  }

  private dispatch(slot: Slot, task: Task): void {
    const id = this.nextId++;
    const limits = this.options.limits;
    let request: WorkerRequest;
    let budgetMs: number;
    let from = 0;
    let single = false;
    let trusted = true;
    if (task.kind === "grade") {
      from = task.next;
      single = task.single;
      trusted = this.trusted(task.grader.id);
      let end = task.count;
      for (const at of task.culprits.keys()) if (at >= from && at < end) end = at;
      const options: SliceOptions = { single, sliceMs: this.sliceMs, limitsInARow: limitsAtEnd(task.outcomes), end };
      request = { id, op: "grade", grader: task.grader, batch: task.batch, from, options };
      // one slice, then one call that may run to its hard deadline, plus loading the module
      budgetMs = this.sliceMs + 2 * hardDeadline(limits.timeoutMs) + 5000;
      this.busyByProject.set(task.project, (this.busyByProject.get(task.project) ?? 0) + 1);
      slot.recent.delete(task.grader.id);
      slot.recent.add(task.grader.id);
      if (slot.recent.size > RECENT_MAX) slot.recent.delete(slot.recent.values().next().value as string);
    } else if (task.kind === "validate") {
      request = { id, op: "validate", source: task.source, mock: task.mock };
      // the checks (bounded input), loading the module and grading the sample thread
      budgetMs = 20_000 + 2 * 2 * hardDeadline(limits.timeoutMs);
    } else {
      request = { id, op: "stats" };
      budgetMs = 10_000;
    }
    slot.verdict = undefined;
    slot.running = { id, task, sentAt: Date.now(), budgetMs, from, single, trusted };
    slot.child.send(request);
  }

  /** The pool's last resort: a worker that has said nothing for its whole budget is killed. Nobody is blamed. */
  private checkStuck(): void {
    const now = Date.now();
    for (const slot of this.slots) {
      if (slot.running && !slot.hung && now - slot.running.sentAt > slot.running.budgetMs) {
        slot.hung = true;
        slot.child.kill("SIGKILL");
      }
    }
  }

  /**
   * Grades threads in order; never rejects for a grader's fault. A trusted grader's batch is
   * split across the workers that are idle now, so one large batch uses every core; a worker
   * lost under one part costs only that part's running item.
   */
  async gradeBatch(grader: GraderCode, threads: readonly WireThread[]): Promise<GradeOutcome[]> {
    if (this.closing) throw new SandboxUnavailableError("the sandbox is shut down");
    const idle = this.gradingSlots().filter((s) => !s.running).length - this.grading.size;
    const parts = this.trusted(grader.id) ? Math.min(idle, Math.floor(threads.length / MIN_PART)) : 1;
    if (parts <= 1) return this.gradePart(grader, threads);
    const size = Math.ceil(threads.length / parts);
    const pending: Array<Promise<GradeOutcome[]>> = [];
    for (let i = 0; i < threads.length; i += size) pending.push(this.gradePart(grader, threads.slice(i, i + size)));
    return (await Promise.all(pending)).flat();
  }

  private gradePart(grader: GraderCode, threads: readonly WireThread[]): Promise<GradeOutcome[]> {
    const batch = packBatch(threads);
    return new Promise((resolve) => {
      this.grading.push({
        kind: "grade",
        project: grader.project,
        grader,
        batch,
        count: batch.count,
        outcomes: [],
        next: 0,
        single: false,
        culprits: new Map(),
        crashes: 0,
        resolve,
      });
      this.pump();
    });
  }

  /**
   * The five checks and the built-in sample thread (unless `mock` is false: the grader has
   * samples of its own) run on the validation worker; threads given with the source are then
   * graded like any batch of the project, on the grading workers.
   */
  async validate(project: string, source: string, threads?: readonly WireThread[], { mock = true } = {}): Promise<ValidationResult> {
    if (this.closing) throw new SandboxUnavailableError("the sandbox is shut down");
    const result = await new Promise<ValidationResult>((resolve, reject) => {
      this.validations.push({ kind: "validate", project, source, mock, resolve, reject });
      this.pump();
    });
    if (!result.ok || !threads || threads.length === 0) return result;
    const id = `${VALIDATION_ID}${randomUUID()}`;
    try {
      const results = await this.gradeBatch({ id, project, compiled: result.compiled }, threads);
      return { ...result, results };
    } finally {
      this.forget([id]);
    }
  }

  /** Disposes these graders' warm isolates in every worker (a delete or a replacement). */
  forget(ids: string[]): void {
    for (const id of ids) this.health.delete(id);
    for (const slot of this.slots) {
      if (slot.ready && slot.child.connected) slot.child.send({ op: "forget", ids } satisfies WorkerNotice);
    }
  }

  /** Warm isolates, their heap, evictions and RSS per grading worker (for metrics and benchmarks). */
  async stats(): Promise<Array<{ warm: number; warmHeapBytes: number; evictions: number; isolateCpuUs: number; rss: number }>> {
    const ready = this.gradingSlots();
    const replies = await Promise.all(
      ready.map(
        (slot) =>
          new Promise<Extract<WorkerReply, { op: "stats" }>>((resolve, reject) => {
            this.pinned.push({ kind: "stats", slot, resolve, reject });
            this.pump();
          }),
      ),
    );
    return replies.map(({ warm, warmHeapBytes, evictions, isolateCpuUs, rss }) => ({ warm, warmHeapBytes, evictions, isolateCpuUs, rss }));
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.backstop);
    for (const task of this.validations.drain()) task.reject(new SandboxUnavailableError("the sandbox is shut down"));
    for (const task of this.grading.drain()) this.finish(task, { code: "SANDBOX_CRASHED", message: "the sandbox is shutting down" });
    for (const task of this.pinned.splice(0)) task.reject(new SandboxUnavailableError("the sandbox is shut down"));
    await Promise.all(
      this.slots.map(
        (slot) =>
          new Promise<void>((resolve) => {
            if (slot.child.exitCode !== null || slot.child.signalCode !== null) return resolve();
            slot.child.once("exit", () => resolve());
            if (slot.child.connected) slot.child.disconnect();
            setTimeout(() => slot.child.kill("SIGKILL"), 5000).unref();
          }),
      ),
    );
  }
}

/** Items stopped by a limit at the end of what was graded so far (the engine stops a batch after a few in a row). */
function limitsAtEnd(outcomes: GradeOutcome[]): number {
  let n = 0;
  for (let i = outcomes.length - 1; i >= 0 && n < 16; i--) {
    const o = outcomes[i];
    if (!("error" in o) || (o.error.code !== "GRADER_TIMEOUT" && o.error.code !== "GRADER_MEMORY_LIMIT")) break;
    n++;
  }
  return n;
}

const isRecord = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

/** One outcome as the engine builds it; anything else is a malformed reply. */
function isOutcome(o: unknown): o is GradeOutcome {
  if (!isRecord(o)) return false;
  if ("error" in o) {
    const e = o.error;
    return (
      isRecord(e) &&
      CODES.has(e.code as string) &&
      typeof e.message === "string" &&
      e.message.length <= MAX_MESSAGE + 1 &&
      (e.line === undefined ? e.column === undefined : isPosition(e.line) && isPosition(e.column))
    );
  }
  return (
    typeof o.score === "number" &&
    Number.isFinite(o.score) &&
    (o.reason === undefined || (typeof o.reason === "string" && o.reason.length <= MAX_RESULT)) &&
    (o.metadata === undefined || isRecord(o.metadata)) &&
    (o.subscores === undefined || Array.isArray(o.subscores))
  );
}

/** a line or column in a grader's source (1-based; a 64 KiB source has no more) */
const isPosition = (x: unknown): x is number => typeof x === "number" && Number.isInteger(x) && x >= 1 && x <= 1_000_000;

const VERDICTS = new Set(["timeout", "memory", "stalled", "recycle"]);
const isCount = (x: unknown): x is number => typeof x === "number" && Number.isInteger(x) && x >= 0 && x <= 1e9;
const isBytes = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
const CHECK_NAMES = new Set<string>(CHECKS);
/** a compiled grader: a 64 KiB source, the bundled standard library and a source map */
const MAX_COMPILED = 8 * 1024 * 1024;
const MAX_WARNINGS = 100;

/** A validation worker's result, checked and copied field by field; undefined when it is malformed. */
export function checkedValidation(r: unknown): ValidationResult | undefined {
  if (!isRecord(r)) return undefined;
  if (r.ok === true) {
    const { compiled, warnings } = r;
    if (typeof compiled !== "string" || compiled.length > MAX_COMPILED) return undefined;
    if (
      !Array.isArray(warnings) ||
      warnings.length > MAX_WARNINGS ||
      !warnings.every((w) => typeof w === "string" && w.length <= MAX_MESSAGE)
    )
      return undefined;
    return { ok: true, compiled, warnings: [...warnings] };
  }
  const f = r.failure;
  if (r.ok !== false || !isRecord(f) || !CHECK_NAMES.has(f.check as string) || typeof f.message !== "string") return undefined;
  const optionalPosition = (x: unknown) => x === undefined || isPosition(x);
  if (!optionalPosition(f.line) || !optionalPosition(f.column) || (f.costly !== undefined && typeof f.costly !== "boolean"))
    return undefined;
  return {
    ok: false,
    failure: {
      check: f.check as CheckFailure["check"],
      message: f.message.slice(0, 4 * MAX_MESSAGE),
      ...(f.line === undefined ? {} : { line: f.line as number }),
      ...(f.column === undefined ? {} : { column: f.column as number }),
      ...(f.costly === true ? { costly: true } : {}),
    },
  };
}

export function parseVerdict(line: string): Verdict | undefined {
  if (line.length > MAX_VERDICT_LINE) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!isRecord(v) || !VERDICTS.has(v.verdict as string)) return undefined;
  if (v.verdict === "recycle") return isBytes(v.rss) ? { verdict: "recycle", rss: v.rss } : undefined;
  if (!isCount(v.job) || !isCount(v.from) || !isCount(v.count) || typeof v.detail !== "string") return undefined;
  return {
    verdict: v.verdict as "timeout" | "memory" | "stalled",
    job: v.job,
    from: v.from,
    count: v.count,
    detail: v.detail.slice(0, 200),
  };
}
