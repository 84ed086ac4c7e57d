// The host's readers of what a worker process sends: IPC replies and the watchdog's verdict
// lines. Everything a worker says is hostile input: each reader checks shape and bounds and
// copies what it keeps, and no loop runs over a length or index a worker sent.

import { CODE_ABSTAIN_CODES, CODE_ERROR_CODES } from "../code/outcomes.ts";
import { MAX_MESSAGE, MAX_RESULT, type ValidationResult, type Verdict, type WorkerReply } from "../protocol/replies.ts";
import { CHECKS, type CheckFailure, type GradeOutcome, type GraderShape, SANDBOX_ERROR_CODES } from "../validate/checks.ts";

/** The codes a worker may answer an item with beside a score: a grader's own words, or a code grader's. */
export interface OutcomeCodes {
  errors: ReadonlySet<string>;
  abstentions: ReadonlySet<string>;
}
/**
 * A grader's isolate: the sandbox's errors, and only GRADER_ABSTAINED (a deadline or an
 * unavailable judge is the host's to say).
 */
export const GRADER_CODES: OutcomeCodes = { errors: new Set(SANDBOX_ERROR_CODES), abstentions: new Set(["GRADER_ABSTAINED"]) };
/** A code grader's worker (sandbox/code/outcomes.ts): exactly what the code path answers, never a grader's isolate's. */
export const CODE_GRADER_CODES: OutcomeCodes = { errors: new Set(CODE_ERROR_CODES), abstentions: new Set(CODE_ABSTAIN_CODES) };
const MAX_VERDICT_LINE = 4096;

const isRecord = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

/**
 * An abstention as a worker may report one: exactly {abstained: {code, reason}}, the code one
 * of `codes`, the reason a bounded string.
 */
function isAbstention(o: Record<string, unknown>, codes: OutcomeCodes): boolean {
  const a = o.abstained;
  if (Object.keys(o).length !== 1 || !isRecord(a) || Object.keys(a).length !== 2) return false;
  return codes.abstentions.has(a.code as string) && typeof a.reason === "string" && a.reason.length <= MAX_MESSAGE + 1;
}

/** One outcome as the engine builds it, its codes among `codes`; anything else is a malformed reply. */
function isOutcome(o: unknown, codes: OutcomeCodes): o is GradeOutcome {
  if (!isRecord(o)) return false;
  if ("abstained" in o) return isAbstention(o, codes);
  if ("error" in o) {
    const e = o.error;
    return (
      isRecord(e) &&
      codes.errors.has(e.code as string) &&
      typeof e.message === "string" &&
      e.message.length <= MAX_MESSAGE + 1 &&
      (e.line === undefined ? e.column === undefined : isPosition(e.line) && isPosition(e.column))
    );
  }
  return (
    typeof o.score === "number" &&
    Number.isFinite(o.score) &&
    (o.reason === undefined || (typeof o.reason === "string" && o.reason.length <= MAX_RESULT)) &&
    (o.metadata === undefined || isRecord(o.metadata)) &&
    (o.subscores === undefined || Array.isArray(o.subscores))
  );
}

/**
 * A slice's outcomes: with the `aside` items it set aside, at least `least` (1; 0 for a slice
 * its deadline stopped), at most the `left` items the slice may cover, each well-formed with
 * `codes` (a code grader's are CODE_GRADER_CODES), and (`ends`, with groups) ending where a
 * group does.
 */
export function wellFormedSlice(
  outcomes: unknown,
  left: number,
  ends: (n: number) => boolean = () => true,
  least = 1,
  aside = 0,
  codes: OutcomeCodes = GRADER_CODES,
): outcomes is GradeOutcome[] {
  if (!Array.isArray(outcomes)) return false;
  const covered = outcomes.length + aside;
  return covered >= least && covered <= left && (covered === 0 || ends(covered)) && outcomes.every((o) => isOutcome(o, codes));
}

/**
 * The items a slice from `from` set aside (SliceResult.deferred) beside its `outcomes` (a
 * count), checked: batch indexes, ascending, within the items the slice covered and the `left`
 * it may cover, and whole units (`isStart`: where a unit starts). A copy; undefined when
 * malformed.
 */
export function checkedAside(
  deferred: unknown,
  from: number,
  left: number,
  outcomes: number,
  isStart: (i: number) => boolean,
): number[] | undefined {
  if (!Array.isArray(deferred) || deferred.length > left) return undefined;
  const end = from + Math.min(left, outcomes + deferred.length);
  const out: number[] = [];
  for (const d of deferred) {
    if (typeof d !== "number" || !Number.isInteger(d) || d < from || d >= end) return undefined;
    const prev = out.at(-1);
    if (prev !== undefined && d <= prev) return undefined;
    // a run of items set aside starts where a unit does and ends where one does
    if (!isStart(d) && prev !== d - 1) return undefined;
    if (prev !== undefined && prev !== d - 1 && !isStart(prev + 1)) return undefined;
    out.push(d);
  }
  const last = out.at(-1);
  if (last !== undefined && !isStart(last + 1)) return undefined;
  return out;
}

/** a line or column in a grader's source (1-based; a 64 KiB source has no more) */
const isPosition = (x: unknown): x is number => typeof x === "number" && Number.isInteger(x) && x >= 1 && x <= 1_000_000;

const VERDICTS = new Set(["timeout", "memory", "stalled", "recycle"]);
const isCount = (x: unknown): x is number => typeof x === "number" && Number.isInteger(x) && x >= 0 && x <= 1e9;
const isBytes = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
const CHECK_NAMES = new Set<string>(CHECKS);
/** a compiled grader: a 64 KiB source, the bundled standard library and a source map */
const MAX_COMPILED = 8 * 1024 * 1024;
const MAX_WARNINGS = 100;
const SHAPES = new Set<string>(["thread", "group", "both"] satisfies GraderShape[]);

/** A stats reply whose counts are all byte counts (non-negative safe integers). */
export function wellFormedStats(reply: Extract<WorkerReply, { op: "stats" }>): boolean {
  const { warm, warmHeapBytes, evictions, rss } = reply;
  return [warm, warmHeapBytes, evictions, rss].every(isBytes);
}

/** A "failed" reply's message, bounded. */
export const failureMessage = (reply: Extract<WorkerReply, { op: "failed" }>): string =>
  typeof reply.message === "string" ? reply.message.slice(0, MAX_MESSAGE) : "the worker failed";

/** A validation worker's result, checked and copied field by field; undefined when it is malformed. */
export function checkedValidation(r: unknown): ValidationResult | undefined {
  if (!isRecord(r)) return undefined;
  if (r.ok === true) {
    const { compiled, warnings, shape } = r;
    if (typeof compiled !== "string" || compiled.length > MAX_COMPILED) return undefined;
    if (
      !Array.isArray(warnings) ||
      warnings.length > MAX_WARNINGS ||
      !warnings.every((w) => typeof w === "string" && w.length <= MAX_MESSAGE)
    )
      return undefined;
    if (shape !== undefined && !SHAPES.has(shape as string)) return undefined;
    return { ok: true, compiled, warnings: [...warnings], ...(shape === undefined ? {} : { shape: shape as GraderShape }) };
  }
  const f = r.failure;
  if (r.ok !== false || !isRecord(f) || !CHECK_NAMES.has(f.check as string) || typeof f.message !== "string") return undefined;
  const optionalPosition = (x: unknown) => x === undefined || isPosition(x);
  if (!optionalPosition(f.line) || !optionalPosition(f.column) || (f.costly !== undefined && typeof f.costly !== "boolean"))
    return undefined;
  return {
    ok: false,
    failure: {
      check: f.check as CheckFailure["check"],
      message: f.message.slice(0, 4 * MAX_MESSAGE),
      ...(f.line === undefined ? {} : { line: f.line as number }),
      ...(f.column === undefined ? {} : { column: f.column as number }),
      ...(f.costly === true ? { costly: true } : {}),
    },
  };
}

export function parseVerdict(line: string): Verdict | undefined {
  if (line.length > MAX_VERDICT_LINE) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!isRecord(v) || !VERDICTS.has(v.verdict as string)) return undefined;
  if (v.verdict === "recycle") return isBytes(v.rss) ? { verdict: "recycle", rss: v.rss } : undefined;
  if (!isCount(v.job) || !isCount(v.from) || !isCount(v.count) || typeof v.detail !== "string") return undefined;
  return {
    verdict: v.verdict as "timeout" | "memory" | "stalled",
    job: v.job,
    from: v.from,
    count: v.count,
    detail: v.detail.slice(0, 200),
  };
}

/**
 * The verdicts of the complete lines in what the verdict pipe has given so far (malformed lines
 * dropped), and the unfinished line left over, itself dropped once it is longer than any verdict.
 */
export function verdictLines(buffer: string): { verdicts: Verdict[]; rest: string } {
  const verdicts: Verdict[] = [];
  let rest = buffer;
  let nl = rest.indexOf("\n");
  while (nl >= 0) {
    const verdict = parseVerdict(rest.slice(0, nl));
    rest = rest.slice(nl + 1);
    if (verdict) verdicts.push(verdict);
    nl = rest.indexOf("\n");
  }
  return { verdicts, rest: rest.length > MAX_VERDICT_LINE ? "" : rest };
}
