// An item's tests, read from its metadata in the shapes public code datasets use, into one list
// of runs. Metadata is the caller's data, so every shape is checked strictly and every size is
// bounded; a malformed item is a TestsError (the item's INVALID_METADATA error), never a guess.
//
//   APPS / TACO / verl        input_output: {inputs, outputs, fn_name?} (or its JSON text), or
//                             those keys at the top: stdin tests, or call tests with fn_name
//                             (an input is the list of arguments, or verl's text of one JSON
//                             argument per line); verl's assert_case: assert tests
//   CodeContests              public_tests / private_tests: {input: [...], output: [...]}
//   LiveCodeBench             public_test_cases / private_test_cases (or public_tests /
//                             private_tests): [{input, output, testtype: stdin|functional}] or its
//                             JSON text; functional inputs are one JSON value per line, the
//                             function's name in fn_name, func_name or metadata.func_name
//   HumanEval                 test (defines check(candidate)) + entry_point: one assert test
//   MBPP                      test_list: one assert test per line; test_imports and
//                             test_setup_code run after the program (imports before)
//   MultiPL-E                 tests: the test program, one assert test

import type { CodeLanguage } from "./run.ts";
import type { CodeSpec } from "./spec.ts";

export type CodeTest =
  | { kind: "stdin"; stdin: string; expected: string }
  /**
   * `before`: run before the program, in its namespace, and before the tests (MBPP's test_imports);
   * `setup`: run after the program, in its namespace (MBPP's test_setup_code: it builds the program's objects);
   * `stdin` and `expected` (stdout): verl's assert_case rows may carry them
   */
  | { kind: "assert"; code: string; before?: string; setup?: string; stdin?: string; expected?: string }
  /**
   * `alsoFirst`: APPS wraps a call's expected value in a list: [v] also accepts v. `printed`:
   * verl's call-based rows give the expected value as its wrapper prints it (str(v), JSON for
   * lists, dicts, booleans and None)
   */
  | { kind: "call"; name: string; args: unknown[]; expected: unknown; alsoFirst?: boolean; printed?: boolean };

export class TestsError extends Error {}

/** one test's input or expected output, as text */
export const MAX_TEST_TEXT = 1 << 20;
/** assert-style test code of one test */
export const MAX_TEST_CODE = 256 * 1024;
/** JSON text of a whole test set (input_output, LiveCodeBench's test cases) */
export const MAX_TESTS_JSON = 16 << 20;
const NAME = /^[A-Za-z_$][A-Za-z0-9_$]{0,99}(\.[A-Za-z_$][A-Za-z0-9_$]{0,99})?$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const own = (o: Record<string, unknown>, key: string): unknown => (Object.hasOwn(o, key) ? o[key] : undefined);

/** integers past 2^53 keep their digits (as bigint): a returned value is compared with them exactly */
const exactIntegers = (_key: string, value: unknown, context?: { source?: string }): unknown =>
  typeof value === "number" && !Number.isSafeInteger(value) && typeof context?.source === "string" && /^-?\d+$/.test(context.source)
    ? BigInt(context.source)
    : value;
const parseExact = (text: string): unknown => JSON.parse(text, exactIntegers as (key: string, value: unknown) => unknown);

function parseJsonText(text: string, what: string): unknown {
  if (text.length > MAX_TESTS_JSON) throw new TestsError(`${what} is longer than ${MAX_TESTS_JSON} characters`);
  try {
    return parseExact(text);
  } catch {
    throw new TestsError(`${what} is a string but not JSON (LiveCodeBench's compressed private_test_cases must be decoded to JSON first)`);
  }
}

/** a string, or a list of lines (some TACO rows), as text */
function text(v: unknown, what: string): string {
  const s = Array.isArray(v) && v.every((l) => typeof l === "string") ? v.join("\n") : v;
  if (typeof s !== "string") throw new TestsError(`${what} must be a string (or a list of lines)`);
  if (s.length > MAX_TEST_TEXT) throw new TestsError(`${what} is longer than ${MAX_TEST_TEXT} characters`);
  return s;
}

function code(v: unknown, what: string): string {
  if (typeof v !== "string") throw new TestsError(`${what} must be a string of test code`);
  if (v.length > MAX_TEST_CODE) throw new TestsError(`${what} is longer than ${MAX_TEST_CODE} characters`);
  return v;
}

function list(v: unknown, what: string, max: number): unknown[] {
  if (!Array.isArray(v)) throw new TestsError(`${what} must be a list`);
  if (v.length > max) throw new TestsError(`${what} has ${v.length} tests; this grader runs at most ${max} per item (maxTests)`);
  return v;
}

function functionName(v: unknown, what: string): string {
  if (typeof v !== "string" || !NAME.test(v)) {
    throw new TestsError(`${what} must be a function name, or Class.method (letters, digits, _ and $)`);
  }
  return v;
}

/**
 * LeetCode-style problems (TACO, LiveCodeBench) name the method and let the program define
 * `class Solution`: the call goes to Solution().method then, as those datasets' own harnesses do.
 */
function callName(name: string, program: string, language: CodeLanguage): string {
  if (name.includes(".")) return name;
  const solution = language === "python" ? /^class\s+Solution\b/m : /\bclass\s+Solution\b/;
  return solution.test(program) ? `Solution.${name}` : name;
}

interface Ctx {
  max: number;
  program: string;
  language: CodeLanguage;
}

/** APPS / TACO / verl: {inputs, outputs, fn_name?}, or verl's {assert_case, inputs?, outputs?} */
function inputsOutputs(io: Record<string, unknown>, what: string, ctx: Ctx): CodeTest[] {
  if (own(io, "assert_case") !== undefined) return assertCases(io, what, ctx);
  const inputs = list(own(io, "inputs"), `${what}.inputs`, ctx.max);
  const outputs = list(own(io, "outputs"), `${what}.outputs`, ctx.max);
  if (inputs.length !== outputs.length) {
    throw new TestsError(`${what} has ${inputs.length} inputs but ${outputs.length} outputs; they pair up one to one`);
  }
  const fn = own(io, "fn_name");
  if (fn === undefined || fn === null || fn === "") {
    return inputs.map((input, i) => ({
      kind: "stdin",
      stdin: text(input, `${what}.inputs[${i}]`),
      expected: text(outputs[i], `${what}.outputs[${i}]`),
    }));
  }
  const name = callName(functionName(fn, `${what}.fn_name`), ctx.program, ctx.language);
  return inputs.map((input, i) => {
    if (Array.isArray(input)) return { kind: "call", name, args: input, expected: outputs[i], alsoFirst: true };
    if (typeof input !== "string") {
      throw new TestsError(
        `${what}.inputs[${i}] must be the list of the call's arguments, or their text, one JSON value per line (fn_name is set)`,
      );
    }
    // verl's sandbox-fusion wrapper: one JSON argument per line, the expected value as it prints the returned one
    const args = jsonLines(text(input, `${what}.inputs[${i}]`), `${what}.inputs[${i}]`);
    const expected = outputs[i];
    if (typeof expected === "string") return { kind: "call", name, args, expected: text(expected, `${what}.outputs[${i}]`), printed: true };
    return { kind: "call", name, args, expected, alsoFirst: true };
  });
}

/**
 * verl's assert_case (its compute_score): each case is test code run after the program, with
 * inputs[i] as stdin when given and outputs[i], when not null, the stdout expected as well.
 */
function assertCases(io: Record<string, unknown>, what: string, ctx: Ctx): CodeTest[] {
  const cases = list(own(io, "assert_case"), `${what}.assert_case`, ctx.max);
  const inputs = own(io, "inputs") === undefined ? undefined : list(own(io, "inputs"), `${what}.inputs`, ctx.max);
  const outputs = own(io, "outputs") === undefined ? undefined : list(own(io, "outputs"), `${what}.outputs`, ctx.max);
  for (const [key, l] of [
    ["inputs", inputs],
    ["outputs", outputs],
  ] as const) {
    if (l && l.length !== cases.length) {
      throw new TestsError(`${what} has ${cases.length} assert_case but ${l.length} ${key}; they pair up one to one`);
    }
  }
  return cases.map((c, i) => {
    const input = inputs?.[i];
    const output = outputs?.[i];
    return {
      kind: "assert",
      code: code(c, `${what}.assert_case[${i}]`),
      ...(input === undefined || input === null || input === "" ? {} : { stdin: text(input, `${what}.inputs[${i}]`) }),
      ...(output === undefined || output === null ? {} : { expected: text(output, `${what}.outputs[${i}]`) }),
    };
  });
}

/** one JSON value per line (blank lines skipped): a call's arguments as verl and LiveCodeBench write them */
function jsonLines(input: string, what: string): unknown[] {
  return input
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line, j) => jsonValue(line, `${what} line ${j + 1}`));
}

/** CodeContests' {input: [], output: []}, or LiveCodeBench's [{input, output, testtype}] */
function testSet(v: unknown, what: string, row: Record<string, unknown>, ctx: Ctx): CodeTest[] {
  const set = typeof v === "string" ? parseJsonText(v, what) : v;
  if (isObject(set)) {
    const inputs = list(own(set, "input"), `${what}.input`, ctx.max);
    const outputs = list(own(set, "output"), `${what}.output`, ctx.max);
    if (inputs.length !== outputs.length) {
      throw new TestsError(`${what} has ${inputs.length} inputs but ${outputs.length} outputs; they pair up one to one`);
    }
    return inputs.map((input, i) => ({
      kind: "stdin",
      stdin: text(input, `${what}.input[${i}]`),
      expected: text(outputs[i], `${what}.output[${i}]`),
    }));
  }
  const cases = list(set, what, ctx.max);
  return cases.map((c, i) => {
    const at = `${what}[${i}]`;
    if (!isObject(c)) throw new TestsError(`${at} must be an object {input, output, testtype}`);
    const type = own(c, "testtype") ?? "stdin";
    if (type === "stdin")
      return { kind: "stdin", stdin: text(own(c, "input"), `${at}.input`), expected: text(own(c, "output"), `${at}.output`) };
    if (type !== "functional") throw new TestsError(`${at}.testtype must be "stdin" or "functional"`);
    const name = callName(functionName(lcbFunctionName(row), "the functional test's function name (fn_name)"), ctx.program, ctx.language);
    const args = jsonLines(text(own(c, "input"), `${at}.input`), `${at}.input`);
    return { kind: "call", name, args, expected: jsonValue(text(own(c, "output"), `${at}.output`), `${at}.output`) };
  });
}

function jsonValue(s: string, what: string): unknown {
  try {
    return parseExact(s);
  } catch {
    throw new TestsError(`${what} must be JSON (a functional test's arguments are one JSON value per line)`);
  }
}

/** LiveCodeBench keeps the name in its row's metadata (a JSON text): {"func_name": "maxSum"} */
function lcbFunctionName(row: Record<string, unknown>): unknown {
  const direct = own(row, "fn_name") ?? own(row, "func_name");
  if (direct !== undefined) return direct;
  let meta = own(row, "metadata");
  if (typeof meta === "string" && meta.length <= 65_536) {
    try {
      meta = JSON.parse(meta);
    } catch {
      return undefined;
    }
  }
  return isObject(meta) ? own(meta, "func_name") : undefined;
}

/** HumanEval: `test` defines check(candidate); the check is called on the entry point */
function humanEval(row: Record<string, unknown>, language: CodeLanguage): CodeTest[] {
  const test = code(own(row, "test"), "test");
  const entry = own(row, "entry_point");
  if (entry === undefined) return [{ kind: "assert", code: test }];
  const name = functionName(entry, "entry_point");
  const defines = language === "python" ? /^def\s+check\s*\(/m : /\b(function\s+check|(const|let|var)\s+check\s*=)/;
  return [{ kind: "assert", code: defines.test(test) ? `${test}\n\ncheck(${name})\n` : test }];
}

/**
 * MBPP: each assert line is a test; the imports run before the program (and before the tests),
 * the setup code after the program, in its namespace: MBPP's rows build the program's objects
 * there (`root = Node(1)`, with Node the program's), which reach the tests as handles.
 */
function mbpp(row: Record<string, unknown>, max: number): CodeTest[] {
  const lines = list(own(row, "test_list"), "test_list", max);
  const imports = own(row, "test_imports");
  const before = (imports === undefined ? [] : list(imports, "test_imports", 100).map((l, i) => code(l, `test_imports[${i}]`)))
    .filter((s) => s.trim() !== "")
    .join("\n");
  const setupCode = own(row, "test_setup_code") === undefined ? "" : code(own(row, "test_setup_code"), "test_setup_code");
  const setup = setupCode.trim() === "" ? "" : setupCode;
  if (before.length + setup.length > MAX_TEST_CODE)
    throw new TestsError(`test_imports and test_setup_code are longer than ${MAX_TEST_CODE} characters`);
  return lines.map((l, i) => ({
    kind: "assert",
    code: `${code(l, `test_list[${i}]`)}\n`,
    ...(before ? { before: `${before}\n` } : {}),
    ...(setup ? { setup: `${setup}\n` } : {}),
  }));
}

/** Where the spec says the tests are: metadata itself, or the value at testsKey (a dotted path). */
export function testsRow(metadata: unknown, testsKey: string | undefined): Record<string, unknown> {
  let row: unknown = metadata ?? {};
  for (const key of testsKey ? testsKey.split(".") : []) {
    row = isObject(row) ? own(row, key) : undefined;
    if (typeof row === "string" && /^[{[]/.test(row.trimStart())) row = parseJsonText(row, `metadata.${testsKey}`);
  }
  // a bare list of LiveCodeBench-style cases ([{input, output, testtype}], verl's ground truth for it)
  if (Array.isArray(row) && testsKey) row = { public_test_cases: row };
  if (!isObject(row)) throw new TestsError(`metadata${testsKey ? `.${testsKey}` : ""} must be an object holding the item's tests`);
  return row;
}

const KNOWN =
  "input_output or inputs/outputs (APPS, TACO, verl), assert_case (verl), public_tests/private_tests (CodeContests), " +
  "public_test_cases/private_test_cases (LiveCodeBench), test + entry_point (HumanEval), test_list (MBPP) or tests (MultiPL-E)";

/**
 * The item's tests, in order. `program` and `language` decide LeetCode-style calls (Solution.method)
 * and how HumanEval's check is called.
 */
export function readTests(
  row: Record<string, unknown>,
  spec: Pick<CodeSpec, "tests" | "maxTests">,
  program: { code: string; language: CodeLanguage },
): CodeTest[] {
  const ctx: Ctx = { max: spec.maxTests, program: program.code, language: program.language };
  let tests: CodeTest[] | undefined;
  const io = own(row, "input_output");
  if (io !== undefined) {
    const parsed = typeof io === "string" ? parseJsonText(io, "input_output") : io;
    if (!isObject(parsed)) throw new TestsError("input_output must be an object {inputs, outputs, fn_name?} or its JSON text");
    tests = inputsOutputs(parsed, "input_output", ctx);
  } else if (own(row, "inputs") !== undefined || own(row, "outputs") !== undefined || own(row, "assert_case") !== undefined) {
    tests = inputsOutputs(row, "metadata", ctx);
  } else {
    const sets = ["public_tests", "private_tests", "public_test_cases", "private_test_cases"].filter((k) => own(row, k) !== undefined);
    if (sets.length > 0) {
      tests = [];
      for (const key of sets) tests.push(...testSet(own(row, key), key, row, ctx));
    } else if (own(row, "test_list") !== undefined) {
      tests = mbpp(row, spec.maxTests);
    } else if (own(row, "test") !== undefined) {
      tests = humanEval(row, program.language);
    } else if (own(row, "tests") !== undefined) {
      // MultiPL-E: the whole test program (it calls the function itself)
      tests = [{ kind: "assert", code: code(own(row, "tests"), "tests") }];
    }
  }
  if (tests === undefined) throw new TestsError(`the item carries no tests: its metadata needs one of ${KNOWN}`);
  if (tests.length === 0) throw new TestsError("the item's tests are empty: there is nothing to run");
  if (tests.length > spec.maxTests) {
    throw new TestsError(`the item has ${tests.length} tests; this grader runs at most ${spec.maxTests} per item (maxTests)`);
  }
  if (spec.tests !== "auto") {
    const other = tests.find((t) => t.kind !== spec.tests);
    if (other) throw new TestsError(`this grader runs ${spec.tests} tests; the item's tests include ${other.kind} tests`);
  }
  return tests;
}
