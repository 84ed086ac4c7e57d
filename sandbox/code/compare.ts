// Comparing what a program produced with what its test expects: stdout text by the spec's mode,
// a returned value by deep equality (numbers within tolerance in float mode). Both sides are
// plain data; the comparison is ours, outside the interpreter, so a program cannot patch it.

import type { CodeSpec } from "./spec.ts";

type Tolerance = Pick<CodeSpec, "compare" | "absTol" | "relTol">;

const tokens = (s: string) => s.split(/\s+/).filter((t) => t !== "");
const trailingNewlines = /[\r\n]+$/;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

function close(a: number, b: number, t: Tolerance): boolean {
  if (a === b) return true;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  return Math.abs(a - b) <= Math.max(t.absTol, t.relTol * Math.abs(b));
}

/** Whether stdout matches the expected output under the spec's comparison mode. */
export function sameOutput(actual: string, expected: string, t: Tolerance): boolean {
  if (t.compare === "exact") return actual.replace(trailingNewlines, "") === expected.replace(trailingNewlines, "");
  const a = tokens(actual);
  const e = tokens(expected);
  if (a.length !== e.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === e[i]) continue;
    if (t.compare !== "float" || !NUMBER.test(a[i]) || !NUMBER.test(e[i])) return false;
    if (!close(Number(a[i]), Number(e[i]), t)) return false;
  }
  return true;
}

/** how deep a compared value may nest: deeper is unequal (metadata nests at most 64 levels) */
const MAX_DEPTH = 64;

/** Deep equality of plain data (the runner's `returned` and the test's expected value). */
export function sameValue(actual: unknown, expected: unknown, t: Tolerance, depth = 0): boolean {
  if (depth > MAX_DEPTH) return false;
  if (typeof actual === "number" && typeof expected === "number") {
    return t.compare === "float" ? close(actual, expected, t) : actual === expected;
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
