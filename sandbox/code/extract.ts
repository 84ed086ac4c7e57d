// Finding the program in a completion. The rule (docs/code-graders.md "Which code runs"):
//   1. the last fenced block (``` or ~~~, CommonMark-style) whose info tag names an accepted
//      language (python, py, python3, py3 / javascript, js, node, nodejs, mjs, cjs /
//      typescript, ts, mts, cts);
//   2. else the last fenced block without a tag, in the spec's first language;
//   3. else, with extract "fenced_or_whole", the whole completion in the first language;
//      with "fenced", no program (the item scores 0: writing no code is the policy's failure).
// A block tagged with another language (```cpp) is never run. An unclosed fence runs to the end of
// the completion (a truncated answer is still the answer). "whole" skips 1–2.

import type { CodeLanguage } from "./run.ts";
import type { CodeSpec } from "./spec.ts";

const TAGS: Record<string, CodeLanguage> = {
  python: "python",
  py: "python",
  python3: "python",
  py3: "python",
  javascript: "javascript",
  js: "javascript",
  node: "javascript",
  nodejs: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  typescript: "typescript",
  ts: "typescript",
  mts: "typescript",
  cts: "typescript",
};

export const languageOfTag = (tag: string): CodeLanguage | undefined => TAGS[tag.toLowerCase()];

export interface Program {
  language: CodeLanguage;
  code: string;
  /** where it came from: a tagged block, an untagged block, or the whole completion */
  from: "tagged" | "untagged" | "whole";
}

interface Block {
  tag: string;
  code: string;
}

/**
 * An opening fence line: up to 3 spaces, 3 or more ` or ~, then the info tag (up to the first
 * whitespace) and a rest without a backtick. A hand-written scan: the regular expression it
 * replaces backtracked quadratically on a long tag ("```" + "a" * 32000 + "`" took a second).
 */
function openFence(line: string): { fence: string; tag: string } | undefined {
  let i = 0;
  while (i < 3 && line[i] === " ") i++;
  const c = line[i];
  if (c !== "`" && c !== "~") return undefined;
  const start = i;
  while (line[i] === c) i++;
  if (i - start < 3) return undefined;
  const fence = line.slice(start, i);
  while (line[i] === " " || line[i] === "\t") i++;
  const tagStart = i;
  while (i < line.length && line[i] !== "`" && !/\s/.test(line[i])) i++;
  const tag = line.slice(tagStart, i);
  if (line.indexOf("`", i) !== -1) return undefined;
  return { fence, tag };
}

/** The fenced blocks of a text, in order (a linear scan: no regular expression backtracks over the whole text). */
export function fencedBlocks(text: string): Block[] {
  const lines = text.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = openFence(lines[i].replace(/\r$/, ""));
    if (!open) continue;
    const fence = open.fence;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const line = lines[j].replace(/\r$/, "");
      const trimmed = line.trim();
      if (trimmed.length >= fence.length && trimmed[0] === fence[0] && /^(`+|~+)$/.test(trimmed)) break;
      body.push(line);
    }
    blocks.push({ tag: open.tag, code: body.join("\n") });
    i = j;
  }
  return blocks;
}

/** The program to run, by the rule above; undefined when there is none. */
export function extractProgram(completion: string, spec: Pick<CodeSpec, "languages" | "extract">): Program | undefined {
  const first = spec.languages[0];
  if (spec.extract !== "whole") {
    const blocks = fencedBlocks(completion);
    for (let i = blocks.length - 1; i >= 0; i--) {
      const language = languageOfTag(blocks[i].tag);
      if (language && spec.languages.includes(language)) return { language, code: blocks[i].code, from: "tagged" };
    }
    for (let i = blocks.length - 1; i >= 0; i--) {
      if (blocks[i].tag === "") return { language: first, code: blocks[i].code, from: "untagged" };
    }
    if (spec.extract === "fenced") return undefined;
  }
  return completion.trim() === "" ? undefined : { language: first, code: completion, from: "whole" };
}
