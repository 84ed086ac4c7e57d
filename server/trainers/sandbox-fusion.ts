// SandboxFusion's run_code, as verl's sandbox-fusion reward path calls it
// (verl/utils/reward_score/sandbox_fusion/utils.py, call_sandbox_api): POST {"compile_timeout",
// "run_timeout", "code", "stdin", "memory_limit_MB", "language", "files": {}, "fetch_files": []}
// with no Authorization header, and read {"status": "Success"|"Failed"|"SandboxError", "message",
// "compile_result", "run_result": {"status", "execution_time", "return_code", "stdout", "stderr"},
// "executor_pod_name", "files"}. Pure functions: the route (routes/sandbox-fusion.ts)
// authenticates, runs and counts.
//
// What verl does with the answer decides its form: it retries on 504 only (3 attempts, 1 s then
// 2 s apart) and turns any other error, and any status but Success, into a failed test. So a run
// the pool could not take in time is a 504 (worth a retry), and everything else is answered once.

import { z } from "zod";
import type { CodeLanguage, RunResult } from "../../sandbox/code/run.ts";
import { type CodeSpec, RUN_BOUNDS, type WorkerCodeSpec } from "../../sandbox/code/spec.ts";
import type { GradeOutcome } from "../../sandbox/validate/checks.ts";
import type { WireThread } from "../../sdk/thread.ts";

/** SandboxFusion's language names this route runs, and the runner each goes to */
export const SF_LANGUAGES: Record<string, CodeLanguage> = { python: "python", nodejs: "javascript", typescript: "typescript" };

export function requestSchema(maxCode: number) {
  // SandboxFusion's own model ignores fields it does not know: so does this one
  return z.object({
    code: z.string().max(maxCode, `code is longer than ${maxCode} characters (GRADEBOX_MAX_CONTENT)`),
    language: z.string().max(64),
    stdin: z
      .string()
      .max(1 << 20, "stdin is longer than 1 MiB")
      .nullish(),
    compile_timeout: z.number().nonnegative().max(3600).optional(),
    run_timeout: z.number().positive().max(3600).optional(),
    memory_limit_MB: z
      .number()
      .max(1 << 20)
      .optional(),
    files: z.record(z.string(), z.unknown()).optional(),
    fetch_files: z.array(z.unknown()).optional(),
  });
}
export type RunCodeRequest = z.infer<ReturnType<typeof requestSchema>>;

/** Why a well-formed request is refused (files are not supported; the grader does not take the language), or undefined. */
export function refusal(req: RunCodeRequest, spec: CodeSpec): string | undefined {
  if (req.files && Object.keys(req.files).length > 0) return "files are not supported: send the program in `code` (files must be {})";
  if (req.fetch_files && req.fetch_files.length > 0) return "fetch_files is not supported (it must be [])";
  const language = SF_LANGUAGES[req.language];
  if (!language) return `language "${req.language}" is not run here: ${Object.keys(SF_LANGUAGES).join(" or ")}`;
  if (!spec.languages.includes(language)) {
    return `the token's code grader runs ${spec.languages.join(", ")}, not ${language}: add it to the grader's languages`;
  }
  return undefined;
}

/**
 * The definition one run goes through: the token's grader's, narrowed to this program run once on
 * this stdin, its limits the smaller of the grader's and the request's.
 */
export function runSpec(req: RunCodeRequest, spec: CodeSpec): WorkerCodeSpec {
  const language = SF_LANGUAGES[req.language] as CodeLanguage;
  const asked = Math.round((req.run_timeout ?? 10) * 1000);
  const memory = req.memory_limit_MB !== undefined && req.memory_limit_MB > 0 ? Math.round(req.memory_limit_MB) : spec.limits.memoryMb;
  const { testsKey: _testsKey, ...rest } = spec;
  return {
    ...rest,
    languages: [language],
    extract: "whole",
    tests: "stdin",
    compare: "exact",
    scoring: "fraction",
    maxTests: 1,
    limits: {
      cpuMs: Math.max(RUN_BOUNDS.cpuMs.min, Math.min(spec.limits.cpuMs, asked)),
      memoryMb: Math.max(RUN_BOUNDS.memoryMb.min, Math.min(spec.limits.memoryMb, memory)),
      outputBytes: spec.limits.outputBytes,
    },
    run: true,
  };
}

/** The program as a one-thread batch: the code is the completion, stdin the one test's input. */
export function threadOf(req: RunCodeRequest): WireThread {
  return { turns: [{ role: "assistant", content: req.code }], metadata: { inputs: [req.stdin ?? ""], outputs: [""] } };
}

export interface RunCodeResponse {
  status: "Success" | "Failed" | "SandboxError";
  message: string;
  compile_result: null;
  run_result: {
    status: "Finished" | "TimeLimitExceeded";
    execution_time: number;
    return_code: number | null;
    stdout: string;
    stderr: string;
  } | null;
  executor_pod_name: null;
  files: Record<string, string>;
}

type Run = Pick<RunResult, "status" | "stdout" | "stderr" | "exitCode" | "message" | "cpuMs">;

const isRun = (v: unknown): v is Run => {
  const r = v as Partial<Run> | null;
  return (
    typeof r === "object" && r !== null && typeof r.status === "string" && typeof r.stdout === "string" && typeof r.stderr === "string"
  );
};

/** A process killed by the kernel's OOM killer shows -9 to SandboxFusion's subprocess: a memory limit looks the same here. */
const KILLED = -9;

/**
 * The answer to verl, from the run's outcome; `busy` when it is a 504 (the run did not start in
 * time: verl retries). A sandbox_error is the service's failure, never the program's.
 */
export function responseOf(outcome: GradeOutcome): { body: RunCodeResponse; outcome: "success" | "failed" | "sandbox_error" | "busy" } {
  const base = { compile_result: null, executor_pod_name: null, files: {} };
  const sandboxError = (message: string) => ({
    body: { status: "SandboxError" as const, message, run_result: null, ...base },
    outcome: "sandbox_error" as const,
  });
  if ("abstained" in outcome) {
    if (outcome.abstained.code === "DEADLINE_EXCEEDED") return { ...sandboxError(outcome.abstained.reason), outcome: "busy" };
    return sandboxError(`${outcome.abstained.code}: ${outcome.abstained.reason}`);
  }
  if ("error" in outcome) return sandboxError(`${outcome.error.code}: ${outcome.error.message}`);
  const run = outcome.metadata?.run;
  if (!isRun(run)) return sandboxError("the runner answered without its run");
  const execution_time = Number.isFinite(run.cpuMs) ? run.cpuMs / 1000 : 0;
  const note = (text: string) => (run.stderr ? `${run.stderr}${run.stderr.endsWith("\n") ? "" : "\n"}${text}\n` : `${text}\n`);
  let run_result: NonNullable<RunCodeResponse["run_result"]>;
  switch (run.status) {
    case "ok":
      run_result = { status: "Finished", execution_time, return_code: run.exitCode, stdout: run.stdout, stderr: run.stderr };
      break;
    case "time_limit":
      run_result = { status: "TimeLimitExceeded", execution_time, return_code: null, stdout: run.stdout, stderr: run.stderr };
      break;
    case "memory_limit":
      run_result = {
        status: "Finished",
        execution_time,
        return_code: KILLED,
        stdout: run.stdout,
        stderr: note("MemoryError: the run went over its memory limit"),
      };
      break;
    case "output_limit":
      run_result = {
        status: "Finished",
        execution_time,
        return_code: run.exitCode || 1,
        stdout: run.stdout,
        stderr: note("the run went over its output limit"),
      };
      break;
    default:
      // runtime and syntax errors: the interpreter's exit, with its message where a traceback would be
      run_result = {
        status: "Finished",
        execution_time,
        return_code: run.exitCode || 1,
        stdout: run.stdout,
        stderr: run.stderr || !run.message ? run.stderr : `${run.message}\n`,
      };
  }
  const success = run_result.status === "Finished" && run_result.return_code === 0;
  return { body: { status: success ? "Success" : "Failed", message: "", run_result, ...base }, outcome: success ? "success" : "failed" };
}
