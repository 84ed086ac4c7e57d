// TypeScript programs (and TypeScript test code, MultiPL-E's HumanEval-TS), and JavaScript that
// uses ES module syntax (`import … from`, `export`), run in the JavaScript runner once esbuild has
// made them a CommonJS script (types stripped, imports made `require` calls), in the worker (never
// the API's loop). esbuild runs in a process of its own per compile (esbuild-process.ts), killed
// past its deadline (the run's cpuMs, within COMPILE_FLOOR_MS–COMPILE_CAP_MS) or COMPILE_MEMORY_MB:
// a source that cannot be compiled within them is a syntax_error, as one esbuild refuses is.
// Cheaper bounds come first, with clearer messages: the grader validator's nesting bound
// (checkNesting: esbuild's time grows with the cube of function nesting) and MAX_SOURCE. No type
// checking: as `tsx` and Node's own type stripping run TypeScript, a type error is not a failed
// test, a syntax error is.

import { checkNesting } from "../validate/source-bounds.ts";
import { COMPILE_MEMORY_MB, compile } from "./esbuild-process.ts";
import type { CodeRunner, RunRequest, RunResult } from "./run.ts";

/** characters esbuild is given at most */
export const MAX_SOURCE = 128 * 1024;
/** a compile may take the run's cpuMs, but at least this (a process start on a loaded machine; a valid 125 KB program compiles in 0.1 s) … */
export const COMPILE_FLOOR_MS = 500;
/** … and at most this, as the validator's esbuild check (PARSE_DEADLINE_MS): with the floor, never more than cpuMs + 500 ms, inside the watchdog's budget for the test */
export const COMPILE_CAP_MS = 2000;

export const compileDeadline = (cpuMs: number) => Math.min(Math.max(cpuMs, COMPILE_FLOOR_MS), COMPILE_CAP_MS);

/** ES module syntax at the start of a line: the script needs esbuild's CommonJS form */
const MODULE_SYNTAX = /^[ \t]*(import[\s{*"']|export\s)/m;

/** The source as a CommonJS script (types stripped, ES module syntax made require calls), or esbuild's first error (or the bound it reached) as a SyntaxError message. */
export function toScript(
  source: string,
  file: string,
  loader: "ts" | "js",
  deadlineMs = COMPILE_CAP_MS,
): { code: string } | { error: string } {
  const module = MODULE_SYNTAX.test(source);
  if (loader === "js" && !module) return { code: source };
  const language = loader === "ts" ? "TypeScript" : "JavaScript";
  if (source.length > MAX_SOURCE)
    return { error: `SyntaxError: the ${language} ${file} is ${source.length} characters; at most ${MAX_SOURCE} are compiled` };
  const nesting = checkNesting(source);
  if (nesting) return { error: `SyntaxError: ${nesting.message} (${file})` };
  const out = compile(source, { loader, cjs: module, deadlineMs });
  if ("code" in out) return out;
  if ("over" in out) {
    const bound = out.over === "time" ? `took longer than ${deadlineMs} ms` : `needed more than ${COMPILE_MEMORY_MB} MB`;
    return {
      error: `SyntaxError: the ${language} ${file} ${bound} to compile; simplify it (long chains of operators, \`<\`, \`.\` or calls, or thousands of labels or declarations, are the usual cause)`,
    };
  }
  const where = out.line === undefined ? "" : ` (${file} line ${out.line}, column ${(out.column ?? 0) + 1})`;
  return { error: `SyntaxError: ${out.error}${where}` };
}

/** The JavaScript runner, fed the program and tests as scripts (toScript); one that does not compile is a syntax_error. */
export class ScriptRunner implements CodeRunner {
  /** the last programs and tests made scripts, the most recently used last (an item's tests all run the same program) */
  private last: { source: string; file: string; deadlineMs: number; out: { code: string } | { error: string } }[] = [];

  constructor(
    private readonly js: () => CodeRunner,
    private readonly loader: "ts" | "js",
  ) {}

  private script(source: string, file: string, deadlineMs: number) {
    const at = this.last.findIndex((e) => e.source === source && e.file === file && e.deadlineMs === deadlineMs);
    // a hit moves last, so a program stays while its item's tests (each its own source) come and go
    const entry = at >= 0 ? this.last.splice(at, 1)[0] : { source, file, deadlineMs, out: toScript(source, file, this.loader, deadlineMs) };
    this.last = [...this.last.slice(-3), entry];
    return entry.out;
  }

  run(request: RunRequest): RunResult {
    const deadlineMs = compileDeadline(request.limits.cpuMs);
    const program = this.script(request.program, "program", deadlineMs);
    const after = request.after === undefined || "error" in program ? undefined : this.script(request.after, "tests", deadlineMs);
    const failed = "error" in program ? program.error : after && "error" in after ? after.error : undefined;
    if (failed !== undefined)
      return { status: "syntax_error", stdout: "", stderr: "", exitCode: 1, completed: false, cpuMs: 0, message: failed };
    return this.js().run({
      ...request,
      language: "javascript",
      program: (program as { code: string }).code,
      ...(after ? { after: (after as { code: string }).code } : {}),
    });
  }

  dispose(): void {
    this.last = [];
  }
}
