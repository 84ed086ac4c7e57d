// Messages between the pool (server process) and a sandbox worker process, over Node IPC.

import type { PackedBatch } from "./batch.ts";
import type { GradeOutcome } from "./checks.ts";
import type { EngineLimits, GraderCode, ValidationResult } from "./engine.ts";

export type WorkerRequest =
  | { id: number; op: "grade"; grader: GraderCode; batch: PackedBatch }
  | { id: number; op: "validate"; source: string; threads?: PackedBatch }
  | { id: number; op: "stats" };

export type WorkerReply =
  | { id: number; op: "grade"; results: GradeOutcome[] }
  | { id: number; op: "validate"; result: ValidationResult }
  | { id: number; op: "stats"; warm: number; evictions: number; rss: number }
  | { id: number; op: "failed"; message: string };

export type WorkerHello = { op: "ready"; pid: number };

export const LIMITS_ENV = "GRADEBOX_SANDBOX_LIMITS";
export type { EngineLimits };
