// Messages between the pool (server process) and a sandbox worker process, over Node IPC, and
// the verdict lines the worker's watchdog writes to its own pipe (watchdog.ts).

import type { EngineLimits, GraderCode, SliceOptions, SliceResult, ValidationResult } from "../worker/engine.ts";
import type { PackedBatch } from "./batch.ts";

export type WorkerRequest =
  /** grade `batch` from item `from` on, for one slice (the reply may carry `retire` and `fault`: see SliceResult) */
  | { id: number; op: "grade"; grader: GraderCode; batch: PackedBatch; from: number; options: SliceOptions }
  /** `mock`: grade the built-in sample thread (test_run without samples of the grader's own) */
  | { id: number; op: "validate"; source: string; mock: boolean }
  | { id: number; op: "stats" };

/** Not a request: handled when it arrives, answered by nothing. */
export type WorkerNotice = { op: "forget"; ids: string[] };

export type WorkerReply =
  | ({ id: number; op: "grade" } & SliceResult)
  /** `retire`: the worker should be replaced (its esbuild is stuck on a source past its deadline, or it holds too much memory) */
  | { id: number; op: "validate"; result: ValidationResult; retire?: boolean }
  | { id: number; op: "stats"; warm: number; warmHeapBytes: number; evictions: number; isolateCpuUs: number; rss: number }
  | { id: number; op: "failed"; message: string };

export type WorkerHello = { op: "ready"; pid: number };

export const LIMITS_ENV = "GRADEBOX_SANDBOX_LIMITS";
/** "validate" for the validation worker, which loads the TypeScript compiler up front */
export const ROLE_ENV = "GRADEBOX_SANDBOX_ROLE";
export type { EngineLimits };
