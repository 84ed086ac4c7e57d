// Who runs what next: grading tasks in per-project fair queues (fair-queue.ts) on the grading
// workers, validations on the validation worker, round-robin per project, never behind grading,
// and stats pinned to the worker they ask about. A long batch runs in slices and goes to the back
// of its project's queue after each one. Each reply is read strictly (replies.ts) before it
// counts; a worker lost under a task is blamed (blame.ts) and its task contained (tasks.ts).

import type { EventEmitter } from "node:events";
import type { PackedBatch } from "../protocol/batch.ts";
import { MAX_MESSAGE, type ValidationResult, type WorkerReply } from "../protocol/replies.ts";
import { type GraderCode, hardDeadline, type SliceOptions, type WorkerRequest } from "../protocol/requests.ts";
import type { GradeErrorCode, GradeOutcome, Language } from "../validate/checks.ts";
import { blame } from "./blame.ts";
import { FairQueue, fairShare, type Occupancy } from "./fair-queue.ts";
import {
  CODE_GRADER_CODES,
  checkedAside,
  checkedValidation,
  failureMessage,
  GRADER_CODES,
  wellFormedSlice,
  wellFormedStats,
} from "./replies.ts";
import { type PoolOptions, SandboxCrashError, SandboxUnavailableError } from "./sandbox.ts";
import type { Supervisor, WorkerHandle } from "./supervisor.ts";
import {
  contain,
  expire,
  finish,
  type GradeTask,
  gradeTask,
  limitsAtEnd,
  type Running,
  retrying,
  type StatsTask,
  skipCulprits,
  sliceEnd,
  type Task,
  unfinished,
  VALIDATION_ID,
  type ValidateTask,
} from "./tasks.ts";
import { Trust } from "./trust.ts";

/** a worker's first Python request boots its interpreter template (2.5 s of CPU), then restores an isolate from it */
const PYTHON_START_MS = 20_000;
/** graders each worker remembers having run, so a grader goes back to a worker that holds it warm */
const RECENT_MAX = 512;
/**
 * A slice under a deadline stops this long before it, so its reply (with what it finished) is
 * in before the pool answers at the deadline: IPC of a slice's outcomes, on a loaded machine.
 */
export const REPLY_MARGIN_MS = 50;
/**
 * How long past its deadline a batch waits for a slice still running, whose reply carries what
 * it finished: a loaded machine stops an isolate's call late (60–90 ms measured at a load of 12
 * on 2 cores). The answer is then due within the deadline + this.
 */
export const LATE_REPLY_MS = 25;
/** outcomes that cost a grader its trust (trust.ts) */
const FAULT_CODES = new Set<GradeErrorCode>(["GRADER_TIMEOUT", "GRADER_MEMORY_LIMIT", "SANDBOX_CRASHED"]);

export class Scheduler {
  private readonly grading = new FairQueue<GradeTask>();
  private readonly validations = new FairQueue<ValidateTask>();
  private readonly pinned: StatsTask[] = [];
  private readonly busyByProject = new Map<string, number>();
  readonly trust = new Trust();
  private nextId = 1;

  constructor(
    private readonly workers: Supervisor,
    private readonly options: PoolOptions,
    /** emits "graderFault" and "validationFault" */
    private readonly events: EventEmitter,
  ) {}

  private get sliceMs(): number {
    return Math.max(50, this.options.limits.timeoutMs / 2);
  }

  /** Grading tasks waiting for a worker. */
  get queued(): number {
    return this.grading.size;
  }

  /**
   * With `deadlineAt` (a Date.now()) the batch answers by then: its own timer takes it out of
   * the queue and abstains what is unfinished; a slice still running then is discarded when its
   * reply comes (it stops at the deadline itself, so its worker is free at once).
   */
  grade(grader: GraderCode, batch: PackedBatch, deadlineAt?: number): Promise<GradeOutcome[]> {
    return new Promise((resolve) => {
      const task = gradeTask(grader, batch, resolve, deadlineAt);
      if (deadlineAt !== undefined) {
        const left = deadlineAt - Date.now();
        if (left <= 0) return expire(task);
        task.timer = setTimeout(() => this.due(task), left);
      }
      this.grading.push(task);
      this.pump();
    });
  }

  /**
   * A task's deadline came: queued, it answers now; running, once its slice replies or
   * LATE_REPLY_MS have passed. A retry of a unit set aside still running has nothing finished
   * to bring: the task answers now.
   */
  private due(task: GradeTask): void {
    const running = this.workers.workers.find((w) => w.running?.task === task)?.running;
    if (this.grading.remove(task) || !running || running.from < task.next) expire(task);
    else task.timer = setTimeout(() => expire(task), LATE_REPLY_MS);
  }

  validate(project: string, source: string, mock: boolean, language?: Language): Promise<ValidationResult> {
    return new Promise<ValidationResult>((resolve, reject) => {
      this.validations.push({ kind: "validate", project, source, mock, ...(language ? { language } : {}), resolve, reject });
      this.pump();
    });
  }

  stats(worker: WorkerHandle): Promise<Extract<WorkerReply, { op: "stats" }>> {
    return new Promise((resolve, reject) => {
      this.pinned.push({ kind: "stats", worker, resolve, reject });
      this.pump();
    });
  }

  pump(): void {
    if (this.workers.closing) return;
    for (const task of [...this.pinned]) {
      if (!task.worker.ready || task.worker.running) continue;
      this.pinned.splice(this.pinned.indexOf(task), 1);
      this.dispatch(task.worker, task);
    }
    for (;;) {
      const idle = this.workers.workers.filter((w) => w.role === "validate" && w.ready && !w.running && !w.retiring);
      if (idle.length === 0) break;
      const task = this.validations.take(() => true);
      if (!task) break;
      this.dispatch(idle[0], task);
    }
    for (;;) {
      const idle = this.workers.grading().filter((w) => !w.running);
      if (idle.length === 0) break;
      const now = this.occupancy();
      // a project's retries of units set aside (which may hang till their deadline) wait behind its first passes
      const task = this.grading.take(
        (t, waiting) => fairShare(t.project, this.trust.trusted(t.grader.id), waiting, now),
        (t) => retrying(t) === undefined,
      );
      if (!task) break;
      const worker =
        (task.lastWorker && idle.includes(task.lastWorker) ? task.lastWorker : undefined) ??
        idle.find((w) => w.recent.has(task.grader.id)) ??
        idle[0];
      this.dispatch(worker, task);
    }
  }

  private occupancy(): Occupancy {
    return {
      workers: this.workers.grading().length,
      size: this.options.size,
      busy: this.busyByProject,
      untrustedBusy: this.workers.workers.filter((w) => w.running && !w.running.trusted).length,
    };
  }

  private dispatch(worker: WorkerHandle, task: Task): void {
    const id = this.nextId++;
    const limits = this.options.limits;
    let request: WorkerRequest;
    let budgetMs: number;
    let from = 0;
    let single = false;
    let trusted = true;
    if (task.kind === "grade") {
      // the first pass caps its calls under a deadline; what that set aside is then retried alone, uncapped
      const retry = retrying(task);
      from = retry ?? task.next;
      single = retry !== undefined || task.single;
      trusted = this.trust.trusted(task.grader.id);
      const options: SliceOptions = {
        single,
        sliceMs: this.sliceMs,
        limitsInARow: limitsAtEnd(task),
        end: sliceEnd(task, from),
        ...(task.deadlineAt === undefined ? {} : { deadlineAt: task.deadlineAt - REPLY_MARGIN_MS }),
        ...(task.deadlineAt !== undefined && retry === undefined ? { setAside: true } : {}),
      };
      // a long batch's later slices usually go back to the worker that ran the last: it holds the batch
      const held = worker.heldBatch === task.batchId;
      request = { id, op: "grade", grader: task.grader, ...(held ? {} : { batch: task.batch }), batchId: task.batchId, from, options };
      worker.heldBatch = task.batchId;
      // one slice, then one call that may run to its hard deadline, plus loading the module (and
      // for Python, booting the worker's interpreter template and restoring the grader's isolate)
      budgetMs =
        this.sliceMs +
        2 * hardDeadline(limits.timeoutMs) +
        5000 +
        (task.grader.language === "python" || task.grader.language === "code" ? PYTHON_START_MS : 0);
      this.busyByProject.set(task.project, (this.busyByProject.get(task.project) ?? 0) + 1);
      worker.recent.delete(task.grader.id);
      worker.recent.add(task.grader.id);
      if (worker.recent.size > RECENT_MAX) worker.recent.delete(worker.recent.values().next().value as string);
    } else if (task.kind === "validate") {
      request = { id, op: "validate", source: task.source, mock: task.mock, ...(task.language ? { language: task.language } : {}) };
      // the checks (bounded input), loading the module and grading the sample thread
      budgetMs = 20_000 + 2 * 2 * hardDeadline(limits.timeoutMs) + (task.language === "python" ? PYTHON_START_MS : 0);
    } else {
      request = { id, op: "stats" };
      budgetMs = 10_000;
    }
    this.workers.send(worker, request, { id, task, sentAt: Date.now(), budgetMs, from, single, trusted });
  }

  private release(running: Running): void {
    const task = running.task;
    if (task.kind !== "grade") return;
    const n = (this.busyByProject.get(task.project) ?? 1) - 1;
    if (n <= 0) this.busyByProject.delete(task.project);
    else this.busyByProject.set(task.project, n);
  }

  private requeue(task: GradeTask): void {
    if (!skipCulprits(task)) this.grading.push(task);
  }

  /** A worker's reply (the supervisor's hook): read strictly, applied to the task it answers. */
  settle(worker: WorkerHandle, reply: WorkerReply): void {
    const running = worker.running;
    if (!running || !reply || typeof reply !== "object" || reply.id !== running.id) return;
    worker.running = undefined;
    this.release(running);
    const task = running.task;
    if (reply.op === "failed") {
      const error = new Error(failureMessage(reply));
      if (task.kind === "grade") finish(task, { code: "SANDBOX_CRASHED", message: error.message });
      else task.reject(error);
    } else if (task.kind === "grade" && task.done && reply.op !== "grade") {
      // the batch answered at its deadline: whatever became of this slice is of no use now
    } else if (task.kind === "grade" && reply.op === "grade") {
      this.takeSlice(worker, task, running.from, reply);
    } else if (task.kind === "validate" && reply.op === "validate") {
      if (reply.retire === true) this.workers.retire(worker);
      const result = checkedValidation(reply.result);
      if (result) task.resolve(result);
      else task.reject(new Error("the validation worker answered in an unknown form"));
    } else if (task.kind === "stats" && reply.op === "stats") {
      if (wellFormedStats(reply)) task.resolve(reply);
      else task.reject(new Error("the sandbox worker's stats were malformed"));
    } else if (task.kind === "grade") {
      finish(task, { code: "SANDBOX_CRASHED", message: "the sandbox worker answered out of turn" });
    } else {
      task.reject(new Error("the sandbox worker answered out of turn"));
    }
    this.workers.answered(worker);
    this.pump();
  }

  /**
   * A slice's outcomes (from item `from` on), checked before use: at least one (none may be
   * finished when its deadline stopped it), at most the items left, each well-formed; under a
   * deadline, on the first pass, the units it set aside beside them (whole units, within what
   * it covered). A retry of a unit set aside answers that whole unit or, stopped, nothing.
   * Those of a task that answered at its deadline meanwhile still count towards trust and
   * faults, and are dropped.
   */
  private takeSlice(worker: WorkerHandle, task: GradeTask, from: number, reply: Extract<WorkerReply, { op: "grade" }>): void {
    const outcomes = reply.outcomes;
    const stopped = reply.deadline === true;
    const retry = from < task.next;
    const left = sliceEnd(task, from) - from;
    const isStart = (i: number) => task.units.isStart(i);
    const aside =
      reply.deferred === undefined
        ? []
        : task.deadlineAt === undefined || retry || !Array.isArray(outcomes)
          ? undefined
          : checkedAside(reply.deferred, from, left, outcomes.length, isStart);
    if (
      (stopped && task.deadlineAt === undefined) ||
      aside === undefined ||
      (retry && task.aside[0] !== from) ||
      !wellFormedSlice(
        outcomes,
        left,
        (n) => isStart(from + n),
        stopped ? 0 : 1,
        aside.length,
        task.grader.language === "code" ? CODE_GRADER_CODES : GRADER_CODES,
      )
    ) {
      this.trust.note(task.grader.id, true);
      finish(task, { code: "SANDBOX_CRASHED", message: "the sandbox worker's reply was malformed" });
      this.workers.kill(worker);
      return;
    }
    if (!task.done && retry) {
      for (let k = 0; k < outcomes.length; k++) task.outcomes[from + k] = outcomes[k];
      if (outcomes.length > 0) task.aside.shift();
      task.lastWorker = worker;
    } else if (!task.done) {
      // the items it covered, in order: its outcomes, and a placeholder for each item set aside
      for (let k = from, o = 0, d = 0; k < from + outcomes.length + aside.length; k++) {
        if (aside[d] === k) {
          task.outcomes.push(unfinished());
          if (isStart(k)) task.aside.push(k);
          d++;
        } else task.outcomes.push(outcomes[o++]);
      }
      task.next += outcomes.length + aside.length;
      task.lastWorker = worker;
    }
    const faulted = typeof reply.violation === "string" || outcomes.some((o) => "error" in o && FAULT_CODES.has(o.error.code));
    this.trust.note(task.grader.id, faulted);
    if (typeof reply.violation === "string" && !task.grader.id.startsWith(VALIDATION_ID)) {
      this.events.emit("graderFault", task.grader.id, `broke the sandbox's reply format: ${reply.violation.slice(0, 200)}`);
    }
    if (typeof reply.fault === "string") {
      const reason = `exceeded the memory a grader may keep: ${reply.fault.slice(0, MAX_MESSAGE)}`;
      // threads graded with a source under validation have no stored grader: the project answers for them
      if (task.grader.id.startsWith(VALIDATION_ID)) this.events.emit("validationFault", task.project, reason);
      else this.events.emit("graderFault", task.grader.id, reason);
    }
    // the worker holds more than it should: a new one starts, and this one closes after this reply
    if (reply.retire === true) this.workers.retire(worker);
    // a slice that ended on its own at its deadline (past the margin it was given) is the last one too
    if (stopped || (task.deadlineAt !== undefined && Date.now() >= task.deadlineAt - REPLY_MARGIN_MS)) expire(task);
    else if (!task.done) this.requeue(task);
  }

  /** A worker exited (the supervisor's hook): whose fault it was, and what each item gets. */
  exited(worker: WorkerHandle, running: Running | undefined, code: number | null, signal: NodeJS.Signals | null): void {
    if (running) {
      this.release(running);
      this.lost(worker, running, code, signal);
    }
    for (const task of this.pinned.filter((t) => t.worker === worker)) {
      this.pinned.splice(this.pinned.indexOf(task), 1);
      task.reject(new SandboxCrashError("SANDBOX_CRASHED", "the sandbox worker exited"));
    }
  }

  private lost(worker: WorkerHandle, running: Running, code: number | null, signal: NodeJS.Signals | null): void {
    const task = running.task;
    const closing = this.workers.closing;
    const loss = blame(
      { job: running.id, verdict: worker.verdict, hung: worker.hung, budgetMs: running.budgetMs, code, signal },
      this.options.limits,
    );
    if (task.kind === "stats") {
      task.reject(new SandboxCrashError("SANDBOX_CRASHED", loss.message));
      return;
    }
    if (task.kind === "validate") {
      // a validation worker runs nothing but this project's validation: when it stops answering, that is the source's doing
      if ((loss.blamed || worker.hung) && !closing) this.events.emit("validationFault", task.project, loss.message);
      task.reject(new SandboxCrashError(loss.code, loss.message));
      return;
    }
    if (closing) {
      finish(task, { code: "SANDBOX_CRASHED", message: "the sandbox is shutting down" });
      return;
    }
    // answered at its deadline already: the loss is judged as any other (the watchdog holds a call
    // to the grader's own limit, never to the deadline), and nothing is graded again
    const answered = task.done;
    // a code grader's worker taken down by one completion's program is that completion's doing
    // (contain() below blames the item): quarantining the grader would punish every honest one
    if (loss.blamed && task.grader.language !== "code") {
      this.trust.note(task.grader.id, true);
      // threads graded with a source under validation have no stored grader: the project answers for them
      if (task.grader.id.startsWith(VALIDATION_ID)) this.events.emit("validationFault", task.project, loss.message);
      else this.events.emit("graderFault", task.grader.id, loss.message);
    }
    if (!answered && contain(task, loss, running)) this.requeue(task);
  }

  /** Shutting down: every queued request ends now. */
  drain(): void {
    for (const task of this.validations.drain()) task.reject(new SandboxUnavailableError("the sandbox is shut down"));
    for (const task of this.grading.drain()) finish(task, { code: "SANDBOX_CRASHED", message: "the sandbox is shutting down" });
    for (const task of this.pinned.splice(0)) task.reject(new SandboxUnavailableError("the sandbox is shut down"));
  }
}
