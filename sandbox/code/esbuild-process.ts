// One esbuild process per compile of a code grader's TypeScript (or ES module) program or tests
// (typescript.ts), bounded in time, memory and output. esbuild's JavaScript API could not be
// bounded: its service answers every error of a source with the whole text of the error's line
// (logLimit caps only what it prints), so `const f = --…-- 1` (30 000 `-`, 30 KB) came back as
// 15 000 errors, 450 MB of JSON, which grew the worker 2.5 GB in 8–38 s and cost it; and
// transformSync has no timeout, while flat sources such as `a<a<…` in TypeScript or thousands of
// `let a;` parse for minutes. Its command line prints only the first error (--log-limit=1); its
// process is killed at the deadline, and RLIMIT_DATA (Go's heap and goroutine stacks are data
// mappings) stops it at COMPILE_MEMORY_MB, where sources that nest deep without a bracket
// (60 000 `a=`, `a.b`, `!` or labels) otherwise take 0.1–0.9 GB. A compile costs 5–15 ms of
// process start over the service's 1.5 ms, once per program (ScriptRunner keeps it).

import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { RunnerFailure } from "./run.ts";

/** the most an esbuild process may hold: 6× what a valid 125 KB TypeScript program takes (~21 MB); 30 000 `-` take 122 MB */
export const COMPILE_MEMORY_MB = 256;
/** bytes of output read: the compiled form of a 128 K-character source is under 1 MB (non-ASCII escaped) */
const MAX_OUTPUT = 16 * 1024 * 1024;

/** a compile: the script, or the first error (line: 1-based, column: 0-based, as esbuild counts them), or a bound reached */
export type Compiled = { code: string } | { error: string; line?: number; column?: number } | { over: "time" | "memory" };

let binary: string | undefined;

/** esbuild's native binary, found as its JavaScript API finds it: ESBUILD_BINARY_PATH, its platform's package, else its bin (which its install makes the binary) */
function esbuildBinary(): string {
  binary ??= process.env.ESBUILD_BINARY_PATH || findBinary();
  return binary;
}

function findBinary(): string {
  const fromEsbuild = createRequire(createRequire(import.meta.url).resolve("esbuild"));
  try {
    return fromEsbuild.resolve(`@esbuild/${process.platform}-${process.arch}/bin/esbuild`);
  } catch {
    return fromEsbuild.resolve("esbuild/bin/esbuild");
  }
}

const HEADER = /\[ERROR\] ([^\n]*)\n(?:\n {4}<stdin>:(\d+):(\d+):\n)?/;
/** how Go's runtime reports a heap or stack it could not grow */
const OUT_OF_MEMORY = /out of memory|cannot allocate memory|stack exceeds/i;

/** Compiles `source` in a process of its own, killed past `deadlineMs`; a failure of the process itself (not of the source) throws RunnerFailure. */
export function compile(source: string, options: { loader: "ts" | "js"; cjs: boolean; deadlineMs: number }): Compiled {
  const args = [`--loader=${options.loader}`, "--target=es2022", "--log-limit=1", "--log-level=error", "--color=false"];
  if (options.cjs) args.push("--format=cjs");
  // the shell sets the limit and is replaced by esbuild (exec), so the deadline's SIGKILL reaches esbuild itself
  const limit = `ulimit -d ${COMPILE_MEMORY_MB * 1024} && exec "$0" "$@"`;
  const out = spawnSync("/bin/sh", ["-c", limit, esbuildBinary(), ...args], {
    input: source,
    encoding: "utf8",
    timeout: options.deadlineMs,
    killSignal: "SIGKILL",
    maxBuffer: MAX_OUTPUT,
    env: {},
  });
  const code = (out.error as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ETIMEDOUT") return { over: "time" };
  if (code === "ENOBUFS") return { over: "memory" };
  if (out.status === 0 && !out.error) return { code: out.stdout };
  const stderr = out.stderr ?? "";
  const header = out.status === 1 ? HEADER.exec(stderr) : null;
  if (header) {
    const [, text, line, column] = header;
    return line === undefined ? { error: text } : { error: text, line: Number(line), column: Number(column) };
  }
  if (OUT_OF_MEMORY.test(stderr)) return { over: "memory" };
  const why = out.error ? out.error.message : `exit ${out.status ?? out.signal}: ${stderr.trim().split("\n", 1)[0]}`;
  throw new RunnerFailure(`the esbuild process failed: ${why}`.slice(0, 2000));
}
