// gradebox/graders: the grader standard library. One dependency-free module used in three
// places: bundled into graders that import it (inside the sandbox), exported by the SDK, and
// used by the server for combined graders. Semantics follow HUD's graders (text helpers,
// SubScore, combine; test/hud-semantics.test.ts checks them against HUD's own Python) and
// autorubric's rubric scoring (scoreRubric). A score is `score` everywhere; `value` (a
// subscore's) and `reward` (combine's) are its old names, kept as aliases.

import type * as Wire from "./wire.ts";

// ---------------------------------------------------------------------------------------------
// Text helpers

const WORD = "[\\p{L}\\p{N}_]";
const NOT_WORD_OR_SPACE = /[^\p{L}\p{N}_\s]/gu;
const ARTICLES = new RegExp(`(?<!${WORD})(?:a|an|the)(?!${WORD})`, "gu");

/** Lower-case; punctuation to spaces; the words a/an/the removed; whitespace collapsed; trimmed. */
export function normalize(text: unknown): string {
  return String(text).toLowerCase().replace(NOT_WORD_OR_SPACE, " ").replace(ARTICLES, " ").replace(/\s+/gu, " ").trim();
}

/**
 * Python's str.strip() set (str.isspace): JavaScript's trim() also strips U+FEFF, and leaves
 * U+001C-U+001F and U+0085, which Python strips. HUD's helpers are Python's.
 */
const PY_SPACE = new Set([..."\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"].map((c) => c.charCodeAt(0)));
for (let c = 0x2000; c <= 0x200a; c++) PY_SPACE.add(c);

/** `text` with Python's `str.strip()` applied (a scan from each end). */
function pyStrip(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && PY_SPACE.has(text.charCodeAt(start))) start++;
  while (end > start && PY_SPACE.has(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end);
}

/** 1.0 when equal after `normalize` (or, with normalizeText: false, after Python's strip() + lower-case). */
export function exactMatch(answer: unknown, expected: unknown, { normalizeText = true }: { normalizeText?: boolean } = {}): number {
  const prep = normalizeText ? normalize : (x: unknown) => pyStrip(String(x)).toLowerCase();
  return prep(answer) === prep(expected) ? 1.0 : 0.0;
}

interface CaseOption {
  caseSensitive?: boolean;
}
function has(answer: unknown, substring: unknown, caseSensitive: boolean): boolean {
  const a = String(answer);
  const s = String(substring);
  return caseSensitive ? a.includes(s) : a.toLowerCase().includes(s.toLowerCase());
}

export function contains(answer: unknown, substring: unknown, { caseSensitive = false }: CaseOption = {}): number {
  return has(answer, substring, caseSensitive) ? 1.0 : 0.0;
}

/** 1.0 when any substring is present; an empty list is 0.0. */
export function containsAny(answer: unknown, substrings: readonly unknown[], { caseSensitive = false }: CaseOption = {}): number {
  return substrings.some((s) => has(answer, s, caseSensitive)) ? 1.0 : 0.0;
}

/** 1.0 when every substring is present; an empty list is 1.0. */
export function containsAll(answer: unknown, substrings: readonly unknown[], { caseSensitive = false }: CaseOption = {}): number {
  return substrings.every((s) => has(answer, s, caseSensitive)) ? 1.0 : 0.0;
}

const FIRST_NUMBER = /-?\p{Nd}+\.?\p{Nd}*/u;
const DIGIT = /\p{Nd}/u;

/** The value of one Unicode decimal digit: decimal digits come in runs of ten starting at zero. */
function digitValue(ch: string): number {
  const cp = ch.codePointAt(0) as number;
  let start = cp;
  while (start > 0 && DIGIT.test(String.fromCodePoint(start - 1))) start--;
  return (cp - start) % 10;
}

/** The first number in `text` (any Unicode decimal digits), or null. */
export function firstNumber(text: unknown): number | null {
  const match = FIRST_NUMBER.exec(String(text));
  if (!match) return null;
  let ascii = "";
  for (const ch of match[0]) ascii += ch === "-" || ch === "." ? ch : String(digitValue(ch));
  return Number(ascii);
}

/** 1.0 when the first number in answer is within tolerance of expected. */
export function numericMatch(answer: unknown, expected: number, { tolerance = 0 }: { tolerance?: number } = {}): number {
  const x = firstNumber(answer);
  return x !== null && Math.abs(x - Number(expected)) <= tolerance ? 1.0 : 0.0;
}

function tokens(text: unknown): string[] {
  const n = normalize(text);
  return n === "" ? [] : n.split(" ");
}

/** Token-level F1 over normalized words (multiset overlap). */
export function f1Score(answer: unknown, reference: unknown): number {
  const a = tokens(answer);
  const r = tokens(reference);
  if (a.length === 0 || r.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const t of r) counts.set(t, (counts.get(t) ?? 0) + 1);
  let common = 0;
  for (const t of a) {
    const c = counts.get(t) ?? 0;
    if (c > 0) {
      common++;
      counts.set(t, c - 1);
    }
  }
  if (common === 0) return 0;
  const precision = common / a.length;
  const recall = common / r.length;
  return (2 * precision * recall) / (precision + recall);
}

// ---------------------------------------------------------------------------------------------
// Combining

/** What a subscore is made from: `score` in [0, 1] (`value`, its old name, is accepted as an alias). */
interface SubScoreFields {
  name: string;
  /** default 1; negative weights are penalties */
  weight?: number;
  metadata?: Record<string, unknown>;
  /** the inputs of combineAny / combineAll */
  children?: SubScore[];
}
export type SubScoreInput = SubScoreFields &
  (
    | { score: number /** @deprecated the old name of `score` */; value?: number }
    | { score?: undefined /** @deprecated the old name of `score`: give `score` */; value: number }
  );

/** A subscore as the library gives it back: `score`, and `value` (the same number, the old name, deprecated). */
export interface SubScore extends SubScoreFields {
  score: number;
  /** @deprecated the old name of `score`, kept so that readers of `value` keep working */
  value: number;
}

export interface Combined {
  score: number;
  /** @deprecated the old name of `score` (not enumerable: JSON carries `score` only) */
  readonly reward: number;
  /** the inputs, duplicate names renamed, positive weights normalized to sum to 1 */
  subscores: Array<SubScore & { weight: number }>;
}

/** `bounded: false` accepts any finite score (combined graders: a part's score is any finite number). */
interface Bounds {
  bounded?: boolean;
}

/** The input's score (`score`, or its alias `value`), checked as HUD's SubScore checks it: a number in [0, 1]. */
function scoreOf(s: SubScoreInput, bounded: boolean): number {
  const { score, value } = s as { score?: unknown; value?: unknown };
  if (score !== undefined && value !== undefined && score !== value) {
    throw new RangeError(`subscore "${s.name}": score ${score} and value ${value} differ (value is the old name of score: give one)`);
  }
  const x = score ?? value;
  if (typeof x !== "number" || !Number.isFinite(x)) throw new RangeError(`subscore "${s.name}": score must be a finite number, got ${x}`);
  if (bounded && !(x >= 0 && x <= 1)) throw new RangeError(`subscore "${s.name}": score must be between 0 and 1, got ${x}`);
  return x;
}

/** The input as the library gives it back: `score` and `value` both set, any other field kept. */
function scored(s: SubScoreInput, name: string, bounded: boolean): SubScore {
  const score = scoreOf(s, bounded);
  return { ...s, name, score, value: score };
}

/**
 * HUD's renaming of duplicate names: a name that occurs once stays; each occurrence of a
 * repeated one becomes `name-k`, k counting from 1 per name and skipping any name already
 * given or present in the input.
 */
export function dedupeNames(names: readonly string[]): string[] {
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  const reserved = new Set(names);
  const used = new Set<string>();
  const usage = new Map<string, number>();
  return names.map((name) => {
    let final = name;
    if (counts.get(name) !== 1 || used.has(name)) {
      let k = usage.get(name) ?? 0;
      do k++;
      while (used.has(`${name}-${k}`) || reserved.has(`${name}-${k}`));
      usage.set(name, k);
      final = `${name}-${k}`;
    }
    used.add(final);
    return final;
  });
}

export function combine(subscores: readonly SubScoreInput[], { bounded = true }: Bounds = {}): Combined {
  if (subscores.length === 0) throw new RangeError("combine: no subscores");
  const weights = subscores.map((s) => s.weight ?? 1);
  const positive = weights.filter((w) => w > 0).reduce((a, b) => a + b, 0);
  if (!(positive > 0)) throw new RangeError("combine: the positive weights must sum to more than 0");
  const names = dedupeNames(subscores.map((s) => s.name));
  const out = subscores.map((s, i) => ({
    ...scored(s, names[i], bounded),
    weight: weights[i] > 0 ? weights[i] / positive : weights[i],
  }));
  const score = out.reduce((sum, s) => sum + s.score * s.weight, 0);
  const combined = { score, subscores: out } as Combined;
  Object.defineProperty(combined, "reward", { value: score, enumerable: false });
  return combined;
}

function collapse(
  subscores: readonly SubScoreInput[],
  pick: (scores: number[]) => number,
  { name, weight, bounded = true }: { name: string; weight: number } & Bounds,
  which: "Any" | "All",
): SubScore {
  if (subscores.length === 0) throw new RangeError(`combine${which}: no subscores`);
  // HUD names the children as combine names subscores (x-1, x-2): they must be told apart in a trace
  const names = dedupeNames(subscores.map((s) => s.name));
  const children = subscores.map((s, i) => scored(s, names[i], bounded));
  const score = pick(children.map((c) => c.score));
  return { name, score, value: score, weight, children };
}

/** Boolean OR: one SubScore with the highest score; the inputs (renamed as `combine` does) as its children. */
export function combineAny(
  subscores: readonly SubScoreInput[],
  { name = "any", weight = 1, ...bounds }: { name?: string; weight?: number } & Bounds = {},
): SubScore {
  return collapse(subscores, (v) => Math.max(...v), { name, weight, ...bounds }, "Any");
}

/** Boolean AND: one SubScore with the lowest score; the inputs (renamed as `combine` does) as its children. */
export function combineAll(
  subscores: readonly SubScoreInput[],
  { name = "all", weight = 1, ...bounds }: { name?: string; weight?: number } & Bounds = {},
): SubScore {
  return collapse(subscores, (v) => Math.min(...v), { name, weight, ...bounds }, "All");
}

// ---------------------------------------------------------------------------------------------
// Rubric scoring (autorubric)

/** One answer of a multi-choice criterion: its value in [0, 1]; `na`: choosing it means the criterion cannot be assessed. */
export type RubricOption = Wire.RubricOption;
export interface Criterion {
  name?: string;
  /** default 10; negative weights are penalties */
  weight?: number;
  requirement: string;
  /** multi-choice criteria: at least two non-NA options */
  options?: RubricOption[];
}
export type Verdict = "MET" | "UNMET" | "CANNOT_ASSESS" | (string & {});
export type CannotAssess = Wire.CannotAssessStrategy;

const squash = (s: string) => s.trim().replace(/\s+/g, " ").toLowerCase();

function checkCriterion(c: Criterion, i: number): void {
  if (!c.options) return;
  const real = c.options.filter((o) => !o.na);
  if (real.length < 2) throw new RangeError(`criterion ${c.name ?? i}: a multi-choice criterion needs at least 2 non-NA options`);
  // an NA option's value is never scored: autorubric ignores it, and so does this
  for (const o of real) {
    if (!(o.value >= 0 && o.value <= 1)) throw new RangeError(`criterion ${c.name ?? i}: option "${o.label}" has a value outside [0, 1]`);
  }
}

/** The worst non-NA option's value·w: lowest value for w ≥ 0, highest for w < 0, lowest index on ties. */
function worstOption(options: RubricOption[], w: number): number {
  let worst: RubricOption | undefined;
  for (const o of options) {
    if (o.na) continue;
    if (!worst || (w >= 0 ? o.value < worst.value : o.value > worst.value)) worst = o;
  }
  return (worst as RubricOption).value * w;
}

/**
 * Scores verdicts against criteria. Returns null when no criterion counted (never a made-up 0).
 */
export function scoreRubric(
  criteria: readonly Criterion[],
  verdicts: readonly Verdict[],
  {
    cannotAssess = "skip",
    partialCredit = 0.5,
    normalize: norm = true,
  }: { cannotAssess?: CannotAssess; partialCredit?: number; normalize?: boolean } = {},
): number | null {
  if (criteria.length !== verdicts.length) {
    throw new RangeError(`scoreRubric: ${criteria.length} criteria but ${verdicts.length} verdicts`);
  }
  let sum = 0;
  let pos = 0;
  let neg = 0;
  let counted = 0;
  criteria.forEach((c, i) => {
    checkCriterion(c, i);
    const w = c.weight ?? 10;
    const verdict = String(verdicts[i]);
    let abstains = false;
    let value = 0;
    if (c.options) {
      const option = c.options.find((o) => squash(o.label) === squash(verdict));
      if (squash(verdict) === "cannot_assess" && !option) abstains = true;
      else if (!option) throw new RangeError(`criterion ${c.name ?? i}: "${verdict}" is not one of its options`);
      else if (option.na) abstains = true;
      else value = option.value;
    } else {
      const v = squash(verdict).toUpperCase();
      if (v === "CANNOT_ASSESS") abstains = true;
      else if (v === "MET") value = 1;
      else if (v === "UNMET") value = 0;
      else throw new RangeError(`criterion ${c.name ?? i}: verdict must be MET, UNMET or CANNOT_ASSESS, got "${verdict}"`);
    }
    let contribution: number;
    if (abstains) {
      if (cannotAssess === "skip") return;
      if (cannotAssess === "zero") contribution = 0;
      else if (cannotAssess === "partial") contribution = w > 0 ? partialCredit * w : 0;
      else contribution = c.options ? worstOption(c.options, w) : w > 0 ? 0 : w;
    } else {
      contribution = value * w;
    }
    sum += contribution;
    if (w > 0) pos += w;
    else neg += Math.abs(w);
    counted++;
  });
  if (counted === 0) return null;
  if (!norm) return sum;
  const clamp = (x: number) => Math.min(1, Math.max(0, x));
  if (pos > 0) return clamp(sum / pos);
  if (neg > 0) return clamp(1 + sum / neg);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Abstaining

/**
 * The brand the sandbox recognises an abstention by: a registered symbol, so it survives
 * bundling (a grader's bundle carries its own copy of this class, which instanceof would miss).
 */
const ABSTAIN_BRAND = Symbol.for("gradebox.abstain");

/**
 * `throw new Abstain("why")` from grade (or gradeGroup): no score is honest for this thread, and
 * the result says so (outcome "abstained", code GRADER_ABSTAINED, this reason) instead of a
 * made-up 0. Returning null abstains too (reason "grade returned null"); returning undefined is
 * still INVALID_SCORE, so a forgotten return never abstains silently. Thrown from gradeGroup,
 * every thread of the group abstains; in gradeGroup's array, null or an Abstain abstains that
 * thread alone. A reason is cut to 2,000 characters.
 */
export class Abstain extends Error {
  readonly reason: string;
  constructor(reason = "the grader abstained") {
    super(reason);
    this.name = "Abstain";
    this.reason = reason;
  }
}
Object.defineProperty(Abstain.prototype, ABSTAIN_BRAND, { value: true });

/** Whether `value` is an abstention (an Abstain, from this copy of the library or any other). */
export function isAbstain(value: unknown): value is Abstain {
  return value !== null && typeof value === "object" && (value as Record<symbol, unknown>)[ABSTAIN_BRAND] === true;
}

// ---------------------------------------------------------------------------------------------
// Group rewards: for gradeGroup, which sees the N completions of one prompt together

function finite(x: unknown, what: string, i: number): number {
  if (typeof x !== "number" || !Number.isFinite(x))
    throw new RangeError(`${what}: item ${i} must be a finite number or null, got ${String(x)}`);
  return x;
}

/**
 * Each score's rank within the group, normalised to [0, 1]: the lowest 0, the highest 1,
 * ties sharing the mean of the ranks they span (so equal scores get equal rewards). A group
 * with one scored item gives it 0.5; null (an abstention) stays null and is not ranked.
 * `rankInGroup([0.2, 0.9, 0.2, 0.5])` is `[1/6, 1, 1/6, 2/3]`.
 */
export function rankInGroup(scores: readonly (number | null)[]): (number | null)[] {
  const scored: Array<{ score: number; index: number }> = [];
  scores.forEach((s, index) => {
    if (s !== null && s !== undefined) scored.push({ score: finite(s, "rankInGroup", index), index });
  });
  const out: (number | null)[] = scores.map(() => null);
  const n = scored.length;
  if (n === 1) out[scored[0].index] = 0.5;
  if (n <= 1) return out;
  scored.sort((a, b) => a.score - b.score);
  for (let i = 0; i < n; ) {
    let j = i;
    while (j + 1 < n && scored[j + 1].score === scored[i].score) j++;
    const rank = (i + j) / 2 / (n - 1);
    for (let k = i; k <= j; k++) out[scored[k].index] = rank;
    i = j + 1;
  }
  return out;
}

/** The group's most common answer (compared after `normalize` unless normalizeText is false), or undefined on a tie or when none voted. */
/** `tieFirst`: a tie goes to the answer seen first (majority@k's vote), else there is no majority (a reward's rule). */
function majorityOf(
  answers: readonly unknown[],
  normalizeText: boolean,
  tieFirst = false,
): { keys: (string | undefined)[]; majority: string | undefined } {
  const keys = answers.map((a) => (a === null || a === undefined ? undefined : normalizeText ? normalize(a) : String(a)));
  const counts = new Map<string, number>();
  for (const k of keys) if (k !== undefined) counts.set(k, (counts.get(k) ?? 0) + 1);
  let majority: string | undefined;
  let best = 0;
  let tied = false;
  for (const [k, c] of counts) {
    if (c > best) {
      best = c;
      majority = k;
      tied = false;
    } else if (c === best) {
      tied = true;
    }
  }
  return { keys, majority: tied && !tieFirst ? undefined : majority };
}

/**
 * 1 for each answer that agrees with the group's most common answer, 0 otherwise (self-consistency,
 * majority-vote pseudo-labels). Answers are compared after `normalize` (with normalizeText: false,
 * as String(answer)); null or undefined answers do not vote and get 0. A tie for the most common
 * answer means there is no majority: every item gets 0.
 * `majorityAgreement(["4", "four", "4", "5"])` is `[1, 0, 1, 0]`.
 */
export function majorityAgreement(answers: readonly unknown[], { normalizeText = true }: { normalizeText?: boolean } = {}): number[] {
  const { keys, majority } = majorityOf(answers, normalizeText);
  return keys.map((k) => (majority !== undefined && k === majority ? 1 : 0));
}

/**
 * A length reward relative to the group's mean length: `clamp(2 − len / mean, 0, 1)`, where len
 * is a text's length (characters, or with unit: "words" whitespace-separated words) and mean
 * the group's mean. At or below the mean 1, twice the mean or more 0, linear between; when the
 * mean is 0 every item gets 1. `relativeLength(["ab", "abcd", "abcdef"])` is `[1, 1, 0.5]`.
 */
export function relativeLength(texts: readonly unknown[], { unit = "chars" }: { unit?: "chars" | "words" } = {}): number[] {
  const lengths = texts.map((t) => {
    const s = String(t ?? "");
    return unit === "words" ? (s.trim() === "" ? 0 : s.trim().split(/\s+/u).length) : s.length;
  });
  const mean = lengths.length === 0 ? 0 : lengths.reduce((a, b) => a + b, 0) / lengths.length;
  return lengths.map((len) => (mean === 0 ? 1 : Math.min(1, Math.max(0, 2 - len / mean))));
}

/** One group's statistics (groupSummary); the batch-level GroupSummary of grade-batch is the wire's. */
export interface GroupStats {
  /** scores counted (null ones, abstentions, are left out) */
  k: number;
  /** the highest score; null when none was counted */
  best: number | null;
  mean: number | null;
  /** with a threshold: 1 when any of the k scores is at least threshold, else 0 */
  passAtK?: number;
  /** with answers and a threshold: 1 when the scored items' most common answer (a tie: the first seen) was given by an item scoring at least threshold */
  majorityAtK?: number;
}

/**
 * One group's statistics: best, mean, and (given a threshold) pass@k, and (given answers too)
 * majority@k, where k is the number of scored items. Answers are compared as majorityAgreement
 * compares them, but a tie goes to the answer seen first (the batch summary's rule,
 * sdk/summary.ts); null scores are left out of every figure.
 */
export function groupSummary(
  scores: readonly (number | null)[],
  { threshold, answers, normalizeText = true }: { threshold?: number; answers?: readonly unknown[]; normalizeText?: boolean } = {},
): GroupStats {
  const counted = scores.flatMap((s, i) => (s === null || s === undefined ? [] : [finite(s, "groupSummary", i)]));
  const k = counted.length;
  const summary: GroupStats = {
    k,
    best: k === 0 ? null : Math.max(...counted),
    mean: k === 0 ? null : counted.reduce((a, b) => a + b, 0) / k,
  };
  if (threshold !== undefined) {
    summary.passAtK = counted.some((s) => s >= threshold) ? 1 : 0;
    if (answers !== undefined) {
      if (answers.length !== scores.length) {
        throw new RangeError(`groupSummary: ${scores.length} scores but ${answers.length} answers`);
      }
      // the batch summary's rule (sdk/summary.ts): only scored items vote, a tie goes to the answer seen first, and
      // the majority answer is right when an item giving it reached the threshold
      const voting = answers.map((a, i) => (scores[i] === null || scores[i] === undefined ? undefined : a));
      const { keys, majority } = majorityOf(voting, normalizeText, true);
      const voters = scores.filter((s, i) => majority !== undefined && keys[i] === majority && s !== null && s !== undefined);
      summary.majorityAtK = voters.some((s) => (s as number) >= threshold) ? 1 : 0;
    }
  }
  return summary;
}
