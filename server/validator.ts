// How a route's zod schema judges a request, with work bounded by the request's size. zod's own
// safeParse builds an issue object for every bad value, and copies it once per level on its way
// up: a 9.6 MB batch of 400 000 bad turns made 800 000 issues, took 1.2–1.4 s of the API's one
// thread and ~600 MB of heap, six at once 1.5 GB that V8 kept. Here zod only says yes or no
// (zod's validate() stops at the first issue) until a value is known to be bad; then
// firstIssues walks the schema down to the bad values and asks zod to word those alone, and
// stops at the 21st issue: the first 20 are listed, the 21st says there are more.

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

export interface FirstIssues {
  /** zod's first issues for the value, in zod's order and words, at most `limit` */
  issues: $ZodIssue[];
  /** there is at least one issue past them */
  more: boolean;
}

/**
 * The first `limit` issues zod's safeParse would report for `value` (same codes, paths and
 * messages, same order), and whether there are more. It descends objects and arrays itself,
 * skipping every value zod's validate() accepts, and hands only the bad leaves to safeParse, so
 * it makes at most limit + 1 issues, whatever the count of bad values, in time linear in the
 * value's size (each object or array is re-walked at most once per level of the schema above it).
 */
export function firstIssues(schema: $ZodType, value: unknown, limit = MAX_LISTED_ISSUES): FirstIssues {
  return accepts(schema, value) ? { issues: [], more: false } : issuesOfBad(schema, value, limit);
}

/** firstIssues of a value zod's validate() refused (not asked again: that would walk it once more) */
function issuesOfBad(schema: $ZodType, value: unknown, limit: number): FirstIssues {
  const found: $ZodIssue[] = [];
  collect(schema, value, [], found, limit + 1);
  return { issues: found.slice(0, limit), more: found.length > limit };
}

/** zod's yes or no, stopping at the first issue (validate() is a type guard, which would narrow `value` to never) */
const accepts = (schema: $ZodType, value: unknown): boolean => validate(schema, value);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const LENGTH_CHECKS = new Set(["min_length", "max_length", "length_equals"]);
const STRICT_EMPTY = z.strictObject({});
/** an array schema's own checks on an array of anything: its length issues, worded by zod */
const lengthOnly = new WeakMap<$ZodType, $ZodType>();

/** The issues of a value known to be bad (the caller asked validate()) into `found`, up to `want`. */
function collect(schema: $ZodType, value: unknown, path: Path, found: $ZodIssue[], want: number): void {
  if (found.length >= want) return;
  const def = schema._zod.def as unknown as { type: string; checks?: $ZodCheck[]; [key: string]: unknown };
  const checks = def.checks ?? [];
  // optional(x) and nullable(x) that fail fail as x does (validate accepted undefined and null)
  if ((def.type === "optional" || def.type === "nullable") && checks.length === 0) {
    collect(def.innerType as $ZodType, value, path, found, want);
    return;
  }
  if (def.type === "array" && Array.isArray(value) && checks.every((c) => LENGTH_CHECKS.has(c._zod.def.check))) {
    // past a maximum, zod refuses the length before it looks at an item: one issue, the leaf's
    const max = Math.min(...checks.map((c) => (c._zod.def as { maximum?: number }).maximum ?? Number.POSITIVE_INFINITY));
    if (value.length <= max) {
      const element = def.element as $ZodType;
      for (let i = 0; i < value.length && found.length < want; i++) {
        if (!good(element, value[i])) collect(element, value[i], [...path, i], found, want);
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
      if (!good(field, value[key])) collect(field, value[key], [...path, key], found, want);
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

/** Whether zod accepts the value: the schema's fast check when it has one and passes (fast-body.ts), else validate(). */
function good(schema: $ZodType, value: unknown): boolean {
  return fastBodies.get(schema)?.(value) === true || accepts(schema, value);
}

/** zod's own issues for a value small enough to word in full (a leaf, or one issue at most) */
function leaf(schema: $ZodType, value: unknown, path: Path, found: $ZodIssue[], want: number): void {
  if (found.length >= want) return;
  const result = safeParse(schema, value);
  for (const issue of result.error?.issues ?? []) {
    if (found.length >= want) return;
    found.push({ ...issue, path: [...path, ...issue.path] });
  }
}

/**
 * The validator compiler: fastify-type-provider-zod's, except that plain grading bodies skip zod
 * (fast-body.ts), and a bad value is answered with firstIssues instead of zod's every issue.
 */
export const boundedValidatorCompiler: FastifySchemaCompiler<$ZodType> = ({ schema }) => {
  const plain = fastBodies.get(schema);
  return (data) => {
    if (plain?.(data)) return { value: data };
    // validate first: a bad value must never reach safeParse whole
    const parsed = accepts(schema, data) ? safeParse(schema, data) : undefined;
    if (parsed?.success) return { value: parsed.data };
    const { issues, more } = issuesOfBad(schema, data, MAX_LISTED_ISSUES);
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
  const listed = issues.slice(0, MAX_LISTED_ISSUES).map((i) => {
    const path = i.instancePath?.replace(/^\//, "").replaceAll("/", ".") ?? "";
    const text = `${where}${path ? `.${path}` : ""}: ${i.message}`;
    return text.length > MAX_ISSUE_CHARS ? `${text.slice(0, MAX_ISSUE_CHARS)}…` : text;
  });
  const more = issues.more === true || issues.length > listed.length;
  return more ? `${listed.join("; ")}; … and more issues (the first ${MAX_LISTED_ISSUES} are listed)` : listed.join("; ");
}
