// Comparing what a program produced with what its test expects: stdout text by the spec's mode,
// a returned value by deep equality (numbers within tolerance in float mode). Both sides are
// plain data; the comparison is ours, outside the interpreter, so a program cannot patch it.
// Every scan here is hand-written and linear: a program's stdout is hostile text (a regular
// expression that backtracks over 32,000 newlines or digits took seconds of the worker's time).

import type { CodeSpec } from "./spec.ts";

type Tolerance = Pick<CodeSpec, "compare" | "absTol" | "relTol">;

/** A float that is not finite (NaN, ±inf): decoded from a program's value, it equals nothing a test can expect (JSON has none). */
export class NonFiniteFloat {
  constructor(readonly text: "nan" | "inf" | "-inf") {}
  toJSON(): string {
    return this.text;
  }
}

const isSpace = (c: number) => c === 32 || (c >= 9 && c <= 13);

function tokens(s: string): string[] {
  const out: string[] = [];
  let start = -1;
  for (let i = 0; i <= s.length; i++) {
    const space = i === s.length || isSpace(s.charCodeAt(i));
    if (space && start >= 0) {
      out.push(s.slice(start, i));
      start = -1;
    } else if (!space && start < 0) start = i;
  }
  return out;
}

function withoutTrailingNewlines(s: string): string {
  let end = s.length;
  while (end > 0 && (s.charCodeAt(end - 1) === 10 || s.charCodeAt(end - 1) === 13)) end--;
  return s.slice(0, end);
}

const isDigit = (c: number) => c >= 48 && c <= 57;

/** "int" for [+-]digits, "float" for a decimal or exponent number ([+-](d+.?d*|.d+)([eE][+-]?d+)?), else undefined */
export function numberKind(t: string): "int" | "float" | undefined {
  let i = 0;
  const n = t.length;
  if (i < n && (t[i] === "+" || t[i] === "-")) i++;
  let digits = 0;
  while (i < n && isDigit(t.charCodeAt(i))) {
    i++;
    digits++;
  }
  let float = false;
  if (i < n && t[i] === ".") {
    float = true;
    i++;
    while (i < n && isDigit(t.charCodeAt(i))) {
      i++;
      digits++;
    }
  }
  if (digits === 0) return undefined;
  if (i < n && (t[i] === "e" || t[i] === "E")) {
    float = true;
    i++;
    if (i < n && (t[i] === "+" || t[i] === "-")) i++;
    let exp = 0;
    while (i < n && isDigit(t.charCodeAt(i))) {
      i++;
      exp++;
    }
    if (exp === 0) return undefined;
  }
  if (i !== n) return undefined;
  return float ? "float" : "int";
}

function close(a: number, b: number, t: Tolerance): boolean {
  if (a === b) return true;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  return Math.abs(a - b) <= Math.max(t.absTol, t.relTol * Math.abs(b));
}

/** Whether stdout matches the expected output under the spec's comparison mode. */
export function sameOutput(actual: string, expected: string, t: Tolerance): boolean {
  if (t.compare === "exact") return withoutTrailingNewlines(actual) === withoutTrailingNewlines(expected);
  const a = tokens(actual);
  const e = tokens(expected);
  if (a.length !== e.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === e[i]) continue;
    if (t.compare !== "float") return false;
    const ka = numberKind(a[i]);
    const ke = numberKind(e[i]);
    if (!ka || !ke) return false;
    // integers are compared exactly ("1000000999" is not "1000000000"); the tolerance is for decimals
    if (ka === "int" && ke === "int") {
      if (BigInt(a[i]) !== BigInt(e[i])) return false;
      continue;
    }
    if (!close(Number(a[i]), Number(e[i]), t)) return false;
  }
  return true;
}

/** how deep a compared value may nest: deeper is unequal (metadata nests at most 64 levels) */
const MAX_DEPTH = 64;

function sameInteger(a: number | bigint, b: number | bigint): boolean {
  if (typeof a === "number" && !Number.isInteger(a)) return false;
  if (typeof b === "number" && !Number.isInteger(b)) return false;
  // a double past 2^53 in the expected value lost its digits before it reached us (metadata sent
  // as a JSON object): the best it can be compared with is the same double
  if (typeof b === "number" && !Number.isSafeInteger(b)) return Number(a) === b;
  if (typeof a === "number" && !Number.isSafeInteger(a)) return a === Number(b);
  return BigInt(a) === BigInt(b);
}

/** Deep equality of plain data (the runner's `returned` and the test's expected value); integers past 2^53 arrive as bigint. */
export function sameValue(actual: unknown, expected: unknown, t: Tolerance, depth = 0): boolean {
  if (depth > MAX_DEPTH) return false;
  if (actual instanceof NonFiniteFloat || expected instanceof NonFiniteFloat) return false;
  const ta = typeof actual;
  const te = typeof expected;
  if ((ta === "number" || ta === "bigint") && (te === "number" || te === "bigint")) {
    if (ta === "bigint" || te === "bigint") return sameInteger(actual as number | bigint, expected as number | bigint);
    if (Number.isNaN(actual) || Number.isNaN(expected)) return false;
    return t.compare === "float" ? close(actual as number, expected as number, t) : actual === expected;
  }
  if (actual === null || expected === null || typeof actual !== "object" || typeof expected !== "object") return actual === expected;
  if (Array.isArray(actual) !== Array.isArray(expected)) return false;
  if (Array.isArray(actual) && Array.isArray(expected)) {
    return actual.length === expected.length && actual.every((v, i) => sameValue(v, expected[i], t, depth + 1));
  }
  const a = actual as Record<string, unknown>;
  const e = expected as Record<string, unknown>;
  const keys = Object.keys(e);
  if (Object.keys(a).length !== keys.length) return false;
  return keys.every((k) => Object.hasOwn(a, k) && sameValue(a[k], e[k], t, depth + 1));
}
