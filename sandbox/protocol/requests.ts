// What the host (the server's pool) sends a sandbox worker process, over Node IPC, and the
// settings it starts one with. The other direction is replies.ts. Types and constants only: both
// sides import this file, so it holds nothing that runs on either.

import type { Language } from "../validate/checks.ts";
import type { PackedBatch } from "./batch.ts";

export interface EngineLimits {
  /** per grading call, covering sync code, microtasks and promises that never settle */
  timeoutMs: number;
  memoryMb: number;
  /** warm isolates kept per worker */
  maxWarm: number;
  /** heap bytes (MB) all warm isolates of a worker may hold together */
  maxWarmHeapMb: number;
}

/** what a stored grader's `compiled` is (see GraderCode.language) */
export type GraderLanguage = Language | "code";

export interface GraderCode {
  /** identifies one stored grader version: isolates are never shared across graders */
  id: string;
  /** the project the grader belongs to (scheduling and blame are per project) */
  project: string;
  /**
   * what `compiled` is: bundled JavaScript (typescript, the default), the Python source as
   * checked, or ("code": a code-execution grader, issue 29) the CodeSpec's JSON, which the engine
   * grades with its runners (sandbox/code) and no grader isolate. "code" is internal to the
   * sandbox: the API's languages (sdk/errors.ts LANGUAGES) do not include it.
   */
  language?: GraderLanguage;
  compiled: string;
}

export interface SliceOptions {
  /** grade exactly one item (the pool is looking for the item that took a worker down) */
  single: boolean;
  /** stop starting calls after this long (the pool re-queues the rest, so other projects get a turn) */
  sliceMs: number;
  /** consecutive items stopped by a limit at the end of what was graded before this slice */
  limitsInARow: number;
  /** grade no item at or past this index (an item that took a worker down is not tried again) */
  end: number;
  /**
   * Date.now() by which the slice must have answered (the batch's deadline, less the time the
   * reply takes to reach the pool): no call starts after it, and each call's time limit is cut
   * to what is left of it. The slice then ends with `deadline` set (SliceResult).
   */
  deadlineAt?: number;
  /**
   * With `deadlineAt`: each call is also capped at a share of the time left (the engine's
   * CAP_SHARE, at least CAP_FLOOR_MS), and a unit that call was on when the cap stopped it is
   * set aside (SliceResult.deferred) while the slice goes on. The pool sends it on a batch's
   * first pass, not on the retries of what was set aside.
   */
  setAside?: boolean;
}

export type WorkerRequest =
  /**
   * grade batch `batchId` from item `from` on, for one slice (the reply may carry `retire` and
   * `fault`: see SliceResult). `batch` is absent when the worker holds it already: a worker keeps
   * the last batch it was sent, so a long batch's later slices do not send it again.
   */
  | { id: number; op: "grade"; grader: GraderCode; batch?: PackedBatch; batchId: number; from: number; options: SliceOptions }
  /** `mock`: grade the built-in sample thread (test_run without samples of the grader's own) */
  | { id: number; op: "validate"; source: string; mock: boolean; language?: Language }
  | { id: number; op: "stats" };

/** Not a request: handled when it arrives, answered by nothing. */
export type WorkerNotice = { op: "forget"; ids: string[] };

export const LIMITS_ENV = "GRADEBOX_SANDBOX_LIMITS";
/** "validate" for the validation worker, which loads the TypeScript compiler up front */
export const ROLE_ENV = "GRADEBOX_SANDBOX_ROLE";

/**
 * A call may run to 2× its time limit + ½ s before the worker's watchdog kills the process
 * (isolated-vm enforces the limit itself; this is the bound for what it cannot interrupt). The
 * pool sizes its own last-resort budgets from it.
 */
export const hardDeadline = (limitMs: number) => 2 * limitMs + 500;

/**
 * A call's time limit before a deadline: its own (`limitMs`), or what is left of the deadline
 * when that is less (`cut`: a timeout then is the deadline's, not the grader's), or what is left
 * of the call's cap (`capAt`, a Date.now() before the deadline) when that is less still
 * (`capped`: a timeout then sets the call's unit aside). At least 1 ms, which isolated-vm needs
 * to take a timeout at all.
 */
export function timeLeft(limitMs: number, deadlineAt: number | undefined, capAt?: number): { ms: number; cut: boolean; capped: boolean } {
  if (deadlineAt === undefined) return { ms: limitMs, cut: false, capped: false };
  const now = Date.now();
  const left = Math.max(1, Math.floor(deadlineAt - now));
  const cap = capAt === undefined ? Number.POSITIVE_INFINITY : Math.max(1, Math.floor(capAt - now));
  if (cap < left && cap < limitMs) return { ms: cap, cut: false, capped: true };
  return left < limitMs ? { ms: left, cut: true, capped: false } : { ms: limitMs, cut: false, capped: false };
}
