// Row (a): a compiled grader loaded into this process's own context and called directly, the
// way the benchmark's native rows and the native-scaling floor (native-child.ts) both run it.

import vm from "node:vm";
import * as esbuild from "esbuild";
import { StringThread, type WireThread } from "../sdk/thread.ts";

export type Grade = (t: StringThread) => Promise<unknown>;

export function nativeGrader(code: string): Grade {
  const g = globalThis as Record<string, unknown>;
  g.StringThread = StringThread;
  g.__name = (f: unknown) => f;
  vm.runInThisContext(code);
  const fn = g.__gradebox_grade as Grade;
  delete g.__gradebox_grade;
  return fn;
}

/** Grades every thread once, in order; returns how many. */
export async function gradeAll(grade: Grade, threads: readonly WireThread[]): Promise<number> {
  for (const t of threads) await grade(new StringThread(t.turns, t.metadata));
  return threads.length;
}

/** StringThread (sdk/thread.ts) as a script that puts it on globalThis: for a grader run outside this process. */
export function stringThreadPrelude(): string {
  return esbuild.buildSync({
    stdin: {
      contents: 'import { StringThread } from "./sdk/thread.ts"; globalThis.StringThread = StringThread;',
      resolveDir: new URL("..", import.meta.url).pathname,
      loader: "ts",
    },
    bundle: true,
    write: false,
    format: "iife",
  }).outputFiles[0].text;
}
