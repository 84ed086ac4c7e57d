// The engine: owns isolates inside one sandbox worker process. One isolate per grader, kept
// warm in an LRU map, rebuilt after any disposal. Only strings and numbers cross into an
// isolate (a batch crosses packed, see batch.ts); the three References the host keeps point
// at trusted prelude functions.

import ivm from "isolated-vm";
import { analyze } from "./analyze.ts";
import { type PackedBatch, packBatch } from "./batch.ts";
import { type CheckFailure, GRADE_ERROR_CODES, type GradeErrorCode, type GradeOutcome, MOCK_THREAD } from "./checks.ts";
import { bundle, bundlePrelude, checkSyntax } from "./compile.ts";

export interface EngineLimits {
  /** per grading call, covering sync code, microtasks and promises that never settle */
  timeoutMs: number;
  memoryMb: number;
  /** warm isolates kept per worker */
  maxWarm: number;
}

export interface GraderCode {
  /** identifies one stored grader version: isolates are never shared across graders */
  id: string;
  compiled: string;
}

export type ValidationResult =
  | { ok: true; compiled: string; warnings: string[]; results?: GradeOutcome[] }
  | { ok: false; failure: CheckFailure };

class GraderError extends Error {
  constructor(
    readonly code: GradeErrorCode,
    message: string,
  ) {
    super(message);
  }
}

interface CallState {
  results: Array<number | { code: string; message: string }>;
  current: number;
  finished: boolean;
}

const preludeSource = bundlePrelude();
const MOCK_BATCH = packBatch([MOCK_THREAD]);

/** A live isolate with a grader loaded into it. */
class Runtime {
  readonly isolate: ivm.Isolate;
  private readonly context: ivm.Context;
  private readonly fns: { install: ivm.Reference; run: ivm.Reference; collect: ivm.Reference };

  /** Throws GraderError(GRADER_*) when the module body fails, times out or runs out of memory. */
  constructor(
    code: string,
    private readonly limits: EngineLimits,
  ) {
    this.isolate = new ivm.Isolate({ memoryLimit: limits.memoryMb });
    try {
      this.context = this.isolate.createContextSync();
      this.isolate.compileScriptSync(preludeSource, { filename: "gradebox:prelude" }).runSync(this.context);
      const host = this.context.global.getSync("__gradebox_host", { reference: true });
      this.fns = {
        install: host.getSync("install", { reference: true }),
        run: host.getSync("run", { reference: true }),
        collect: host.getSync("collect", { reference: true }),
      };
      this.context.global.deleteSync("__gradebox_host");
      this.guard(() => {
        this.isolate.compileScriptSync(code, { filename: "grader.js" }).runSync(this.context, { timeout: limits.timeoutMs });
        this.fns.install.applySync(undefined, [], { timeout: limits.timeoutMs });
      });
    } catch (error) {
      this.dispose();
      throw error;
    }
  }

  /** Maps isolated-vm's failures to grader error codes. */
  guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (this.isolate.isDisposed) {
        throw new GraderError("GRADER_MEMORY_LIMIT", `exceeded the ${this.limits.memoryMb} MB memory limit`);
      }
      // isolated-vm's own message; a grader's module that throws "timed out" is not a timeout
      if (error instanceof Error && error.message === "Script execution timed out.") {
        throw new GraderError("GRADER_TIMEOUT", `exceeded the ${this.limits.timeoutMs} ms time limit`);
      }
      throw new GraderError("GRADER_ERROR", describeError(error).slice(0, 2000));
    }
  }

  /**
   * One crossing in, one out: grades from `from` on, until the prelude's time slice ends.
   * Without a batch, the isolate grades the one it loaded last.
   */
  call(batch: PackedBatch | undefined, from: number, maxItems: number): CallState {
    return this.guard(() => {
      const sliceMs = maxItems === 1 ? 0 : this.limits.timeoutMs / 2;
      const args = [batch?.head ?? "", batch?.text ?? "", from, maxItems, sliceMs];
      this.fns.run.applySync(undefined, args, { timeout: this.limits.timeoutMs });
      return JSON.parse(this.fns.collect.applySync(undefined, [], { timeout: this.limits.timeoutMs }) as string) as CallState;
    });
  }

  dispose(): void {
    if (!this.isolate.isDisposed) this.isolate.dispose();
  }
}

const isPlainObject = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

/** The prelude already checked these; the host checks again, trusting nothing from an isolate. */
function checkedOutcome(value: unknown): GradeOutcome {
  if (typeof value === "number" && Number.isFinite(value)) return { score: value };
  if (isPlainObject(value) && typeof value.score === "number" && Number.isFinite(value.score)) {
    const { score, reason, metadata, subscores } = value;
    const shapeOk =
      (reason === undefined || typeof reason === "string") &&
      (metadata === undefined || isPlainObject(metadata)) &&
      (subscores === undefined || Array.isArray(subscores));
    if (shapeOk) {
      return {
        score,
        ...(reason === undefined ? {} : { reason: reason as string }),
        ...(metadata === undefined ? {} : { metadata: metadata as Record<string, unknown> }),
        ...(subscores === undefined ? {} : { subscores: subscores as unknown[] }),
      };
    }
  }
  const v = value as { code?: unknown; message?: unknown } | null;
  if (v && typeof v === "object" && GRADE_ERROR_CODES.includes(v.code as GradeErrorCode) && typeof v.message === "string") {
    return { error: { code: v.code as GradeErrorCode, message: v.message.slice(0, 2000) } };
  }
  return { error: { code: "INVALID_SCORE", message: "grade produced a result the sandbox could not read" } };
}

export class Engine {
  private readonly warm = new Map<string, Runtime>();
  /** warm isolates dropped to keep the cache within maxWarm */
  evictions = 0;
  constructor(readonly limits: EngineLimits) {}

  get warmCount(): number {
    return this.warm.size;
  }

  private runtime(grader: GraderCode): Runtime {
    const hit = this.warm.get(grader.id);
    if (hit && !hit.isolate.isDisposed) {
      this.warm.delete(grader.id); // re-insert: Map order is the LRU order
      this.warm.set(grader.id, hit);
      return hit;
    }
    this.warm.delete(grader.id);
    const runtime = new Runtime(grader.compiled, this.limits);
    this.warm.set(grader.id, runtime);
    while (this.warm.size > this.limits.maxWarm) {
      const [oldest, rt] = this.warm.entries().next().value as [string, Runtime];
      rt.dispose();
      this.warm.delete(oldest);
      this.evictions++;
    }
    return runtime;
  }

  private evict(id: string): void {
    this.warm.get(id)?.dispose();
    this.warm.delete(id);
  }

  /**
   * Grades a packed batch of threads with one grader. Fast path: the whole batch in one
   * crossing. When a call dies (timeout, out of memory) the items since the last good
   * result are re-run one per call, so the error lands on the item that caused it and every
   * other item still gets its own score.
   */
  gradeBatch(grader: GraderCode, batch: PackedBatch): GradeOutcome[] {
    return this.gradeWith(
      () => this.runtime(grader),
      () => this.evict(grader.id),
      batch,
    );
  }

  private gradeWith(acquire: () => Runtime, discard: () => void, batch: PackedBatch): GradeOutcome[] {
    const count = batch.count;
    const results: GradeOutcome[] = new Array(count);
    let i = 0;
    let single = false;
    let loaded: Runtime | undefined;
    while (i < count) {
      let rt: Runtime;
      try {
        rt = acquire();
      } catch (error) {
        // the module body itself fails: every remaining item gets that error
        const outcome = toOutcome(error);
        for (; i < count; i++) results[i] = outcome;
        break;
      }
      const alone = single || count - i === 1;
      try {
        const state = rt.call(loaded === rt ? undefined : batch, i, alone ? 1 : count - i);
        loaded = rt;
        state.results.forEach((value, k) => {
          results[i + k] = checkedOutcome(value);
        });
        let advanced = state.results.length;
        if (!state.finished && state.current >= 0 && results[i + state.current] === undefined) {
          // microtasks drained with the item's promise still pending: it can never settle
          results[i + state.current] = {
            error: { code: "GRADER_TIMEOUT", message: "grade returned a promise that never settles" },
          };
          advanced = state.current + 1;
        }
        i += advanced;
        single = false;
      } catch (error) {
        discard();
        loaded = undefined;
        if (alone) {
          results[i] = toOutcome(error);
          i++;
        } else {
          single = true; // find the culprit: retry from i one item per call
        }
      }
    }
    return results;
  }

  /** The five checks (size is the server's) and, when threads are given, grading them too. */
  async validate(source: string, threads?: PackedBatch): Promise<ValidationResult> {
    const syntax = await checkSyntax(source);
    if (syntax) return { ok: false, failure: syntax };
    const analysis = analyze(source);
    if ("check" in analysis) return { ok: false, failure: analysis };
    const built = await bundle(analysis.code);
    if ("check" in built) return { ok: false, failure: built };

    let rt: Runtime;
    try {
      rt = new Runtime(built.compiled, this.limits);
    } catch (error) {
      return { ok: false, failure: { check: "execution", message: `the module failed to load: ${describeError(error)}` } };
    }
    let current = rt;
    const acquire = () => {
      if (current.isolate.isDisposed) current = new Runtime(built.compiled, this.limits);
      return current;
    };
    const discard = () => current.dispose();
    try {
      const [mock] = this.gradeWith(acquire, discard, MOCK_BATCH);
      if ("error" in mock) {
        return {
          ok: false,
          failure: { check: "test_run", message: `grade(mock thread) failed with ${mock.error.code}: ${mock.error.message}` },
        };
      }
      const results = threads === undefined ? undefined : this.gradeWith(acquire, discard, threads);
      return { ok: true, compiled: built.compiled, warnings: analysis.warnings, ...(results ? { results } : {}) };
    } finally {
      current.dispose();
    }
  }

  dispose(): void {
    for (const rt of this.warm.values()) rt.dispose();
    this.warm.clear();
  }
}

function toOutcome(error: unknown): GradeOutcome {
  if (error instanceof GraderError) return { error: { code: error.code, message: error.message } };
  return { error: { code: "GRADER_ERROR", message: describeError(error) } };
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error instanceof GraderError ? error.message : `${error.name}: ${error.message}`;
}
