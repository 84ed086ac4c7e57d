// What a sandbox worker process sends the host (the server's pool): replies over Node IPC, and
// the verdict lines its watchdog writes to a pipe of their own just before it kills the
// process. The other direction is requests.ts. Types and constants only: both sides import this
// file. The host reads all of it as hostile input (host/replies.ts).

import type { CheckFailure, GradeOutcome, GraderShape } from "../validate/checks.ts";

/** JSON characters of one structured result (reason, metadata, subscores included), wherever one is read */
export const MAX_RESULT = 16 * 1024;
/** characters of an error message */
export const MAX_MESSAGE = 2000;

export type ValidationResult =
  | { ok: true; compiled: string; warnings: string[]; results?: GradeOutcome[]; shape?: GraderShape }
  | { ok: false; failure: CheckFailure };

export interface SliceResult {
  /** outcomes of items from, from+1, …: the whole rest of the batch or a prefix of it */
  outcomes: GradeOutcome[];
  /** set when the isolate broke the reply format: the grader's fault, counted as one */
  violation?: string;
  /** set when the grader's isolate kept more memory than it may (GRADER_MEMORY_LIMIT): the grader's fault, counted as one */
  fault?: string;
  /** the worker holds more memory than it should: replace it (the slice ended early) */
  retire?: true;
  /**
   * the slice stopped at its deadline (SliceOptions.deadlineAt): the items after its outcomes
   * (there may be none) were not finished; the call it cut short is nobody's fault
   */
  deadline?: true;
  /**
   * items set aside (SliceOptions.setAside): their indexes in the batch, ascending, whole units.
   * The slice covered `outcomes.length + deferred.length` items from `from`; `outcomes` holds
   * the others' in order. Made by the engine, outside the isolate: a record cannot say it.
   */
  deferred?: number[];
}

export type WorkerReply =
  | ({ id: number; op: "grade" } & SliceResult)
  /** `retire`: the worker should be replaced (its esbuild is stuck on a source past its deadline, or it holds too much memory) */
  | { id: number; op: "validate"; result: ValidationResult; retire?: boolean }
  | { id: number; op: "stats"; warm: number; warmHeapBytes: number; evictions: number; isolateCpuUs: number; rss: number }
  | { id: number; op: "failed"; message: string };

export type WorkerHello = { op: "ready"; pid: number };

/** the worker's file descriptor its watchdog writes verdict lines to (one JSON object a line) */
export const VERDICT_FD = 4;

export type Verdict =
  | { verdict: "timeout" | "memory"; job: number; from: number; count: number; detail: string }
  /** the call ran past its hard deadline without using the CPU to do so: nobody's fault */
  | { verdict: "stalled"; job: number; from: number; count: number; detail: string }
  /** idle, and holding much more memory than its warm isolates explain (or past its recycle bound): replace it when convenient */
  | { verdict: "recycle"; rss: number };
