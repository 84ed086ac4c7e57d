// One thread through a code grader: its program (extract.ts), its tests (tests.ts), one fresh run
// per test (a runner of the program's language), a verdict per test and the score. Synchronous:
// the worker's runners are. What a run sends back is the program's doing, so everything copied
// into the outcome is bounded.

import { MAX_MESSAGE, MAX_RESULT } from "../protocol/replies.ts";
import { sameOutput, sameValue } from "./compare.ts";
import { extractProgram } from "./extract.ts";
import type { CodeOutcome } from "./outcomes.ts";
import { type CodeLanguage, type CodeRunner, type RunLimits, RunnerFailure, type RunRequest, type RunResult } from "./run.ts";
import { type CodeSpec, RUN_BOUNDS, type WorkerCodeSpec } from "./spec.ts";
import { type CodeTest, readTests, TestsError, testsRow } from "./tests.ts";

export const VERDICTS = [
  "accepted",
  "wrong_answer",
  "time_limit",
  "memory_limit",
  "output_limit",
  "runtime_error",
  "syntax_error",
  /** all_or_nothing: not run, an earlier test failed */
  "skipped",
] as const;
export type Verdict = (typeof VERDICTS)[number];

/** a message or an output excerpt kept in a verdict */
export const MAX_EXCERPT = 512;

export interface TestVerdict {
  verdict: Verdict;
  /** runtime and syntax errors: the exception; wrong answers: what differed */
  message?: string;
  /** stdin tests answered wrong: the start of what the program printed */
  stdout?: string;
  cpuMs?: number;
}

export type RunnerFor = (language: CodeLanguage) => CodeRunner;

const excerpt = (s: string) => (s.length > MAX_EXCERPT ? `${s.slice(0, MAX_EXCERPT)}…` : s);

/**
 * The run's limits: the spec's, but a test that expects output may print twice what it expects
 * (within the service's bound), so a right answer is never cut off by outputBytes (CodeContests
 * has outputs past the 64 KiB default).
 */
function limitsFor(test: CodeTest, spec: CodeSpec): RunLimits {
  const expected = test.kind === "stdin" || test.kind === "assert" ? test.expected : undefined;
  if (expected === undefined) return spec.limits;
  const room = Math.min(RUN_BOUNDS.outputBytes.max, 2 * Buffer.byteLength(expected));
  return room > spec.limits.outputBytes ? { ...spec.limits, outputBytes: room } : spec.limits;
}

function requestFor(test: CodeTest, language: CodeLanguage, program: string, spec: CodeSpec): RunRequest {
  const base = { language, program, limits: limitsFor(test, spec) };
  if (test.kind === "stdin") return { ...base, stdin: test.stdin };
  if (test.kind === "assert") {
    return {
      ...base,
      after: test.code,
      ...(test.before === undefined ? {} : { before: test.before }),
      ...(test.setup === undefined ? {} : { setup: test.setup }),
      ...(test.stdin === undefined ? {} : { stdin: test.stdin }),
    };
  }
  return { ...base, call: { name: test.name, args: test.args } };
}

const FAILED_RUN: Partial<Record<RunResult["status"], Verdict>> = {
  syntax_error: "syntax_error",
  runtime_error: "runtime_error",
  time_limit: "time_limit",
  memory_limit: "memory_limit",
  output_limit: "output_limit",
};

/** The verdict of one run of one test. */
export function verdictOf(test: CodeTest, run: RunResult, spec: CodeSpec): TestVerdict {
  const cpuMs = Number.isFinite(run.cpuMs) ? Math.round(run.cpuMs) : undefined;
  const failed = FAILED_RUN[run.status];
  if (failed) {
    const message = typeof run.message === "string" ? excerpt(run.message) : undefined;
    // a failed assertion of an assert-style test is a wrong answer, not a crash of the program
    if (test.kind === "assert" && failed === "runtime_error" && message?.startsWith("AssertionError")) {
      return { verdict: "wrong_answer", message, cpuMs };
    }
    return { verdict: failed, ...(message ? { message } : {}), cpuMs };
  }
  if (test.kind === "stdin") {
    if (sameOutput(run.stdout, test.expected, spec)) return { verdict: "accepted", cpuMs };
    return { verdict: "wrong_answer", message: "the output differs from the expected output", stdout: excerpt(run.stdout), cpuMs };
  }
  if (test.kind === "assert") {
    if (run.completed && test.expected !== undefined && !sameOutput(run.stdout, test.expected, spec)) {
      return { verdict: "wrong_answer", message: "the output differs from the expected output", stdout: excerpt(run.stdout), cpuMs };
    }
    if (run.completed) return { verdict: "accepted", cpuMs };
    return { verdict: "wrong_answer", message: "the tests did not run to their end (the program stopped them)", cpuMs };
  }
  if (run.returnedOpaque || run.returned === undefined) {
    const why = run.returnedOpaque ? "the function returned a value that is not plain data" : "the function was not called to its end";
    return { verdict: "wrong_answer", message: why, cpuMs };
  }
  const equal =
    (test.printed === true && typeof test.expected === "string" && samePrinted(run.returned, test.expected, spec)) ||
    sameValue(run.returned, test.expected, spec) ||
    (test.alsoFirst === true &&
      Array.isArray(test.expected) &&
      test.expected.length > 0 &&
      sameValue(run.returned, test.expected[0], spec));
  if (equal) return { verdict: "accepted", cpuMs };
  let shown: string;
  try {
    shown = JSON.stringify(run.returned, (_key, v) => (typeof v === "bigint" ? v.toString() : v)) ?? "undefined";
  } catch {
    shown = "(unprintable)";
  }
  return { verdict: "wrong_answer", message: `returned ${excerpt(shown)}`, cpuMs };
}

/**
 * verl's call-based rows: `printed` is the returned value as verl's wrapper prints it (a string
 * as it is, anything else as JSON; trailing newlines aside), so a string returned equals its
 * text, and anything else the JSON value the text holds.
 */
function samePrinted(returned: unknown, printed: string, spec: CodeSpec): boolean {
  const want = printed.replace(/\n+$/, "");
  if (typeof returned === "string") return returned.replace(/\n+$/, "") === want;
  let value: unknown;
  try {
    value = JSON.parse(want);
  } catch {
    return false;
  }
  return sameValue(returned, value, spec);
}

/** The last turn, when the assistant's: the completion whose program is graded. */
function completionOf(thread: { turns: readonly { role: string; content: string }[] }): string | undefined {
  const last = thread.turns.at(-1);
  return last?.role === "assistant" ? last.content : undefined;
}

/**
 * Grades one thread: the score is the fraction of tests accepted (or, all_or_nothing, 1 when all
 * are). No program (extract "fenced" and no block) scores 0; malformed tests are the item's
 * INVALID_METADATA error; a runner that fails (RunnerFailure) abstains RUNNER_UNAVAILABLE, since
 * a 0 would blame the completion for the service's fault.
 */
export function gradeThread(
  spec: WorkerCodeSpec,
  thread: { turns: readonly { role: string; content: string }[]; metadata?: Record<string, unknown> },
  runnerFor: RunnerFor,
): CodeOutcome {
  const completion = completionOf(thread);
  if (completion === undefined) {
    return {
      error: { code: "INVALID_THREAD", message: "a code grader grades the last turn's program: the last turn must be the assistant's" },
    };
  }
  const program = extractProgram(completion, spec);
  let tests: CodeTest[];
  try {
    // the tests are read (and refused when malformed) even without a program: bad data is loud either way
    tests = readTests(testsRow(thread.metadata, spec.testsKey), spec, program ?? { code: "", language: spec.languages[0] });
  } catch (error) {
    if (error instanceof TestsError)
      return { error: { code: "INVALID_METADATA", message: `tests: ${error.message}`.slice(0, MAX_MESSAGE) } };
    throw error;
  }
  if (!program) {
    return {
      score: 0,
      reason: `no program: the completion has no fenced ${spec.languages.join(" or ")} block`,
      metadata: { tests: tests.length, passed: 0, program: null },
    };
  }
  const verdicts: TestVerdict[] = [];
  let lastRun: RunResult | undefined;
  try {
    const runner = runnerFor(program.language);
    for (const test of tests) {
      const previous = verdicts.at(-1);
      if (previous?.verdict === "syntax_error") {
        // the same program does not parse the next time either
        verdicts.push({ verdict: "syntax_error", message: previous.message });
      } else if (spec.scoring === "all_or_nothing" && previous && previous.verdict !== "accepted") {
        verdicts.push({ verdict: "skipped" });
      } else {
        lastRun = runner.run(requestFor(test, program.language, program.code, spec));
        verdicts.push(verdictOf(test, lastRun, spec));
      }
    }
  } catch (error) {
    if (error instanceof RunnerFailure) {
      return { abstained: { code: "RUNNER_UNAVAILABLE", reason: `the ${program.language} runner failed: ${excerpt(error.message)}` } };
    }
    throw error;
  }
  if (spec.run && lastRun) return runOutcome(lastRun, verdicts[0]);
  const passed = verdicts.filter((v) => v.verdict === "accepted").length;
  const score = spec.scoring === "all_or_nothing" ? (passed === tests.length ? 1 : 0) : passed / tests.length;
  const counts: Partial<Record<Verdict, number>> = {};
  for (const v of verdicts) counts[v.verdict] = (counts[v.verdict] ?? 0) + 1;
  return fitted({
    score,
    reason: `${passed}/${tests.length} tests passed`,
    subscores: verdicts.map((v, i) => ({ name: `test ${i + 1}`, score: v.verdict === "accepted" ? 1 : 0, verdict: v.verdict })),
    metadata: {
      language: program.language,
      program: program.from,
      tests: tests.length,
      passed,
      kinds: [...new Set(tests.map((t) => t.kind))],
      verdicts: counts,
      results: verdicts,
    },
  });
}

/**
 * A result within MAX_RESULT characters of JSON, as every grader's is: with many tests the
 * outputs kept go first, then the messages are cut short, then dropped (metadata.trimmed says so).
 * The verdicts, counts and score always stay.
 */
function fitted(outcome: {
  score: number;
  reason: string;
  subscores: unknown[];
  metadata: { results: TestVerdict[] } & Record<string, unknown>;
}) {
  const size = () => JSON.stringify(outcome).length;
  if (size() <= MAX_RESULT) return outcome;
  const results = outcome.metadata.results;
  outcome.metadata.trimmed = true;
  for (const r of results) delete r.stdout;
  if (size() <= MAX_RESULT) return outcome;
  for (const r of results) if (r.message && r.message.length > 80) r.message = `${r.message.slice(0, 80)}…`;
  if (size() <= MAX_RESULT) return outcome;
  for (const r of results) delete r.message;
  return outcome;
}

/** The SandboxFusion route's single run, as the route answers it (stdout and stderr are bounded by the run's outputBytes). */
function runOutcome(run: RunResult, verdict: TestVerdict): CodeOutcome {
  return {
    score: verdict.verdict === "accepted" ? 1 : 0,
    metadata: {
      run: {
        status: run.status,
        stdout: run.stdout,
        stderr: run.stderr,
        exitCode: run.exitCode,
        ...(typeof run.message === "string" ? { message: excerpt(run.message) } : {}),
        cpuMs: run.cpuMs,
      },
    },
  };
}
