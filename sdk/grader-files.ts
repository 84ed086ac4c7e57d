// What a grader file holds and the keys its graders get, read from its text without a parser (this
// module runs in a browser too): one grader (a default export, a top-level `grade`, or the only
// function, as the server finds it), or several named exports of async functions, one grader each.

import { GradeboxError } from "./errors.ts";

/** A grader file that cannot be sent as it is: its code says why (LOCAL_IMPORT_OUTSIDE_PROJECT, PACKAGE_IMPORT, …). */
export class GraderFileError extends GradeboxError {
  override name = "GraderFileError";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The longest key the server takes (its NAME pattern: [a-z0-9][a-z0-9._-]{0,127}). */
const MAX_KEY = 128;

/**
 * A grader key from an export or file name, in kebab-case: exactMatch → exact-match,
 * length_ok → length-ok, HTTPStatus → http-status. Anything the server's key pattern refuses
 * becomes a `-`; a name with nothing usable in it is an error.
 */
export function keyFromName(name: string): string {
  const key = name
    .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1-$2")
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, "-")
    .replace(/-{2,}/g, "-")
    .replace(/^[^a-z0-9]+|[-.]+$/g, "")
    .slice(0, MAX_KEY);
  if (!key) throw new GraderFileError("NO_KEY", `cannot make a grader key of ${JSON.stringify(name)}: pass the key`);
  return key;
}

/** A grader key from a file's name without its directory and extension: graders/exact_match.py → exact-match. */
export function keyFromFile(path: string): string {
  const base = path.split(/[\\/]/).pop() ?? path;
  return keyFromName(base.replace(/\.[^.]*$/, ""));
}

// top-level statements start a line; a grader file is formatted source, not minified
const DEFAULT_EXPORT = /^export\s+default\b|^export\s*\{[^}]*\bas\s+default\b/m;
// `grade` or `gradeGroup`: either is the module's own entry point, as the server picks it
const TOP_LEVEL_GRADE =
  /^(?:export\s+)?(?:async\s+function\s*\*?\s*grade(?:Group)?\s*\(|function\s*\*?\s*grade(?:Group)?\s*\(|(?:const|let|var)\s+grade(?:Group)?\b)/m;
const NAMED_ASYNC_FUNCTION = /^export\s+async\s+function\s+([A-Za-z_$][\w$]*)/gm;
const NAMED_ASYNC_CONST = /^export\s+(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=\n]*)?=\s*async\b/gm;

/**
 * The named graders of a TypeScript or JavaScript file: its exported async functions
 * (`export async function exactMatch(thread)`, `export const lengthOk = async (thread) => …`), in
 * the file's order. Empty when the file is a one-grader file: it has a default export or a
 * top-level `grade` or `gradeGroup` (the entry points, as the server picks them; other exports
 * are their helpers), or no named async export.
 */
export function namedGraders(source: string): string[] {
  if (DEFAULT_EXPORT.test(source) || TOP_LEVEL_GRADE.test(source)) return [];
  const found: Array<[number, string]> = [];
  for (const re of [NAMED_ASYNC_FUNCTION, NAMED_ASYNC_CONST]) for (const m of source.matchAll(re)) found.push([m.index, m[1]]);
  return found.sort((a, b) => a[0] - b[0]).map(([, name]) => name);
}

/**
 * The source with `name` (one of its named graders) as its entry point: the server takes a
 * default export before any other function, so one line at the end picks it among several.
 */
export function withEntry(source: string, name: string): string {
  if (!namedGraders(source).includes(name)) {
    throw new GraderFileError(
      "NO_SUCH_EXPORT",
      `the file has no exported async function ${name}: export it, e.g. \`export async function ${name}(thread)\``,
    );
  }
  return `${source}${source.endsWith("\n") ? "" : "\n"}export { ${name} as default };\n`;
}
