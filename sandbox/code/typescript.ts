// TypeScript programs (and TypeScript test code, MultiPL-E's HumanEval-TS), and JavaScript that
// uses ES module syntax (`import … from`, `export`), run in the JavaScript runner once esbuild has
// made them a CommonJS script (types stripped, imports made `require` calls), in the worker (never
// the API's loop). esbuild parses and prints (a linear Go parser, in its own process): a
// completion's text cannot run there, and its size is the thread's, already bounded. No type
// checking: as `tsx` and Node's own type stripping run TypeScript, a type error is not a failed
// test, a syntax error is.

import * as esbuild from "esbuild";
import type { CodeRunner, RunRequest, RunResult } from "./run.ts";

/** ES module syntax at the start of a line: the script needs esbuild's CommonJS form */
const MODULE_SYNTAX = /^[ \t]*(import[\s{*"']|export\s)/m;

/** The source as a CommonJS script (types stripped, ES module syntax made require calls), or esbuild's first error as a SyntaxError message. */
export function toScript(source: string, file: string, loader: "ts" | "js"): { code: string } | { error: string } {
  const module = MODULE_SYNTAX.test(source);
  if (loader === "js" && !module) return { code: source };
  try {
    const out = esbuild.transformSync(source, { loader, target: "es2022", ...(module ? { format: "cjs" } : {}), logLevel: "silent" });
    return { code: out.code };
  } catch (error) {
    const first = (error as esbuild.TransformFailure).errors?.[0];
    if (!first) return { error: `SyntaxError: the ${loader === "ts" ? "TypeScript" : "JavaScript"} did not compile (${file})` };
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
