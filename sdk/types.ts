// Wire types of the HTTP API, as the SDK returns them.

import type { Check } from "./errors.ts";
import type { StringThread, WireThread } from "./thread.ts";

export interface Grader {
  project: string;
  key: string;
  kind: "function";
  description: string;
  locked: boolean;
  /** signature warnings from validation (e.g. a missing StringThread annotation) */
  warnings: string[];
  sourceSha256: string;
  createdAt: string;
  updatedAt: string;
}
export interface GraderWithSource extends Grader {
  source: string;
}
export interface GraderPage {
  data: Grader[];
  nextCursor: string | null;
}

export type GradeErrorCode = "GRADER_ERROR" | "GRADER_TIMEOUT" | "GRADER_MEMORY_LIMIT" | "INVALID_SCORE" | "SANDBOX_CRASHED";
export type GradeResult = { score: number } | { error: { code: GradeErrorCode; message: string } };
export interface GradeResponse {
  score: number;
  durationMs: number;
}
export interface GradeBatchResponse {
  results: GradeResult[];
  durationMs: number;
}
export interface ValidateResponse {
  valid: true;
  warnings: string[];
  results?: GradeResult[];
}

export type ThreadInput = StringThread | WireThread;
/** Exactly one of fn, source or file. */
export type GraderSourceInput =
  | { fn: (thread: StringThread) => Promise<number>; source?: never; file?: never }
  | { source: string; fn?: never; file?: never }
  | { file: string; fn?: never; source?: never };
export type CreateFunctionParams = GraderSourceInput & { key: string; description?: string };
export type { Check, WireThread };
