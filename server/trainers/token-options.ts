// What a grade token says about turning a trainer's request into threads: stored with the token
// (its defaults written out at creation, so a later change of defaults does not change a live
// token's rewards) and overridable per request where a trainer lets the URL carry a query string.

import { z } from "zod";
import { AppError } from "../errors.ts";

/**
 * Special tokens a decoded completion commonly ends with (OpenRLHF decodes with
 * skip_special_tokens=False, so the end-of-turn marker is part of the text): trimmed from the end
 * of the response unless the token names its own list.
 */
export const DEFAULT_STOP_STRINGS = ["<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<|end|>", "<end_of_turn>", "</s>"];

const Name = z
  .string()
  .min(1)
  .max(128, "a name is at most 128 characters")
  .regex(/^[^,\s]+$/, "a name has no commas or spaces (OpenRLHF splits its URL list on commas)");

const FIELDS = {
  labelKey: Name.describe("the metadata field OpenRLHF's labels[i] goes into (default label)"),
  strip: z
    .enum(["prompt", "none"])
    .describe("prompt: the response is query[i] without prompts[i] in front (default); none: the response is query[i] whole"),
  onPromptMismatch: z
    .enum(["whole", "error"])
    .describe(
      "when query[i] does not start with prompts[i], even ignoring whitespace: whole grades query[i] whole as the response (default), error fails the sample (PROMPT_MISMATCH)",
    ),
  stopStrings: z
    .array(z.string().min(1).max(64))
    .max(16)
    .describe("special tokens trimmed from the end of a response, repeatedly (default: the common end-of-turn markers)"),
  fallback: z
    .number()
    .finite()
    .describe("the reward of a sample the grader abstained on or failed (default 0): trainers cannot take null, and NaN poisons a group"),
  components: z
    .array(Name)
    .max(32)
    .describe(
      "the subscores OpenRLHF logs, each as component/<name> in extra_logs, the fallback where a sample has none (OpenRLHF needs the same keys in every answer); default: a combined grader's parts, none otherwise",
    ),
};

/** The options as stored and used: every default written out (components absent: the grader's default). */
export const GradeTokenOptions = z.strictObject({
  labelKey: FIELDS.labelKey.default("label"),
  strip: FIELDS.strip.default("prompt"),
  onPromptMismatch: FIELDS.onPromptMismatch.default("whole"),
  stopStrings: FIELDS.stopStrings.default(DEFAULT_STOP_STRINGS),
  fallback: FIELDS.fallback.default(0),
  components: FIELDS.components.optional(),
});
/** The options as a request gives them: each optional, no defaults in the schema (a generated client would make them required). */
export const GradeTokenOptionsInput = z
  .strictObject({
    labelKey: FIELDS.labelKey.optional(),
    strip: FIELDS.strip.optional(),
    onPromptMismatch: FIELDS.onPromptMismatch.optional(),
    stopStrings: FIELDS.stopStrings.optional(),
    fallback: FIELDS.fallback.optional(),
    components: FIELDS.components.optional(),
  })
  .describe("how a trainer's requests become threads, and what a sample without a score is rewarded; absent fields take their defaults");
/** The options as an answer states them. */
export const GradeTokenOptionsOut = z
  .object({ ...FIELDS, components: FIELDS.components.optional() })
  .describe("how a trainer's requests become threads, and what a sample without a score is rewarded")
  .meta({ id: "GradeTokenOptions" });
export type GradeTokenOptions = z.infer<typeof GradeTokenOptions>;

/** What a request's query string may change (one value each: a URL in OpenRLHF's list holds no comma). */
export const RequestOverrides = z
  .strictObject({
    label: Name.optional(),
    strip: z.enum(["prompt", "none"]).optional(),
    mismatch: z.enum(["whole", "error"]).optional(),
    fallback: z.coerce.number().finite().optional(),
  })
  .describe("per-request overrides of the token's options");

export function withOverrides(options: GradeTokenOptions, query: unknown): GradeTokenOptions {
  const parsed = RequestOverrides.safeParse(query ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? `query parameter ${issue.path.join(".")}: ` : "query string: ";
    throw new AppError(
      "INVALID_REQUEST",
      `${where}${issue?.message ?? "invalid"}. The query string takes label=<metadata field>, strip=prompt|none, mismatch=whole|error, fallback=<number>`,
    );
  }
  const o = parsed.data;
  return {
    ...options,
    ...(o.label === undefined ? {} : { labelKey: o.label }),
    ...(o.strip === undefined ? {} : { strip: o.strip }),
    ...(o.mismatch === undefined ? {} : { onPromptMismatch: o.mismatch }),
    ...(o.fallback === undefined ? {} : { fallback: o.fallback }),
  };
}
