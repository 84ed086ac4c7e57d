// A Python grader's isolate (the ModuleLoader of worker/runtime.ts): the interpreter restored
// from the worker's template before the prelude, then the shim as the module, which loads the
// grader's source through the in-sandbox library. One isolate per grader, never one interpreter
// for two: module state and the in-memory file system would leak between them.

import type ivm from "isolated-vm";
import { MAX_MESSAGE } from "../protocol/replies.ts";
import { type EngineLimits, timeLeft } from "../protocol/requests.ts";
import type { CheckFailure } from "../validate/checks.ts";
import type { DecodedReply } from "../worker/reply-reader.ts";
import { DeadlineStop, GraderError, type ModuleLoader } from "../worker/runtime.ts";
import { loadPythonScripts } from "./bundle.ts";
import { type PythonTemplate, startInterpreter } from "./template.ts";

/**
 * The interpreter's JavaScript side (its V8 heap, the standard library's bytes and its file
 * system): isolated-vm's limit for a Python isolate is the grader's limit plus this. The grader's
 * own allocations are Python objects in wasm memory, capped by the binary's maximum.
 */
export const INTERPRETER_HEAP_MB = 96;
/**
 * The budget of the interpreter's own start (the restore, then the shim's first Python call): no
 * grader code runs in it, so it is not the grader's time limit; it only bounds a machine so
 * loaded that starting an interpreter takes this long.
 */
const START_MS = 30_000;
/** a library answer larger than this is not read */
const MAX_ANSWER = 16 * 1024;

/** The execution check's failure, as the library's load reports it. */
export interface LoadFailure {
  message: string;
  line?: number;
  column?: number;
}

/** A library answer that broke its shape: the runtime failed, not the grader. */
export class LibraryError extends Error {}

const position = (n: unknown) => (typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= 999_999 ? n : undefined);
const text = (s: unknown) => (typeof s === "string" ? s.slice(0, MAX_MESSAGE) : undefined);

function parseAnswer(answer: unknown): Record<string, unknown> {
  if (typeof answer !== "string" || answer.length > MAX_ANSWER)
    throw new LibraryError("the Python library's answer was not a bounded string");
  let value: unknown;
  try {
    value = JSON.parse(answer);
  } catch {
    throw new LibraryError("the Python library's answer was not JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new LibraryError("the Python library's answer was not an object");
  return value as Record<string, unknown>;
}

/** check's answer: the failure, or the warnings. */
export function readCheck(answer: unknown): CheckFailure | { warnings: string[] } {
  const value = parseAnswer(answer);
  if (value.ok === true) {
    const warnings = Array.isArray(value.warnings)
      ? value.warnings.flatMap((w) => (typeof w === "string" ? [w.slice(0, MAX_MESSAGE)] : []))
      : [];
    return { warnings: warnings.slice(0, 100) };
  }
  const f = value.failure as Record<string, unknown> | undefined;
  const check = f?.check;
  const message = text(f?.message);
  if ((check !== "syntax" && check !== "structure" && check !== "signature") || message === undefined) {
    throw new LibraryError("the Python library's check answered in an unknown form");
  }
  const line = position(f?.line);
  const column = line === undefined ? undefined : position(f?.column);
  return { check, message, ...(line === undefined ? {} : { line }), ...(column === undefined ? {} : { column }) };
}

/** load's answer: undefined when the grader is ready. */
export function readLoad(answer: unknown): LoadFailure | undefined {
  if (answer === "") return undefined;
  const value = parseAnswer(answer);
  const message = text(value.message);
  if (message === undefined) throw new LibraryError("the Python library's load answered in an unknown form");
  const line = position(value.line);
  const column = line === undefined ? undefined : position(value.column);
  return { message, ...(line === undefined ? {} : { line }), ...(column === undefined ? {} : { column }) };
}

/**
 * Runs trusted start-up work within `timeoutMs` (START_MS, or less when a batch's deadline
 * comes first: `cut`); its time running out is the machine's, said so, not the grader's time
 * limit, or the deadline's (DeadlineStop: the items abstain).
 */
function startedInTime(work: (timeoutMs: number) => void, deadlineAt: number | undefined): void {
  const left = timeLeft(START_MS, deadlineAt);
  try {
    work(left.ms);
  } catch (error) {
    if (error instanceof Error && error.message === "Script execution timed out.") {
      if (left.cut) throw new DeadlineStop();
      throw new GraderError(
        "GRADER_ERROR",
        `the Python interpreter did not start within ${START_MS / 1000} s: the sandbox worker is overloaded; try again`,
      );
    }
    throw error;
  }
}

export class PythonLoader implements ModuleLoader {
  readonly mapsPositions = false;
  private wasmBytes: ivm.Reference | undefined;
  private check: ivm.Reference | undefined;
  private load_: ivm.Reference | undefined;
  private unfit: ivm.Reference | undefined;
  private grade: ivm.Reference | undefined;
  private gradeGroup: ivm.Reference | undefined;
  private shape: ivm.Reference | undefined;
  /** where the execution check failed, when the module did not load */
  loadFailure: LoadFailure | undefined;
  /** the source check's answer, when asked for (validation) */
  checked: CheckFailure | { warnings: string[] } | undefined;

  constructor(
    private readonly template: PythonTemplate,
    /** validation: run the library's check first, and load only a source that passes it */
    private readonly checkFirst = false,
    /** a batch's deadline (Date.now()): the interpreter's start is cut to it */
    private readonly deadlineAt?: number,
  ) {}

  isolateMb(limits: EngineLimits): number {
    return limits.memoryMb + INTERPRETER_HEAP_MB;
  }

  prepare(isolate: ivm.Isolate, context: ivm.Context): void {
    const t = this.template;
    startedInTime(
      (timeoutMs) =>
        startInterpreter(isolate, context, {
          module: t.module,
          stdlib: t.stdlib,
          lock: t.lock,
          files: t.files,
          snapshot: t.snapshot,
          bootCache: t.bootCache,
          timeoutMs,
        }),
      this.deadlineAt,
    );
  }

  /** The shim, after the prelude: the interpreter's first Python call (its slowest), then the library's functions taken. */
  start(isolate: ivm.Isolate, context: ivm.Context): void {
    startedInTime(
      (timeoutMs) =>
        isolate.compileScriptSync(loadPythonScripts().shim, { filename: "gradebox:python-shim" }).runSync(context, { timeout: timeoutMs }),
      this.deadlineAt,
    );
    const api = context.global.getSync("__gradebox_py", { reference: true });
    this.load_ = api.getSync("load", { reference: true });
    this.check = api.getSync("check", { reference: true });
    this.wasmBytes = api.getSync("wasmBytes", { reference: true });
    this.unfit = api.getSync("unfit", { reference: true });
    this.shape = api.getSync("shape", { reference: true });
    context.global.deleteSync("__gradebox_py");
    this.grade = context.global.getSync("__gradebox_grade", { reference: true });
    this.gradeGroup = context.global.getSync("__gradebox_grade_group", { reference: true });
  }

  load(_isolate: ivm.Isolate, context: ivm.Context, source: string, limits: EngineLimits): void {
    const load = this.load_;
    const grade = this.grade;
    const gradeGroup = this.gradeGroup;
    if (!load || !grade || !gradeGroup || !this.check || !this.shape) throw new LibraryError("the Python runtime did not start");
    if (this.checkFirst) {
      this.checked = readCheck(this.check.applySync(undefined, [source], { timeout: limits.timeoutMs }));
      if ("check" in this.checked) {
        throw new GraderError("GRADER_ERROR", this.checked.message);
      }
    }
    this.loadFailure = readLoad(load.applySync(undefined, [source], { timeout: limits.timeoutMs }));
    if (this.loadFailure) throw new GraderError("GRADER_ERROR", this.loadFailure.message);
    // grader code ran: the functions the prelude installs are the shim's, whatever the module set,
    // each only when the module defines its Python counterpart
    const shape = this.shape.applySync(undefined, [], { timeout: limits.timeoutMs });
    if (shape !== "thread" && shape !== "group" && shape !== "both")
      throw new LibraryError("the Python library's shape answered in an unknown form");
    if (shape === "group") context.global.deleteSync("__gradebox_grade");
    else context.global.setSync("__gradebox_grade", grade.derefInto());
    if (shape === "thread") context.global.deleteSync("__gradebox_grade_group");
    else context.global.setSync("__gradebox_grade_group", gradeGroup.derefInto());
  }

  extraBytes(): number {
    let bytes = this.template.snapshotBytes;
    try {
      const reported = this.wasmBytes?.applySync(undefined, [], { timeout: 1000 });
      if (typeof reported === "number" && Number.isFinite(reported)) bytes = Math.max(bytes, reported);
    } catch {
      // a disposed isolate: its last figure stands
    }
    return Math.min(bytes, this.template.maxWasmBytes);
  }

  /** After a reply with an error: did an item leave the interpreter unfit (the shim says so: out of memory, the C stack, an escape)? */
  spent(reply: DecodedReply): boolean {
    if (!reply.outcomes.some((o) => "error" in o)) return false;
    try {
      return this.unfit?.applySync(undefined, [], { timeout: 1000 }) !== false;
    } catch {
      return true;
    }
  }
}
