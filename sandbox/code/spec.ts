// The one definition of a code-execution grader: the server validates, stores, shows and
// documents it (OpenAPI) with this schema, and the sandbox worker reads the stored JSON back
// through parseCodeSpec. `{}` is a complete definition: Python, the last fenced block, tests found
// in the thread's metadata, whitespace-insensitive output, the fraction of tests passed.

import { z } from "zod";
import { CODE_LANGUAGES, type RunLimits } from "./run.ts";

/** The service's bounds on one run (a test of one completion): a spec asks for limits within them. */
export const RUN_BOUNDS = {
  cpuMs: { min: 10, max: 10_000, default: 2_000 },
  memoryMb: { min: 16, max: 1_024, default: 256 },
  outputBytes: { min: 1_024, max: 1_048_576, default: 65_536 },
} as const;
/** the most tests one item may run (a spec's maxTests is at most this) */
export const MAX_TESTS = 100;
/** CPU time one item's tests may ask for in all (maxTests × cpuMs): a batch must stay schedulable */
export const MAX_ITEM_CPU_MS = 120_000;

const bounded = (what: keyof typeof RUN_BOUNDS, unit: string, text: string) => {
  const b = RUN_BOUNDS[what];
  return z
    .number()
    .int(`${what} must be an integer`)
    .min(b.min, `${what} must be at least ${b.min} ${unit}`)
    .max(b.max, `${what} must be at most ${b.max} ${unit} (the service's bound)`)
    .default(b.default)
    .describe(`${text}, ${b.min}–${b.max} ${unit} (default ${b.default})`);
};

export const CodeLimits = z
  .object({
    cpuMs: bounded("cpuMs", "ms", "CPU time of one test's run (program and harness)"),
    memoryMb: bounded(
      "memoryMb",
      "MB",
      "memory one test's run may use (Python: what it grows the interpreter's WebAssembly memory by past its start; JavaScript: the isolate's heap)",
    ),
    outputBytes: bounded("outputBytes", "bytes", "stdout (and stderr) bytes kept per run; past them the test is output_limit"),
  })
  .strict()
  .describe("limits per test run, within the service's bounds");

export const TEST_KINDS = ["auto", "stdin", "assert", "call"] as const;
export const COMPARE_MODES = ["exact", "whitespace", "float"] as const;
export const EXTRACT_RULES = ["fenced", "fenced_or_whole", "whole"] as const;
export const SCORINGS = ["fraction", "all_or_nothing"] as const;

/** The definition's fields (a route's body extends them); CodeSpec is these, strict and checked as a whole. */
export const CodeSpecFields = z.object({
  languages: z
    .array(z.enum(CODE_LANGUAGES, { message: `a language is one of ${CODE_LANGUAGES.join(", ")}` }))
    .min(1, "languages needs at least one language")
    .max(CODE_LANGUAGES.length)
    .refine((l) => new Set(l).size === l.length, "languages must not repeat a language")
    .default(["python"])
    .describe(
      "the languages a program may be written in; the first one is the language of an untagged block or of the whole completion " +
        "(default [python])",
    ),
  extract: z
    .enum(EXTRACT_RULES)
    .default("fenced_or_whole")
    .describe(
      "how the program is found in the last assistant turn: the last fenced block tagged with an accepted language " +
        "(```python, ```py, ```python3; ```javascript, ```js, ```node; ```typescript, ```ts), else the last untagged fenced block; " +
        "fenced_or_whole (default) falls back to the whole completion, fenced scores 0 (no program), whole always runs the whole completion",
    ),
  tests: z
    .enum(TEST_KINDS)
    .default("auto")
    .describe(
      "the kind of tests read from the thread's metadata: stdin (input → expected output), assert (test code run after the " +
        "program), call (a named function called with arguments), or auto (default: told by the metadata's shape)",
    ),
  testsKey: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64}){0,3}$/, "testsKey is a metadata key or a dotted path of at most 4 keys")
    .optional()
    .describe("where in thread.metadata the tests are (a key or a dotted path, e.g. reward_model.ground_truth); absent: metadata itself"),
  compare: z
    .enum(COMPARE_MODES)
    .default("whitespace")
    .describe(
      "how stdout is compared with the expected output: exact (byte-equal but for trailing newlines), whitespace (default: " +
        "equal whitespace-separated tokens), float (tokens, numbers within absTol or relTol); float also applies to returned values",
    ),
  absTol: z.number().min(0).max(1e6).default(1e-6).describe("float: the absolute tolerance (default 1e-6)"),
  relTol: z.number().min(0).max(1).default(1e-6).describe("float: the relative tolerance (default 1e-6)"),
  scoring: z
    .enum(SCORINGS)
    .default("fraction")
    .describe(
      "fraction (default): the share of tests passed; all_or_nothing: 1 when every test passes (it stops at the first failure), else 0",
    ),
  limits: CodeLimits.prefault({}),
  maxTests: z
    .number()
    .int()
    .min(1)
    .max(MAX_TESTS)
    .default(32)
    .describe(`the most tests an item may carry (1–${MAX_TESTS}, default 32); an item with more is an INVALID_METADATA error`),
});

/** maxTests × cpuMs within MAX_ITEM_CPU_MS (a refinement: every schema built on CodeSpecFields applies it) */
export const withinItemCpu = {
  check: (s: { maxTests: number; limits: { cpuMs: number } }) => s.maxTests * s.limits.cpuMs <= MAX_ITEM_CPU_MS,
  message: `maxTests × limits.cpuMs must be at most ${MAX_ITEM_CPU_MS} ms of CPU per item: lower one of them`,
};

export const CodeSpec = CodeSpecFields.strict()
  .refine(withinItemCpu.check, { message: withinItemCpu.message, path: ["maxTests"] })
  .describe("a code-execution grader's definition: every field has a default, so {} is one")
  .meta({ id: "CodeSpec" });

export type CodeSpec = z.infer<typeof CodeSpec>;
export type CodeSpecInput = z.input<typeof CodeSpec>;
export type { RunLimits };

/**
 * What the worker grades with: a stored definition, or (`run: true`, never stored: the API's
 * schema is strict) the SandboxFusion route's one program run once, whose outcome carries the run
 * itself (metadata.run) for the route to answer with.
 */
export type WorkerCodeSpec = CodeSpec & { run?: true };

/** The worker's read of a definition (the server built it validated: a failure here is a bug, and throws). */
export function parseCodeSpec(json: string): WorkerCodeSpec {
  const { run, ...spec } = JSON.parse(json) as Record<string, unknown>;
  return { ...CodeSpec.parse(spec), ...(run === true ? { run: true as const } : {}) };
}
