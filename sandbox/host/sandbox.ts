// What the server sees of the sandbox: one small interface (SandboxPool implements it, over
// worker processes), the errors it throws, and the events it emits. Nothing here runs code.

import type { EventEmitter } from "node:events";
import type { WireThread } from "../../sdk/thread.ts";
import type { ValidationResult } from "../protocol/replies.ts";
import type { EngineLimits, GraderCode } from "../protocol/requests.ts";
import type { GradeErrorCode, GradeOutcome, Language } from "../validate/checks.ts";

export interface GradeOptions {
  /**
   * Date.now() by which the answer is due: calls still running then are stopped (no fault of the
   * grader's: not counted against its trust or quarantine), queued slices dropped, and every
   * thread without an outcome gets {abstained: {code: "DEADLINE_EXCEEDED"}}.
   */
  deadlineAt?: number;
  /**
   * Group sizes, in order, summing to threads.length: the threads are already ordered so each
   * group is contiguous. A group is never split across workers or slices; a grader that exports
   * gradeGroup / grade_group receives each group whole (one call, N results), one that does not
   * grades its threads one by one. Absent: no groups (a group-only grader then answers every
   * thread with an error; the server refuses such a request before it gets here).
   */
  groups?: readonly number[];
}

export interface PoolOptions {
  /** grading workers */
  size: number;
  limits: EngineLimits;
}

/** One grading worker's warm isolates, their heap, evictions, isolate CPU time and RSS. */
export interface WorkerStats {
  warm: number;
  warmHeapBytes: number;
  evictions: number;
  isolateCpuUs: number;
  rss: number;
}

/**
 * Events: "graderFault" (graderId, reason) when a grader's call took its worker down (its
 * worker's verdict, or V8 aborting under it), broke the reply format, or left its isolate
 * holding more outside its heap than a grader may (worker/engine.ts); "validationFault"
 * (project, reason) when a validation did; "workerExit" ({pid, code, signal, stderrTail}).
 */
export interface Sandbox extends Pick<EventEmitter, "on" | "off"> {
  start(): Promise<void>;
  /**
   * Grades threads in order; never rejects for a grader's fault. With `deadlineAt`, resolves by
   * then: unfinished threads abstain with DEADLINE_EXCEEDED and their work is cancelled.
   */
  gradeBatch(grader: GraderCode, threads: readonly WireThread[], options?: GradeOptions): Promise<GradeOutcome[]>;
  /** The five checks (and the sample thread unless `mock` is false), then `threads` graded like any batch of the project. */
  validate(
    project: string,
    source: string,
    threads?: readonly WireThread[],
    options?: { mock?: boolean; language?: Language },
  ): Promise<ValidationResult>;
  /** Disposes these graders' warm isolates in every worker (a delete or a replacement). */
  forget(ids: string[]): void;
  stats(): Promise<WorkerStats[]>;
  close(): Promise<void>;
  /** grading workers ready to take work */
  readonly readyWorkers: number;
  /** process ids of the ready grading workers */
  readonly pids: number[];
  /** process ids of the ready validation workers */
  readonly validatorPids: number[];
  /** workers started again after one died */
  readonly restarts: number;
  /** workers replaced because they held more memory than they should (none of them died) */
  readonly recycled: number;
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
