// Checking a function grader's source before anything stores it: the size and nesting bounds
// the server checks itself, then the five checks on the validation worker, then the samples
// (test_run grades them instead of the built-in thread, and each must score its `expected`).
// Also the regression report of an update: which samples score differently under the candidate.

import type { z } from "zod";
import { type Sandbox, SandboxCrashError } from "../../sandbox/host/sandbox.ts";
import type { ValidationResult } from "../../sandbox/protocol/replies.ts";
import type { CheckFailure, GradeOutcome, Language } from "../../sandbox/validate/checks.ts";
import { checkNesting } from "../../sandbox/validate/source-bounds.ts";
import type { WireThread } from "../../sdk/thread.ts";
import { MAX_SOURCE_BYTES } from "../config.ts";
import { AppError } from "../errors.ts";
import type { UpdateReport } from "../schemas.ts";
import { type GraderRow, sandboxId } from "../store/graders.ts";
import type { Sample } from "../store/versions.ts";
import type { ValidationLimiter } from "../validation-limit.ts";

export type Validated = Extract<ValidationResult, { ok: true }>;

/** A source to check, in its language. */
export interface SourceCode {
  source: string;
  language: Language;
}

/** How the samples' scores move from the current version to a candidate: the ones that changed. */
export type SampleReport = z.infer<typeof UpdateReport>;

function checkSourceSize(source: string): void {
  const bytes = Buffer.byteLength(source, "utf8");
  if (bytes > MAX_SOURCE_BYTES) {
    throw new AppError("SOURCE_TOO_LARGE", `grader source is ${bytes} bytes of UTF-8; the limit is ${MAX_SOURCE_BYTES} (64 KiB)`, {
      limit: MAX_SOURCE_BYTES,
      size: bytes,
    });
  }
}

/** A sample that errors, or scores other than its `expected`, fails test_run with its index. */
function checkSamples(samples: Sample[], results: GradeOutcome[]): void {
  const failed = (message: string, extra: Record<string, unknown>) => {
    throw new AppError("VALIDATION_FAILED", `test_run check failed: ${message}`, { check: "test_run", message, ...extra });
  };
  for (const [index, sample] of samples.entries()) {
    const outcome = results[index];
    if (!outcome || "error" in outcome) {
      const error = outcome && "error" in outcome ? `${outcome.error.code}: ${outcome.error.message}` : "no result";
      failed(`grade failed on sample ${index} with ${error}`, { index });
    } else if ("abstained" in outcome) {
      // an abstention is a fine answer to a sample that expects no particular score
      if (sample.expected !== undefined) {
        failed(`sample ${index} should score ${sample.expected} but the grader abstained (${outcome.abstained.reason})`, {
          index,
          expected: sample.expected,
        });
      }
    } else if (sample.expected !== undefined && Math.abs(outcome.score - sample.expected) > 1e-9) {
      failed(`sample ${index} should score ${sample.expected} but scored ${outcome.score}`, {
        index,
        expected: sample.expected,
        actual: outcome.score,
      });
    }
  }
}

export class Validation {
  private readonly sandbox: Pick<Sandbox, "validate" | "gradeBatch">;
  /** validations that took their worker down, per project */
  private readonly limiter: ValidationLimiter;

  constructor(sandbox: Pick<Sandbox, "validate" | "gradeBatch">, limiter: ValidationLimiter) {
    this.sandbox = sandbox;
    this.limiter = limiter;
  }

  /**
   * Runs the five checks of the source's language; throws VALIDATION_FAILED with the failing check.
   * With samples, test_run grades them instead of the built-in sample thread, and each must pass
   * (checkSamples); with `threads` instead, test_run is grading them: each thread's outcome,
   * errors included, is in the results, as a grade-batch's would be.
   */
  async validate(project: string, { source, language }: SourceCode, threads?: WireThread[], samples?: Sample[]): Promise<Validated> {
    this.limiter.check(project);
    checkSourceSize(source);
    // before any parser: esbuild's time grows with the square (cube, for functions) of the
    // nesting. The bound is esbuild's and TypeScript's: a Python source is bounded by the checks
    // of its own runtime, in the sandbox
    const tooDeep = language === "typescript" ? checkNesting(source) : undefined;
    if (tooDeep) {
      const { check, message, line, column } = tooDeep;
      throw new AppError("VALIDATION_FAILED", `${check} check failed: ${message}`, { check, message, line, column });
    }
    const withSamples = samples !== undefined && samples.length > 0;
    const graded = withSamples ? samples.map((x) => x.thread) : threads;
    // test_run grades the caller's own threads or samples when there are any: the built-in
    // sample thread's empty metadata would fail a grader that needs the metadata they carry
    const mock = graded === undefined || graded.length === 0;
    const result = await this.sandbox.validate(project, source, graded, { mock, language }).catch((error: unknown) => {
      if (!(error instanceof SandboxCrashError)) throw error;
      // the module body or the test run took its worker down (V8 aborts on some OOM paths)
      const failure: CheckFailure = { check: "execution", message: `${error.code}: ${error.message}` };
      return { ok: false as const, failure };
    });
    if (!result.ok) {
      const { check, message, line, column, costly } = result.failure;
      if (costly) this.limiter.record(project);
      throw new AppError("VALIDATION_FAILED", `${check} check failed: ${message}`, { check, message, line, column });
    }
    if (withSamples) checkSamples(samples, result.results ?? []);
    return result;
  }

  /** Grades the samples with the current version and compares with the candidate's results (`after`, in order). */
  async report(current: GraderRow, samples: Sample[], after: GradeOutcome[] | undefined): Promise<SampleReport> {
    const before = samples.length
      ? await this.sandbox.gradeBatch(
          { id: sandboxId(current.id, current.version), project: current.project, language: current.language, compiled: current.compiled },
          samples.map((x) => x.thread),
        )
      : [];
    const brief = (o: GradeOutcome | undefined) =>
      o === undefined ? "none" : "error" in o ? o.error.code : "abstained" in o ? "abstained" : o.score;
    const scores = samples.map((_, index) => ({ index, before: brief(before[index]), after: brief(after?.[index]) }));
    return { samples: samples.length, changed: scores.filter((c) => c.before !== c.after), scores };
  }
}
