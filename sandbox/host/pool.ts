// The server's handle on the sandbox (the Sandbox interface, sandbox.ts): a thin front over the
// worker processes (supervisor.ts) and the scheduler that hands them work (scheduler.ts). Here a
// trusted grader's batch is cut into parts across idle workers, and a validation's own threads
// are graded after its checks pass. Grading workers take grading slices; a dedicated
// validation worker takes registrations and validations, so they never wait behind grading.
//
// Scheduling: per-project queues served round-robin. A project holds at most its share of the
// grading workers (all of them divided by the projects with work) while another project waits;
// a long batch runs in slices and goes to the back of its project's queue after each one.
// Graders not yet trusted (new ones, and any that recently timed out, ran out of memory or
// crashed) may together hold at most all grading workers but one. A worker that holds more
// memory than it should is replaced without dying (`recycled`).

import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import type { WireThread } from "../../sdk/thread.ts";
import { checkGroups, packBatch } from "../protocol/batch.ts";
import type { ValidationResult } from "../protocol/replies.ts";
import type { GraderCode } from "../protocol/requests.ts";
import type { GradeOutcome, Language } from "../validate/checks.ts";
import { PackedThreads, type Threads, threadCount, threadObjects } from "./packed-threads.ts";
import { type GradeOptions, type PoolOptions, type Sandbox, SandboxUnavailableError, type WorkerStats } from "./sandbox.ts";
import { Scheduler } from "./scheduler.ts";
import { Supervisor } from "./supervisor.ts";
import { VALIDATION_ID } from "./tasks.ts";

/** A trusted grader's batch is split across idle workers (under a deadline: across the queue) in parts of at least this many threads. */
const MIN_PART = 32;

export class SandboxPool extends EventEmitter implements Sandbox {
  private readonly workers: Supervisor;
  private readonly scheduler: Scheduler;

  constructor(readonly options: PoolOptions) {
    super();
    this.workers = new Supervisor(options.limits, this, {
      pump: () => this.scheduler.pump(),
      reply: (worker, message) => this.scheduler.settle(worker, message),
      exited: (worker, running, code, signal) => this.scheduler.exited(worker, running, code, signal),
    });
    this.scheduler = new Scheduler(this.workers, options, this);
  }

  async start(): Promise<void> {
    await Promise.all([...Array.from({ length: this.options.size }, () => this.workers.spawn("grade")), this.workers.spawn("validate")]);
  }

  get restarts(): number {
    return this.workers.restarts;
  }

  get recycled(): number {
    return this.workers.recycled;
  }

  get readyWorkers(): number {
    return this.workers.grading().length;
  }

  get pids(): number[] {
    return this.workers.grading().map((w) => w.child.pid as number);
  }

  get validatorPids(): number[] {
    return this.workers.workers.filter((w) => w.role === "validate" && w.ready).map((w) => w.child.pid as number);
  }

  /**
   * Grades threads in order; never rejects for a grader's fault. A trusted grader's batch is
   * split across the workers that are idle now, so one large batch uses every core; a worker
   * lost under one part costs only that part's running item (with groups, its running group).
   * With `groups` (sizes in order, summing to threads.length; TypeError otherwise) parts are cut
   * only between groups. With `deadlineAt`, each part answers by then (scheduler.ts): what is
   * unfinished abstains.
   */
  async gradeBatch(grader: GraderCode, sent: Threads, options: GradeOptions = {}): Promise<GradeOutcome[]> {
    if (this.workers.closing) throw new SandboxUnavailableError("the sandbox is shut down");
    const { groups, deadlineAt } = options;
    const count = threadCount(sent);
    if (groups !== undefined) checkGroups(groups, count);
    const idle = this.workers.grading().filter((w) => !w.running).length - this.scheduler.queued;
    // under a deadline every part of MIN_PART is queued, not one per idle worker: each part
    // retries what its calls' caps set aside on its own, so an item that hangs till the
    // deadline holds at most its own part's other retries back while the workers take the rest
    const most = Math.floor(count / MIN_PART);
    const parts = !this.scheduler.trust.trusted(grader.id) ? 1 : deadlineAt !== undefined ? most : Math.min(idle, most);
    const size = Math.ceil(count / Math.max(1, parts));
    const pending: Array<Promise<GradeOutcome[]>> = [];
    if (sent instanceof PackedThreads && groups === undefined) {
      // a packed batch is graded as it came: a part is a slice of it, no thread object is made
      for (let i = 0; i < count; i += size)
        pending.push(this.scheduler.grade(grader, sent.slice(i, Math.min(count, i + size)), deadlineAt));
      return (await Promise.all(pending)).flat();
    }
    const threads = threadObjects(sent);
    if (parts <= 1) return this.gradePart(grader, threads, groups, deadlineAt);
    if (groups === undefined) {
      for (let i = 0; i < threads.length; i += size)
        pending.push(this.gradePart(grader, threads.slice(i, i + size), undefined, deadlineAt));
    } else {
      // whole groups per part, each part closed once it holds at least its share of threads
      let start = 0;
      let first = 0;
      for (let g = 0, at = 0; g < groups.length; g++) {
        at += groups[g];
        if (at - start >= size || g === groups.length - 1) {
          pending.push(this.gradePart(grader, threads.slice(start, at), groups.slice(first, g + 1), deadlineAt));
          start = at;
          first = g + 1;
        }
      }
    }
    return (await Promise.all(pending)).flat();
  }

  private gradePart(
    grader: GraderCode,
    threads: readonly WireThread[],
    groups?: readonly number[],
    deadlineAt?: number,
  ): Promise<GradeOutcome[]> {
    return this.scheduler.grade(grader, packBatch(threads, groups), deadlineAt);
  }

  /**
   * The five checks and the built-in sample thread (unless `mock` is false: the grader has
   * samples of its own) run on the validation worker; threads given with the source are then
   * graded like any batch of the project, on the grading workers (for a grader of groups only,
   * each sample as a group of one, as the sample thread is).
   */
  async validate(
    project: string,
    source: string,
    threads?: readonly WireThread[],
    { mock = true, language }: { mock?: boolean; language?: Language } = {},
  ): Promise<ValidationResult> {
    if (this.workers.closing) throw new SandboxUnavailableError("the sandbox is shut down");
    const result = await this.scheduler.validate(project, source, mock, language);
    if (!result.ok || !threads || threads.length === 0) return result;
    const id = `${VALIDATION_ID}${randomUUID()}`;
    try {
      const groups = result.shape === "group" ? threads.map(() => 1) : undefined;
      const results = await this.gradeBatch(
        { id, project, compiled: result.compiled, ...(language ? { language } : {}) },
        threads,
        groups ? { groups } : {},
      );
      return { ...result, results };
    } finally {
      this.forget([id]);
    }
  }

  forget(ids: string[]): void {
    for (const id of ids) this.scheduler.trust.forget(id);
    this.workers.notify({ op: "forget", ids });
  }

  /** Warm isolates, their heap, evictions and RSS per grading worker (for metrics and benchmarks). */
  async stats(): Promise<WorkerStats[]> {
    const replies = await Promise.all(this.workers.grading().map((worker) => this.scheduler.stats(worker)));
    return replies.map(({ warm, warmHeapBytes, evictions, isolateCpuUs, rss }) => ({ warm, warmHeapBytes, evictions, isolateCpuUs, rss }));
  }

  async close(): Promise<void> {
    this.workers.stop();
    this.scheduler.drain();
    await this.workers.exitAll();
  }
}
