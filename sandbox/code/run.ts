// One run of a program a completion wrote, in a fresh interpreter: what the code grader's tests
// (grade.ts) ask of a runner (python-runner.ts, js-runner.ts), inside a sandbox worker. Types
// only: the grading logic and the runners import this, and nothing here runs.
//
// A run starts from a clean interpreter (nothing an earlier run did is visible), runs `program`
// with `stdin`, then the harness part of the request: `call` (a named function called with
// arguments, in the same interpreter) or `after` (assert-style test code, run in a second
// interpreter (Python) or context (JavaScript) that reaches the program's names by copy).
// What decides a verdict is read outside the interpreter: the bytes the program wrote to its
// standard output (captured below Python's `print` and `sys.stdout`), and the harness's own
// answer (`completed`, `returned`), which a program cannot forge by patching what it can reach.

/** typescript runs in the JavaScript runner once its types are stripped (typescript.ts) */
export const CODE_LANGUAGES = ["python", "javascript", "typescript"] as const;
export type CodeLanguage = (typeof CODE_LANGUAGES)[number];

export interface RunLimits {
  /** CPU time of the run (program + harness), ms */
  cpuMs: number;
  /** the run's memory, MB (Python: what it grows the interpreter's WebAssembly memory by past its start; JavaScript: the isolate's heap) */
  memoryMb: number;
  /** bytes of stdout and of stderr kept, each; past them the run stops with output_limit */
  outputBytes: number;
}

export interface RunRequest {
  language: CodeLanguage;
  program: string;
  /** standard input (absent: empty) */
  stdin?: string;
  /** the tests' imports, run before the program in its namespace and before the tests in theirs (MBPP's test_imports): trusted data, never the program's */
  before?: string;
  /** the tests' setup, run after the program in its namespace, before an assert test's tests (MBPP's test_setup_code, which builds the program's objects) */
  setup?: string;
  /** assert-style test code run after the program (see above); its end reached sets `completed` */
  after?: string;
  /** a function (or `Class.method`) the program defines, called with these JSON arguments; its value is `returned` */
  call?: { name: string; args: unknown[] };
  limits: RunLimits;
}

export const RUN_STATUSES = [
  /** the program (and harness) ran to the end */
  "ok",
  /** the program did not parse / compile */
  "syntax_error",
  /** an uncaught exception, or a non-zero exit */
  "runtime_error",
  "time_limit",
  "memory_limit",
  "output_limit",
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export interface RunResult {
  status: RunStatus;
  /** what the program wrote, at most limits.outputBytes each (UTF-8 decoded) */
  stdout: string;
  stderr: string;
  /** the exit code when the program exited (sys.exit / process.exit), else 0 for ok, 1 for runtime_error */
  exitCode: number;
  /** runtime/syntax errors: the exception's type and message, e.g. "ZeroDivisionError: division by zero" (bounded) */
  message?: string;
  /** `after` ran to its end, in this run, without an exception (read from the harness, not the program) */
  completed: boolean;
  /** `call`: the returned value as plain JSON data (bool, number, string, null, arrays, string-keyed objects; tuples as arrays) */
  returned?: unknown;
  /** `call`: the value was not plain data (an object with its own __eq__, a generator, …): never equal to an expected value */
  returnedOpaque?: boolean;
  /** CPU time the run took, ms */
  cpuMs: number;
}

/**
 * A runner for one language inside a worker. A failure of the runner itself (not of the program:
 * the interpreter could not be reset, say) throws RunnerFailure; the grade abstains then.
 */
export interface CodeRunner {
  run(request: RunRequest): RunResult;
  dispose(): void;
}

export class RunnerFailure extends Error {}
