// The benchmark's corpus: realistic threads (a system prompt, a user turn, an assistant
// completion of 200–2,000 characters, metadata) made from a fixed seed, and the grader sources.

import { readFileSync } from "node:fs";
import type { WireThread } from "../sdk/thread.ts";

/** mulberry32: a small seeded PRNG, so every run grades the same corpus */
function rng(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS =
  "the model answer reasoning step value result capital city france paris json object name email age number total because therefore however which".split(
    " ",
  );

export function makeThreads(n: number, seed = 42): WireThread[] {
  const r = rng(seed);
  const pick = () => WORDS[Math.floor(r() * WORDS.length)];
  return Array.from({ length: n }, (_, i) => {
    const length = 200 + Math.floor(r() * 1800);
    let completion = "";
    if (i % 4 === 1) completion = JSON.stringify({ name: "Ada", email: "ada@example.com", age: 36, note: "" });
    while (completion.length < length) completion += `${pick()} `;
    if (i % 3 === 0) completion += " The answer is 42.";
    return {
      turns: [
        { role: "system", content: "You are a careful assistant. Answer precisely and show your reasoning." },
        { role: "user", content: `Question ${i}: what is the answer, and why? Reply in JSON when asked.` },
        { role: "assistant", content: completion.trim() },
      ],
      metadata: { expected: i % 5 === 0 ? completion.trim() : "42", pattern: "\\b42\\b", keywords: ["paris", "json", "answer", "because"] },
    };
  });
}

const example = (name: string) => readFileSync(new URL(`../examples/${name}`, import.meta.url), "utf8");

export const GRADERS: Record<string, string> = {
  "exact-match": `async function grade(thread) {
  const completion = thread.completion() ?? "";
  const expected = thread.metadata.expected ?? "";
  return completion.trim() === String(expected).trim() ? 1.0 : 0.0;
}`,
  "regex-match": example("regex-match.ts"),
  "json-shape": example("json-shape.ts"),
  keywords: example("keywords.ts"),
  // ~50 µs natively per item, the middle: three regex scans and token F1 of the answer against the question
  medium: `import type { StringThread } from "gradebox";
import { f1Score } from "gradebox/graders";

const CHECKS = [/\\b42\\b/g, /\\b(?:because|therefore|however)\\b/gi, /\\b(?:paris|france)\\b/gi];

async function grade(thread: StringThread) {
  const completion = thread.completion() ?? "";
  let hits = 0;
  for (const re of CHECKS) {
    re.lastIndex = 0;
    hits += (completion.match(re) ?? []).length;
  }
  const question = thread.messages().find((turn) => turn[0] === "user")?.[1] ?? "";
  return { score: f1Score(completion, question), metadata: { hits } };
}`,
  // ~100 µs natively per item: six regex scans and token F1 against the expected answer and the prompt
  heavy: `import type { StringThread } from "gradebox";
import { f1Score, normalize } from "gradebox/graders";

const CHECKS = [/\\b42\\b/g, /\\b(?:paris|france)\\b/gi, /\\b(?:because|therefore|however)\\b/gi, /"[a-z]+"\\s*:/g, /[.!?]\\s+[A-Z]\\w*/g, /\\b\\w{8,}\\b/g];

async function grade(thread: StringThread) {
  const completion = thread.completion() ?? "";
  const lower = completion.toLowerCase();
  let hits = 0;
  for (const re of CHECKS) {
    re.lastIndex = 0;
    hits += (completion.match(re) ?? []).length;
  }
  const expected = String(thread.metadata.expected ?? "");
  const f1 = f1Score(completion, expected);
  const words = normalize(lower).split(" ");
  const keywords = (thread.metadata.keywords ?? []) as string[];
  const kw = keywords.filter((k) => words.includes(k)).length / Math.max(1, keywords.length);
  const prompt = thread.messages().map((turn) => turn[1]).join("\\n");
  const relevance = f1Score(prompt, completion);
  return { score: (f1 + kw) / 2, metadata: { hits, words: words.length, relevance } };
}`,
};
