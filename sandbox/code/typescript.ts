// TypeScript programs (and TypeScript test code, MultiPL-E's HumanEval-TS) run in the JavaScript
// runner once esbuild has stripped their types, in the worker (never the API's loop). esbuild
// parses and prints (a linear Go parser, in its own process): a completion's text cannot run there,
// and its size is the thread's, already bounded. No type checking: as `tsx` and Node's own type
// stripping run TypeScript, a type error is not a failed test, a syntax error is.

import * as esbuild from "esbuild";
import type { CodeRunner, RunRequest, RunResult } from "./run.ts";

/** Types stripped from TypeScript source, or esbuild's first error as a SyntaxError message. */
export function stripTypes(source: string, file: string): { code: string } | { error: string } {
  try {
    const out = esbuild.transformSync(source, { loader: "ts", target: "es2022", format: undefined, logLevel: "silent" });
    return { code: out.code };
  } catch (error) {
    const first = (error as esbuild.TransformFailure).errors?.[0];
    if (!first) return { error: `SyntaxError: the TypeScript did not compile (${file})` };
    const where = first.location ? ` (${file} line ${first.location.line}, column ${first.location.column + 1})` : "";
    return { error: `SyntaxError: ${first.text}${where}` };
  }
}

/** The JavaScript runner, fed TypeScript with its types stripped; a program that does not compile is a syntax_error. */
export class TypeScriptRunner implements CodeRunner {
  /** the last program and tests stripped (an item's tests all run the same program) */
  private last: { source: string; file: string; out: { code: string } | { error: string } }[] = [];

  constructor(private readonly js: () => CodeRunner) {}

  private strip(source: string, file: string) {
    const hit = this.last.find((e) => e.source === source && e.file === file);
    if (hit) return hit.out;
    const out = stripTypes(source, file);
    this.last = [...this.last.slice(-3), { source, file, out }];
    return out;
  }

  run(request: RunRequest): RunResult {
    const program = this.strip(request.program, "program");
    const after = request.after === undefined ? undefined : this.strip(request.after, "tests");
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
