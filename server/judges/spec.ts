// The one definition of a judge grader and of a judge model, as stored and as the API shows
// them: the routes, the store and the OpenAPI document read these schemas.

import { z } from "zod";
import { SecretEnvName, SecretName } from "../secrets/secrets.ts";
import { MAX_TEMPLATE_CHARS } from "./template.ts";

const KEY = /^[a-z0-9][a-z0-9._-]{0,127}$/;
export const ModelKey = z
  .string()
  .regex(KEY, "model key must match [a-z0-9][a-z0-9._-]{0,127}: lower-case letters, digits, '.', '_' or '-', at most 128 characters")
  .describe("a model key: lower-case letters, digits, '.', '_' or '-', at most 128 characters");

export const ModelCreate = z
  .object({
    key: ModelKey.describe("the model's key, unique in the project: judges name it as judgeModel"),
    baseURL: z
      .string()
      .max(2048)
      .url("baseURL must be an absolute URL, e.g. http://vllm.internal:8000/v1")
      .refine((u) => /^https?:\/\//i.test(u), "baseURL must be http:// or https://")
      .describe("an OpenAI-compatible API root (the URL before /chat/completions)"),
    model: z.string().min(1).max(256).describe("the model name sent in each request"),
    apiKeySecret: SecretName.optional().describe(
      "the project secret holding the API key (PUT /v1/projects/{project}/secrets/{name}); bound to this model's host at registration",
    ),
    apiKeyEnv: SecretEnvName.optional().describe(
      "a server environment secret holding the API key, granted to this project by the operator (GRADEBOX_SECRET_GRANTS); never stored",
    ),
    maxConcurrency: z.number().int().min(1).max(256).default(8).describe("requests in flight to this model at once"),
    timeoutMs: z.number().int().min(100).max(600_000).default(60_000).describe("milliseconds per attempt (a call is retried twice)"),
  })
  .describe("an OpenAI-compatible chat-completions model for judges");
export const Model = ModelCreate.extend({
  project: z.string().describe("the model's project"),
  maxConcurrency: z.number().describe("requests in flight to this model at once"),
  timeoutMs: z.number().describe("milliseconds per attempt"),
  createdAt: z.string().describe("ISO 8601"),
})
  .describe("a judge model (its API key is never shown: only the variable that holds it)")
  .meta({ id: "Model" });
export type ModelRow = z.infer<typeof Model> & { id: string };

const TemplateVariableValues = z
  .record(
    z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, "template variable names are identifiers of at most 64 characters"),
    z.string().max(10_000),
  )
  .refine((r) => Object.keys(r).length <= 32, "at most 32 template variables")
  .describe("values the template reads as {{name}}: at most 32, each at most 10 000 characters");

export const BinaryJudge = z
  .object({
    type: z.literal("binary"),
    model: ModelKey.describe("the judge's model"),
    criteria: z.string().min(1).max(10_000).describe("what a completion must do to PASS"),
    template: z.string().max(MAX_TEMPLATE_CHARS).optional().describe("a Handlebars template for the whole prompt; absent: ours"),
    templateVariables: TemplateVariableValues.optional(),
    feedbackKey: z
      .string()
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$/,
        "feedbackKey must be 1 to 128 letters, digits, '_', '.', ':', '/' or '-', starting with a letter or digit",
      )
      .optional()
      .describe(
        "the feedback key the judge's scores are written to (Adaptive's binary_judge(feedback_key=…)): stored, shown, and " +
          "named in every result's metadata as feedbackKey",
      ),
  })
  .describe("a binary judge: PASS (1) or FAIL (0) against its criteria")
  .meta({ id: "BinaryJudge" });

export const PREBUILT_METRICS = ["FAITHFULNESS", "CONTEXT_RELEVANCY", "ANSWER_RELEVANCY"] as const;
export const PrebuiltMetric = z.enum(PREBUILT_METRICS).describe("a pre-built judge's metric").meta({ id: "PrebuiltMetric" });
export const PrebuiltJudge = z
  .object({
    type: z.literal("prebuilt"),
    model: ModelKey.describe("the judge's model"),
    metric: PrebuiltMetric.describe("the pre-built metric scored, from 0 to 1"),
  })
  .describe("a pre-built judge: one metric")
  .meta({ id: "PrebuiltJudge" });

export const RubricOption = z
  .object({
    label: z.string().min(1).max(128).describe("what the judge may answer"),
    value: z.number().finite().describe("the criterion's score when chosen, 0 to 1; an na option's is never scored (any number)"),
    na: z.boolean().optional().describe("choosing it means the criterion cannot be assessed"),
  })
  // autorubric ignores an NA option's value, and so does scoreRubric: only a scored one must be in [0, 1]
  .refine((o) => o.na || (o.value >= 0 && o.value <= 1), { message: "an option's value is from 0 to 1", path: ["value"] })
  .describe("one answer of a multi-choice criterion")
  .meta({ id: "RubricOption" });
export const RubricCriterion = z
  .object({
    name: z.string().min(1).max(128).describe("the criterion's name, unique in the rubric"),
    requirement: z.string().min(1).max(4000).describe("what the completion must do to meet it"),
    weight: z.number().finite().min(-1000).max(1000).default(10).describe("negative: a penalty"),
    options: z.array(RubricOption).min(2).max(16).optional().describe("a multi-choice criterion: the judge picks one label"),
  })
  .refine(
    (c) => !c.options || c.options.filter((o) => !o.na).length >= 2,
    "a multi-choice criterion needs at least 2 options that are not na",
  )
  .describe("one criterion: met or not, or one of its options");
export const CANNOT_ASSESS = ["skip", "zero", "partial", "fail"] as const;
export const CannotAssess = z
  .enum(CANNOT_ASSESS)
  .describe(
    "a criterion the judge cannot assess (CANNOT_ASSESS, or an na option): skip leaves it out of the score; zero scores it 0; " +
      "partial gives it partialCredit (0 for a penalty); fail scores its worst case: UNMET (MET for a negative weight, a penalty), " +
      "or a multi-choice criterion's worst option. No strategy fails the thread",
  )
  .meta({ id: "CannotAssessStrategy" });
export const RubricJudge = z
  .object({
    type: z.literal("rubric"),
    model: ModelKey.describe("the judge's model"),
    criteria: z
      .array(RubricCriterion)
      .min(1)
      .max(50)
      .refine((cs) => new Set(cs.map((c) => c.name)).size === cs.length, "criterion names must be unique")
      .describe("the rubric: 1 to 50 criteria with unique names"),
    cannotAssess: CannotAssess.default("skip"),
    partialCredit: z.number().min(0).max(1).default(0.5).describe("the credit of a CANNOT_ASSESS criterion under 'partial'"),
  })
  .describe("a rubric judge: criteria scored one by one")
  .meta({ id: "RubricJudge" });

export const JudgeSpec = z
  .discriminatedUnion("type", [BinaryJudge, PrebuiltJudge, RubricJudge])
  .describe("a judge's definition, by type")
  .meta({ id: "JudgeSpec" });
export type JudgeSpec = z.infer<typeof JudgeSpec>;
export type BinaryJudgeSpec = z.infer<typeof BinaryJudge>;
export type PrebuiltJudgeSpec = z.infer<typeof PrebuiltJudge>;
export type RubricJudgeSpec = z.infer<typeof RubricJudge>;
