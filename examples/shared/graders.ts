// Two graders in one file, sharing a helper from ./text.ts: `gradebox push` stores one grader per
// exported async function, keyed by its name in kebab-case (word-count, mentions-answer).

import type { StringThread } from "gradebox";
import { words } from "./text.ts";

/** 1 for an answer of at most metadata.maxWords words (default 20), less the longer it runs. */
export async function wordCount(thread: StringThread): Promise<number> {
  const max = Number(thread.metadata.maxWords ?? 20);
  const n = words(thread.completion() ?? "").length;
  return n <= max ? 1 : max / n;
}

/** 1 when the answer contains every word of metadata.answer. */
export async function mentionsAnswer(thread: StringThread): Promise<number> {
  const said = new Set(words(thread.completion() ?? ""));
  return words(String(thread.metadata.answer ?? "")).every((w) => said.has(w)) ? 1 : 0;
}
