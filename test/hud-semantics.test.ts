// gradebox/graders against HUD's own Python code (test/support/hud: HUD's text.py and
// combine.py as HUD ships them) on a few thousand generated inputs: the text helpers, the
// renaming of duplicate names, combine's score and weights, the names combineAny/combineAll
// give their children, and which subscore scores are refused. Needs Python 3.10 or later
// ($GRADEBOX_PYTHON, python3, /usr/bin/python3); skipped, saying why, without one.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import {
  combine,
  combineAll,
  combineAny,
  contains,
  containsAll,
  containsAny,
  dedupeNames,
  exactMatch,
  f1Score,
  normalize,
  numericMatch,
} from "gradebox/graders";
import { repoRoot } from "./support/helpers.ts";

const TEXT_CASES = 3000;
const NAME_CASES = 2000;
const COMBINE_CASES = 2000;

async function findPython(): Promise<{ python?: string; why: string }> {
  const candidates = [process.env.GRADEBOX_PYTHON, "python3", "/usr/bin/python3"].filter((p): p is string => Boolean(p));
  const seen: string[] = [];
  for (const python of candidates) {
    try {
      const { stdout } = await promisify(execFile)(python, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], {
        timeout: 20_000,
      });
      const [major, minor] = stdout.trim().split(".").map(Number);
      if (major === 3 && minor >= 10) return { python, why: "" };
      seen.push(`${python} is ${stdout.trim()}`);
    } catch {
      seen.push(`${python} did not run`);
    }
  }
  return { why: `no Python 3.10 or later to run HUD's code (${seen.join("; ")})` };
}

/** mulberry32: the same cases on every run */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// what the rules treat specially: articles, whitespace only Python strips (U+001C-U+001F, U+0085)
// or only JavaScript trims (U+FEFF), other Unicode spaces, punctuation, case folds (İ, Σ, ß), digits of other scripts
const ALPHABET = [
  ..."aAeEnNtThH xyz",
  "the",
  "The",
  "an",
  "An",
  "\t",
  "\n",
  "\r",
  "\v",
  "\f",
  "\x1c",
  "\x1d",
  "\x1e",
  "\x1f",
  "\x85",
  "\xa0",
  "\u2003",
  "\u2028",
  "\u3000",
  "\ufeff",
  "\u200b",
  ..."._,!?-'\"():",
  "é",
  "É",
  "ß",
  "İ",
  "Σ",
  "ΑΣ",
  "ǅ",
  "\u0301",
  ..."0123456789",
  "١",
  "٢",
  "३",
  "½",
  "²",
  "_",
];

const EDGES = ["", " ", "\t", "\x1c", "\x1f", "\x85", "\xa0", "\u3000", "\u2029", "\ufeff", "\u200b", "x", "."];

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const words = (r: () => number, max = 12) => Array.from({ length: Math.floor(r() * (max + 1)) }, () => pick(r, ALPHABET)).join("");

interface TextCase {
  a: string;
  b: string;
  subs: string[];
  x: number;
  tolerance: number;
}
interface Part {
  name: string;
  value: number;
  weight: number;
}

function cases() {
  const r = rng(27);
  const text: TextCase[] = [];
  for (let i = 0; i < TEXT_CASES; i++) {
    const a = words(r);
    // b: often a in upper case between edges that one trim or the other strips, so that equalities happen
    const b = r() < 0.5 ? `${pick(r, EDGES)}${a.toUpperCase()}${pick(r, EDGES)}` : words(r);
    const subs = Array.from({ length: Math.floor(r() * 4) }, () =>
      r() < 0.5 ? a.slice(Math.floor(r() * a.length)).slice(0, 3) : words(r, 3),
    );
    const x = r() < 0.5 ? Math.floor(r() * 20) - 5 : Math.round(r() * 1000) / 100;
    text.push({ a, b, subs, x, tolerance: pick(r, [0, 0.5, 1, 10]) });
  }
  const NAMES = ["a", "a", "a-1", "a-2", "a-3", "b", "b-1", "a-1-1", "x"];
  const names = Array.from({ length: NAME_CASES }, () => Array.from({ length: 1 + Math.floor(r() * 7) }, () => pick(r, NAMES)));
  const combines: Array<{ parts: Part[] }> = [];
  for (let i = 0; i < COMBINE_CASES; i++) {
    const parts = Array.from({ length: 1 + Math.floor(r() * 5) }, () => ({
      name: pick(r, NAMES),
      value: r() < 0.1 ? pick(r, [-0.1, 1.5, 2, -1, 1.0000001]) : pick(r, [0, 1, 0.5, Math.round(r() * 1000) / 1000]),
      weight: pick(r, [1, 0.5, 0.3, 2, 0, -1, -0.25]),
    }));
    combines.push({ parts });
  }
  return { text, names, combines };
}

function ours({ text, names, combines }: ReturnType<typeof cases>) {
  return {
    text: text.map((c) => ({
      normalize: normalize(c.a),
      exact: exactMatch(c.a, c.b),
      exactRaw: exactMatch(c.a, c.b, { normalizeText: false }),
      contains: contains(c.a, c.b),
      containsCase: contains(c.a, c.b, { caseSensitive: true }),
      any: containsAny(c.a, c.subs),
      all: containsAll(c.a, c.subs),
      numeric: numericMatch(c.a, c.x, { tolerance: c.tolerance }),
      f1: f1Score(c.a, c.b),
    })),
    names: names.map((n) => dedupeNames(n)),
    combines: combines.map(({ parts }) => {
      const input = parts.map((p) => ({ name: p.name, score: p.value, weight: p.weight }));
      let any: string[];
      try {
        any = (combineAny(input).children ?? []).map((s) => s.name);
      } catch (error) {
        assert.match((error as Error).message, /score must be/);
        return { refused: true };
      }
      const out: Record<string, unknown> = { refused: false, any, all: (combineAll(input).children ?? []).map((s) => s.name) };
      try {
        const r = combine(input);
        return { ...out, score: r.score, names: r.subscores.map((s) => s.name), weights: r.subscores.map((s) => s.weight) };
      } catch (error) {
        assert.match((error as Error).message, /positive weights/);
        return { ...out, error: "subscores must include at least one positive weight" };
      }
    }),
  };
}

async function hud(python: string, input: unknown): Promise<ReturnType<typeof ours>> {
  const child = spawn(python, ["diff.py"], {
    cwd: join(repoRoot, "test/support/hud"),
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", PYTHONIOENCODING: "utf-8" },
  });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (d) => (out += d));
  child.stderr.setEncoding("utf8").on("data", (d) => (err += d));
  child.stdin.end(JSON.stringify(input));
  const code = await new Promise((resolve) => child.on("close", resolve));
  assert.equal(code, 0, err);
  return JSON.parse(out);
}

test("gradebox/graders agrees with HUD's own Python code on thousands of generated inputs", { timeout: 120_000 }, async (t) => {
  const { python, why } = await findPython();
  if (!python) {
    t.skip(why);
    return;
  }
  const input = cases();
  const theirs = await hud(python, input);
  const mine = ours(input);
  const differ = (kind: keyof typeof mine, field?: string) =>
    mine[kind]
      .map((m, i) => ({
        i,
        m: field ? (m as Record<string, unknown>)[field] : m,
        h: field ? (theirs[kind][i] as Record<string, unknown>)[field] : theirs[kind][i],
      }))
      .filter(({ m, h }) =>
        typeof m === "number" && typeof h === "number" ? Math.abs(m - h) > 1e-12 : JSON.stringify(m) !== JSON.stringify(h),
      )
      .map(({ i, m, h }) => ({ case: (input[kind] as unknown[])[i], ours: m, hud: h }));
  for (const field of ["normalize", "exact", "exactRaw", "contains", "containsCase", "any", "all", "numeric", "f1"]) {
    const wrong = differ("text", field);
    assert.equal(wrong.length, 0, `${field}: ${wrong.length} of ${TEXT_CASES} differ, e.g. ${JSON.stringify(wrong.slice(0, 3))}`);
  }
  const names = differ("names");
  assert.equal(names.length, 0, `dedupeNames: ${names.length} of ${NAME_CASES} differ, e.g. ${JSON.stringify(names.slice(0, 3))}`);
  for (const field of ["refused", "any", "all", "error", "names", "weights"]) {
    const wrong = differ("combines", field).filter((w) => JSON.stringify(w.ours) !== JSON.stringify(w.hud));
    assert.equal(
      wrong.length,
      0,
      `combine ${field}: ${wrong.length} of ${COMBINE_CASES} differ, e.g. ${JSON.stringify(wrong.slice(0, 3))}`,
    );
  }
  const scores = differ("combines", "score");
  assert.equal(scores.length, 0, `combine score: ${scores.length} differ, e.g. ${JSON.stringify(scores.slice(0, 3))}`);
  // the cases reach what they are for: equal and unequal text, refusals, renamings and combine's refusal
  assert.ok(mine.text.filter((c) => c.exactRaw === 1).length > 100);
  assert.ok(mine.text.filter((c) => c.exactRaw === 0).length > 100);
  assert.ok(mine.combines.filter((c) => c.refused).length > 50);
  assert.ok(mine.combines.filter((c) => "error" in c).length > 50);
  assert.ok(mine.names.filter((n, i) => JSON.stringify(n) !== JSON.stringify(input.names[i])).length > 500);
});
