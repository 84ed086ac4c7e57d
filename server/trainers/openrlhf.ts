// OpenRLHF's remote reward model, as its client (openrlhf/utils/agent.py, SingleTurnAgentExecutor)
// calls it: POST {"query": [prompt + response, decoded with special tokens], "prompts": [...],
// "labels": [...]} and reads {"rewards", "scores", "extra_logs"}. Pure functions: the route
// (routes/openrlhf.ts) authenticates, grades and sends.
//
// What OpenRLHF survives decides the answer's form:
// - every value is a list aligned with `query`, as its own serve_rm answers: it turns each
//   answer's value into a tensor and concatenates them, so a bare number in one answer and a
//   list in another breaks the step;
// - a reward is always a number: null crashes the step later and NaN turns the whole group's
//   advantages into NaN, so a sample the grader abstained on or failed gets the token's
//   `fallback` (default 0.0) and is counted in extra_logs;
// - extra_logs has the same keys in every answer: it batches samples by the first one's keys,
//   and a key missing from another sample fails the batch.

import { z } from "zod";
import type { GradeOutcome } from "../../sandbox/validate/checks.ts";
import { componentsOf } from "../../sdk/summary.ts";
import type { WireThread } from "../../sdk/thread.ts";
import type { Config } from "../config.ts";
import { MAX_METADATA_DEPTH, nestsDeeperThan } from "../schemas.ts";
import type { GradeTokenOptions } from "./token-options.ts";

export function requestSchema(config: Pick<Config, "maxBatch">) {
  return z
    .strictObject({
      query: z
        .array(z.string())
        .max(config.maxBatch, `at most ${config.maxBatch} samples a request (GRADEBOX_MAX_BATCH)`)
        .describe("prompt + response of each sample, as OpenRLHF decodes them (special tokens included)"),
      prompts: z.array(z.string()).describe("each sample's prompt, as OpenRLHF gave it to the model"),
      labels: z.array(z.unknown()).optional().describe("each sample's label (its --data.label_key column)"),
    })
    .refine((b) => b.prompts.length === b.query.length && (b.labels === undefined || b.labels.length === b.query.length), {
      message: "query, prompts and labels must hold one entry per sample each",
    });
}
export type OpenRlhfRequest = z.infer<ReturnType<typeof requestSchema>>;

/** Where the prompt ends in `query`, ignoring differences of whitespace (a tokenizer's decode may add or drop a space). */
function endOfPromptLoosely(query: string, prompt: string): number | undefined {
  let q = 0;
  for (let p = 0; p < prompt.length; p++) {
    if (/\s/.test(prompt[p] as string)) continue;
    while (q < query.length && /\s/.test(query[q] as string)) q++;
    if (query[q] !== prompt[p]) return undefined;
    q++;
  }
  // a prompt ending in whitespace (a template's "assistant\n") takes the query's whitespace there with it
  if (/\s$/.test(prompt)) while (q < query.length && /\s/.test(query[q] as string)) q++;
  return q;
}

/** End-of-turn markers trimmed from one response at most: real completions end with one or two. */
export const MAX_TRIMS = 8;

/** The response in `query`: the prompt cut from its front, the end-of-turn markers from its end. */
export function responseOf(
  query: string,
  prompt: string,
  options: Pick<GradeTokenOptions, "strip" | "stopStrings">,
): { response: string; promptFound: boolean } {
  let response = query;
  let promptFound = true;
  if (options.strip === "prompt") {
    if (query.startsWith(prompt)) response = query.slice(prompt.length);
    else {
      const end = endOfPromptLoosely(query, prompt);
      if (end === undefined) promptFound = false;
      else response = query.slice(end);
    }
  }
  // repeatedly: a completion may end with two markers (<|im_end|> then <|endoftext|>); at most
  // MAX_TRIMS of them, so that a one-character stop string over a 10 MB run of it costs nothing
  let trims = 0;
  for (let trimmed = true; trimmed && trims < MAX_TRIMS; ) {
    trimmed = false;
    for (const stop of options.stopStrings) {
      if (trims < MAX_TRIMS && response.endsWith(stop)) {
        trims++;
        response = response.slice(0, -stop.length);
        trimmed = true;
      }
    }
  }
  return { response, promptFound };
}

/** A sample refused before grading, and why. */
export interface Refused {
  code: "PROMPT_MISMATCH" | "CONTENT_TOO_LONG" | "INVALID_LABEL" | "INVALID_THREAD";
  message: string;
}

/** Each sample's thread (user: the prompt; assistant: the response; metadata: the label), or why it is not graded. */
export function threadsOf(
  body: OpenRlhfRequest,
  options: GradeTokenOptions,
  config: Pick<Config, "maxContent">,
): { threads: Array<WireThread | Refused>; promptMismatch: boolean[] } {
  const promptMismatch: boolean[] = [];
  const threads = body.query.map((query, i): WireThread | Refused => {
    const prompt = body.prompts[i] as string;
    const { response, promptFound } = responseOf(query, prompt, options);
    promptMismatch.push(!promptFound);
    if (!promptFound && options.onPromptMismatch === "error") {
      return { code: "PROMPT_MISMATCH", message: `sample ${i}: query does not start with its prompt (even ignoring whitespace)` };
    }
    if (prompt.length > config.maxContent || response.length > config.maxContent) {
      return {
        code: "CONTENT_TOO_LONG",
        message: `sample ${i}: a turn is longer than ${config.maxContent} characters (GRADEBOX_MAX_CONTENT)`,
      };
    }
    const label = body.labels?.[i] ?? null;
    if (nestsDeeperThan({ label }, MAX_METADATA_DEPTH)) {
      return { code: "INVALID_LABEL", message: `sample ${i}: its label nests more than ${MAX_METADATA_DEPTH} levels` };
    }
    return {
      turns: [
        { role: "user", content: prompt },
        { role: "assistant", content: response },
      ],
      metadata: { [options.labelKey]: label },
    };
  });
  return { threads, promptMismatch };
}

export const isRefused = (t: WireThread | Refused): t is Refused => "code" in t;

export interface OpenRlhfAnswer {
  rewards: number[];
  scores: number[];
  extra_logs: Record<string, number[]>;
}

/**
 * The answer: a reward per sample (the fallback where there is no score), `scores` the same
 * numbers (OpenRLHF filters on them), and extra_logs with one 0/1 flag per sample for each outcome
 * (their sum counts them; their mean, in the trainer's logs, is a rate) and `component/<name>`
 * per component named.
 */
export function answerOf(
  outcomes: ReadonlyArray<GradeOutcome | Refused>,
  promptMismatch: readonly boolean[],
  options: GradeTokenOptions,
  componentNames: readonly string[],
): OpenRlhfAnswer {
  const flag = (test: (o: GradeOutcome | Refused) => boolean) => outcomes.map((o) => (test(o) ? 1 : 0));
  const scored = (o: GradeOutcome | Refused): o is Extract<GradeOutcome, { score: number }> =>
    "score" in o && typeof o.score === "number" && Number.isFinite(o.score);
  const rewards = outcomes.map((o) => (scored(o) ? o.score : options.fallback));
  const extra: Record<string, number[]> = {
    "gradebox/scored": flag(scored),
    "gradebox/abstained": flag((o) => "abstained" in o),
    "gradebox/errored": flag((o) => !scored(o) && !("abstained" in o)),
    "gradebox/prompt_mismatch": promptMismatch.map((m) => (m ? 1 : 0)),
  };
  const channels = componentsOf(outcomes.map((o) => (isRefusedOutcome(o) ? { error: o } : o))) ?? {};
  for (const name of componentNames) {
    extra[`component/${name}`] = outcomes.map((_, i) => channels[name]?.[i] ?? options.fallback);
  }
  return { rewards, scores: [...rewards], extra_logs: extra };
}

const isRefusedOutcome = (o: GradeOutcome | Refused): o is Refused => "code" in o && "message" in o && !("error" in o);
