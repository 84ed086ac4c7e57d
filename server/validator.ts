// How a route's zod schema judges a request, with work bounded by the request's size. zod's own
// safeParse builds an issue object for every bad value, and copies it once per level on its way
// up: a 9.6 MB batch of 400 000 bad turns made 800 000 issues, took 1.2–2.4 s of the API's one
// thread and ~600 MB of heap, six at once 1.5 GB that V8 kept. Here firstIssues walks the schema
// itself down through objects and arrays, asks zod's validate() (a yes or no) of each item of an
// array and each field of an object, descends only into those refused, and asks safeParse to
// word only the values it cannot descend into. It stops at the 21st issue: the first 20 are
// listed, the 21st says there are more.

import type { FastifyError, FastifySchemaCompiler, FastifySchemaValidationError } from "fastify";
import { z } from "zod";
import { type $ZodCheck, type $ZodIssue, type $ZodType, safeParse, validate } from "zod/v4/core";
import { fastBodies } from "./fast-body.ts";

/** Validation issues a 400 lists one by one; past them it says there are more (a batch can have a million). */
export const MAX_LISTED_ISSUES = 20;
const MAX_ISSUE_CHARS = 500;

/** The mark hasZodFastifySchemaValidationErrors (fastify-type-provider-zod) recognises an issue by. */
const ZOD_ISSUE = Symbol.for("ZodFastifySchemaValidationError");

type Path = $ZodIssue["path"];
type Def = { type: string; checks?: $ZodCheck[]; [key: string]: unknown };

export interface FirstIssues {
  /** zod's first issues for the value, in zod's order and words, at most `limit` */
  issues: $ZodIssue[];
  /** there is at least one issue past them */
  more: boolean;
}

/**
 * The first `limit` issues zod's safeParse would report for `value` (same codes, paths, messages
 * and order), and whether there are more. An array is never handed to zod whole: its items are
 * asked one by one, so an array of 400 000 bad items costs the 21 it looks into, not 400 000
 * issues. Time is linear in the value's size: a refused item is walked again once per level of
 * the schema above its bad leaf.
 */
export function firstIssues(schema: $ZodType, value: unknown, limit = MAX_LISTED_ISSUES): FirstIssues {
  const found: $ZodIssue[] = [];
  collect(schema, value, [], found, limit + 1);
  return { issues: found.slice(0, limit), more: found.length > limit };
}

/** zod's yes or no (validate() is a type guard, which would narrow `value` to never) */
const accepts = (schema: $ZodType, value: unknown): boolean => validate(schema, value);
/** the schema's fast check when it has one and it passes (fast-body.ts), else zod's validate() */
const good = (schema: $ZodType, value: unknown): boolean => fastBodies.get(schema)?.(value) === true || accepts(schema, value);
const defOf = (schema: $ZodType) => schema._zod.def as unknown as Def;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const LENGTH_CHECKS = new Set(["min_length", "max_length", "length_equals"]);
const STRICT_EMPTY = z.strictObject({});
/** an array schema's own checks on an array of anything: its length issues, worded by zod */
const lengthOnly = new WeakMap<$ZodType, $ZodType>();

/** optional(x) or nullable(x) without checks of their own: what they wrap, and what they let through */
function unwrap(schema: $ZodType): { inner: $ZodType; passes: unknown } | undefined {
  const def = defOf(schema);
  if ((def.type !== "optional" && def.type !== "nullable") || (def.checks?.length ?? 0) > 0) return undefined;
  return { inner: def.innerType as $ZodType, passes: def.type === "optional" ? undefined : null };
}

/** Whether a schema (through optional and nullable) is an array firstIssues walks item by item, rather than asks zod about whole. */
function walksItems(schema: $ZodType): boolean {
  const wrapped = unwrap(schema);
  if (wrapped) return walksItems(wrapped.inner);
  const def = defOf(schema);
  return def.type === "array" && (def.checks ?? []).every((c) => LENGTH_CHECKS.has(c._zod.def.check));
}

/** zod's issues for `value` under `schema`, prefixed with `path`, into `found` until it holds `want`. */
function collect(schema: $ZodType, value: unknown, path: Path, found: $ZodIssue[], want: number): void {
  if (found.length >= want) return;
  const wrapped = unwrap(schema);
  if (wrapped) {
    if (value !== wrapped.passes) collect(wrapped.inner, value, path, found, want);
    return;
  }
  const def = defOf(schema);
  const checks = def.checks ?? [];
  if (walksItems(schema) && Array.isArray(value)) {
    // past a maximum, zod refuses the length before it looks at an item: one issue, the leaf's
    const max = Math.min(...checks.map((c) => (c._zod.def as { maximum?: number }).maximum ?? Number.POSITIVE_INFINITY));
    if (value.length <= max) {
      const item = def.element as $ZodType;
      const walk = walksItems(item);
      for (let i = 0; i < value.length && found.length < want; i++) {
        if (walk || !good(item, value[i])) collect(item, value[i], [...path, i], found, want);
      }
      // zod reports the array's own length issues after its items'
      let own = lengthOnly.get(schema);
      if (!own) {
        own = z.array(z.unknown()).check(...(checks as never[]));
        lengthOnly.set(schema, own);
      }
      leaf(own, value, path, found, want);
      return;
    }
  }
  const catchall = (def.catchall as $ZodType | undefined)?._zod.def.type;
  if (def.type === "object" && isObject(value) && checks.length === 0 && (catchall === undefined || catchall === "never")) {
    const shape = def.shape as Record<string, $ZodType>;
    for (const key in shape) {
      if (found.length >= want) return;
      const field = shape[key];
      // an absent optional key is no issue, even when its schema would refuse undefined
      if (!(key in value) && field._zod.optout === "optional" && field._zod.optin !== undefined) continue;
      if (walksItems(field) || !good(field, value[key])) collect(field, value[key], [...path, key], found, want);
    }
    // a strict object's unknown keys: one issue after the known keys' issues, as zod words it
    if (catchall === "never") {
      const unknown = Object.keys(value).filter((key) => !Object.hasOwn(shape, key));
      if (unknown.length > 0) leaf(STRICT_EMPTY, Object.fromEntries(unknown.map((key) => [key, value[key]])), path, found, want);
    }
    return;
  }
  leaf(schema, value, path, found, want);
}

/** zod's own issues for a value it words whole: not an array walked item by item, nor an object of them */
function leaf(schema: $ZodType, value: unknown, path: Path, found: $ZodIssue[], want: number): void {
  if (found.length >= want) return;
  const result = safeParse(schema, value);
  for (const issue of result.error?.issues ?? []) {
    if (found.length >= want) return;
    found.push({ ...issue, path: [...path, ...issue.path] });
  }
}

/**
 * zod's verdict on `value` with work bounded by its size: what zod returns for a good value, or
 * the first issues of a bad one (a bad value never reaches safeParse whole).
 */
export function checkBounded(schema: $ZodType, value: unknown): { value: unknown } | { issues: $ZodIssue[]; more: boolean } {
  const { issues, more } = firstIssues(schema, value);
  if (issues.length > 0) return { issues, more };
  const parsed = safeParse(schema, value);
  if (parsed.success) return { value: parsed.data };
  // not reached while firstIssues agrees with zod (test/big-bodies.test.ts holds it to that)
  return { issues: parsed.error.issues.slice(0, MAX_LISTED_ISSUES), more: parsed.error.issues.length > MAX_LISTED_ISSUES };
}

/**
 * The validator compiler: fastify-type-provider-zod's, except that plain grading bodies skip zod
 * (fast-body.ts), and a bad value is answered with firstIssues instead of zod's every issue.
 */
export const boundedValidatorCompiler: FastifySchemaCompiler<$ZodType> = ({ schema }) => {
  const plain = fastBodies.get(schema);
  return (data) => {
    if (plain?.(data)) return { value: data };
    const checked = checkBounded(schema, data);
    if ("value" in checked) return checked;
    const { issues, more } = checked;
    const listed: FastifySchemaValidationError[] = issues.map(({ code, path, message, ...params }) => ({
      [ZOD_ISSUE]: true,
      keyword: code,
      instancePath: `/${path.join("/")}`,
      schemaPath: `#/${path.join("/")}/${code}`,
      message,
      params,
    }));
    return { error: Object.assign(listed, { more }) };
  };
};

/** A 400's detail: where and what, issue by issue, then whether there are more. */
export function describeZodIssues(error: FastifyError): string {
  const issues = (error as unknown as { validation: Array<{ instancePath?: string; message?: string }> & { more?: boolean } }).validation;
  const where = (error as unknown as { validationContext?: string }).validationContext ?? "body";
  const listed = issues
    .slice(0, MAX_LISTED_ISSUES)
    .map((i) => ({ path: i.instancePath?.replace(/^\//, "").split("/") ?? [], message: i.message }));
  return listText(listed, issues.more === true || issues.length > listed.length, where);
}

/** zod's issues, worded as describeZodIssues words a validation error's (packed-body.ts's options) */
export function issuesText(issues: readonly $ZodIssue[], more: boolean, where = "body"): string {
  const listed = issues.slice(0, MAX_LISTED_ISSUES).map((i) => ({ path: i.path.map(String), message: i.message }));
  return listText(listed, more || issues.length > listed.length, where);
}

function listText(issues: Array<{ path: string[]; message?: string }>, more: boolean, where: string): string {
  const listed = issues.map(({ path, message }) => {
    const at = path.filter((p) => p !== "").join(".");
    const text = `${where}${at ? `.${at}` : ""}: ${message}`;
    return text.length > MAX_ISSUE_CHARS ? `${text.slice(0, MAX_ISSUE_CHARS)}…` : text;
  });
  return more ? `${listed.join("; ")}; … and more issues (the first ${MAX_LISTED_ISSUES} are listed)` : listed.join("; ");
}
