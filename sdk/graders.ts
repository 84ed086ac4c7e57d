// gradebox/graders: the grader standard library. One dependency-free module used in three
// places: bundled into graders that import it (inside the sandbox), exported by the SDK, and
// used by the server for combined graders. Semantics follow HUD's graders (text helpers,
// SubScore, combine) and autorubric's rubric scoring (scoreRubric).

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

/** 1.0 when equal after `normalize` (or, with normalizeText: false, after trim + lower-case). */
export function exactMatch(answer: unknown, expected: unknown, { normalizeText = true }: { normalizeText?: boolean } = {}): number {
  const prep = normalizeText ? normalize : (x: unknown) => String(x).trim().toLowerCase();
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

export interface SubScore {
  name: string;
  value: number;
  /** default 1; negative weights are penalties */
  weight?: number;
  metadata?: Record<string, unknown>;
  /** the inputs of combineAny / combineAll */
  children?: SubScore[];
}

export interface Combined {
  reward: number;
  /** the inputs, duplicate names renamed, positive weights normalized to sum to 1 */
  subscores: Array<SubScore & { weight: number }>;
}

/**
 * Every occurrence of a repeated name becomes `name-k`, k counting on from the highest numeric
 * suffix that name already has, skipping any name that is taken or present in the input.
 */
export function dedupeNames(names: readonly string[]): string[] {
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  const taken = new Set(names);
  const next = new Map<string, number>();
  return names.map((name) => {
    if ((counts.get(name) ?? 0) < 2) return name;
    let k = next.get(name);
    if (k === undefined) {
      k = 0;
      const prefix = `${name}-`;
      for (const other of names) {
        if (other.startsWith(prefix) && /^\d+$/.test(other.slice(prefix.length))) k = Math.max(k, Number(other.slice(prefix.length)));
      }
      k += 1;
    }
    while (taken.has(`${name}-${k}`)) k++;
    const renamed = `${name}-${k}`;
    taken.add(renamed);
    next.set(name, k + 1);
    return renamed;
  });
}

export function combine(subscores: readonly SubScore[]): Combined {
  if (subscores.length === 0) throw new RangeError("combine: no subscores");
  const weights = subscores.map((s) => s.weight ?? 1);
  const positive = weights.filter((w) => w > 0).reduce((a, b) => a + b, 0);
  if (!(positive > 0)) throw new RangeError("combine: the positive weights must sum to more than 0");
  const names = dedupeNames(subscores.map((s) => s.name));
  const out = subscores.map((s, i) => ({ ...s, name: names[i], weight: weights[i] > 0 ? weights[i] / positive : weights[i] }));
  const reward = out.reduce((sum, s) => sum + s.value * s.weight, 0);
  return { reward, subscores: out };
}

function collapse(subscores: readonly SubScore[], pick: (values: number[]) => number, name: string, weight: number): SubScore {
  if (subscores.length === 0) throw new RangeError(`combine${name === "any" ? "Any" : "All"}: no subscores`);
  return { name, value: pick(subscores.map((s) => s.value)), weight, children: [...subscores] };
}

/** Boolean OR: one SubScore with the maximum value. */
export function combineAny(
  subscores: readonly SubScore[],
  { name = "any", weight = 1 }: { name?: string; weight?: number } = {},
): SubScore {
  return collapse(subscores, (v) => Math.max(...v), name, weight);
}

/** Boolean AND: one SubScore with the minimum value. */
export function combineAll(
  subscores: readonly SubScore[],
  { name = "all", weight = 1 }: { name?: string; weight?: number } = {},
): SubScore {
  return collapse(subscores, (v) => Math.min(...v), name, weight);
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
  for (const o of c.options) {
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
