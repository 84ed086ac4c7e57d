// TypeScript programs (and TypeScript test code, MultiPL-E's HumanEval-TS), and JavaScript that
// uses ES module syntax (`import … from`, `export`), run in the JavaScript runner once esbuild has
// made them a CommonJS script (types stripped, imports made `require` calls), in the worker (never
// the API's loop). esbuild runs in its own process, outside any run's time limit, with nothing to
// stop it: its time grows with the cube of function nesting (2 000 nested arrows, 6 KB, held it
// 18 s; 60 000 ran on for good) and its parser recurses once per level of any chain (300 000 `!`,
// 300 KB, overflowed its stack and stopped its service for every later TypeScript run of the
// worker, all projects'). So a source reaches it only within the grader validator's nesting bound
// (checkNesting) and MAX_SOURCE, and a service that stopped anyway is started again, the run
// abstaining. No type checking: as `tsx` and Node's own type stripping run TypeScript, a type
// error is not a failed test, a syntax error is.

import * as esbuild from "esbuild";
import { checkNesting } from "../validate/source-bounds.ts";
import { type CodeRunner, RunnerFailure, type RunRequest, type RunResult } from "./run.ts";

/** characters esbuild is given at most: a chain of 150 000 `!` still parses, in under 1 s */
export const MAX_SOURCE = 128 * 1024;

/** ES module syntax at the start of a line: the script needs esbuild's CommonJS form */
const MODULE_SYNTAX = /^[ \t]*(import[\s{*"']|export\s)/m;

/** The source as a CommonJS script (types stripped, ES module syntax made require calls), or esbuild's first error as a SyntaxError message. */
export function toScript(source: string, file: string, loader: "ts" | "js"): { code: string } | { error: string } {
  const module = MODULE_SYNTAX.test(source);
  if (loader === "js" && !module) return { code: source };
  const language = loader === "ts" ? "TypeScript" : "JavaScript";
  if (source.length > MAX_SOURCE)
    return { error: `SyntaxError: the ${language} ${file} is ${source.length} characters; at most ${MAX_SOURCE} are compiled` };
  const nesting = checkNesting(source);
  if (nesting) return { error: `SyntaxError: ${nesting.message} (${file})` };
  try {
    const out = esbuild.transformSync(source, { loader, target: "es2022", ...(module ? { format: "cjs" } : {}), logLevel: "silent" });
    return { code: out.code };
  } catch (error) {
    const first = (error as esbuild.TransformFailure).errors?.[0];
    if (!first) {
      // esbuild's service stopped (no errors of the source's): the next call starts a new one
      void esbuild.stop();
      throw new RunnerFailure(`the ${language} compiler failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 2000));
    }
    const where = first.location ? ` (${file} line ${first.location.line}, column ${first.location.column + 1})` : "";
    return { error: `SyntaxError: ${first.text}${where}` };
  }
}

/** The JavaScript runner, fed the program and tests as scripts (toScript); one that does not compile is a syntax_error. */
export class ScriptRunner implements CodeRunner {
  /** the last programs and tests made scripts (an item's tests all run the same program) */
  private last: { source: string; file: string; out: { code: string } | { error: string } }[] = [];

  constructor(
    private readonly js: () => CodeRunner,
    private readonly loader: "ts" | "js",
  ) {}

  private script(source: string, file: string) {
    const hit = this.last.find((e) => e.source === source && e.file === file);
    if (hit) return hit.out;
    const out = toScript(source, file, this.loader);
    this.last = [...this.last.slice(-3), { source, file, out }];
    return out;
  }

  run(request: RunRequest): RunResult {
    const program = this.script(request.program, "program");
    const after = request.after === undefined ? undefined : this.script(request.after, "tests");
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
