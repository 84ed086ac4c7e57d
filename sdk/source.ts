// Turning a function object into grader source. fn.toString() is whatever the loader made of
// the function (tsx minifies and adds __name calls; tsc may rename); the server accepts any of
// these shapes and stores the entry point as `grade`.

import type { Language } from "./errors.ts";
import { GradeboxError } from "./errors.ts";

/** File name endings and the language they hold: how `file` (and `gradebox push`) infer it. */
const EXTENSIONS: Array<[RegExp, Language]> = [
  [/\.py$/i, "python"],
  [/\.(ts|mts|cts|tsx|js|mjs|cjs|jsx)$/i, "typescript"],
];

/** The language a grader file's name says it holds; undefined for any other name (the server's default then applies). */
export function languageOfFile(path: string): Language | undefined {
  return EXTENSIONS.find(([pattern]) => pattern.test(path))?.[1];
}

export function functionSource(fn: unknown): string {
  if (typeof fn !== "function") throw new GradeboxError("fn must be a function");
  const text = Function.prototype.toString.call(fn).trim();
  if (/\{\s*\[native code\]\s*\}$/.test(text)) {
    throw new GradeboxError("cannot read the source of a native or bound function: pass `source` or `file` instead");
  }
  // a named declaration is already a valid module: `async function myGrader(t) {…}`
  if (/^async\s+function\s*[\w$]+\s*\(/.test(text) || /^function\s*[\w$]+\s*\(/.test(text)) return text;
  // method shorthand from an object literal or class: `async grade(t) {…}`
  const method = /^(async\s+)?([\w$]+)\s*\(/.exec(text);
  if (method && method[2] !== "function" && method[2] !== "async")
    return `${method[1] ?? ""}function ${text.slice(method[1]?.length ?? 0)}`;
  // arrows and anonymous function expressions
  return `const grade = ${text};`;
}
