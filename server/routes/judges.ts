// Judge graders: create a binary, pre-built or rubric judge, and show the prompt a judge sends
// for a thread. Listing, getting, locking, deleting and grading are the graders routes'.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { Config } from "../config.ts";
import {
  BinaryJudge,
  type BinaryJudgeSpec,
  ModelKey,
  PrebuiltJudge,
  type PrebuiltJudgeSpec,
  RubricJudge,
  type RubricJudgeSpec,
} from "../judges/spec.ts";
import { named } from "../openapi.ts";
import {
  Description,
  errorResponses,
  GraderDetail,
  GraderKey,
  GraderParams,
  IN_PROJECT,
  json,
  MAX_SAMPLES,
  ProjectParams,
  threadSchema,
  WITH_BODY,
} from "../schemas.ts";
import type { JudgeGraders } from "../services/judge-graders.ts";
import { detail } from "./views.ts";

export async function judgeRoutes(fastify: FastifyInstance, opts: { config: Config; judgeGraders: JudgeGraders }) {
  const { config, judgeGraders } = opts;
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const Thread = threadSchema(config);
  const base = "/v1/projects/:project/graders";
  const common = {
    key: GraderKey.describe("the new grader's key, unique in the project"),
    judgeModel: ModelKey.describe("the key of one of the project's models (POST …/models): the model that judges"),
    description: Description,
  };
  /** What creating a judge can answer: its model must exist, its key must be free. */
  const creating = [...IN_PROJECT, ...WITH_BODY, "MODEL_NOT_FOUND", "GRADER_EXISTS", "QUOTA_EXCEEDED"] as const;

  app.post(
    `${base}/binary-judge`,
    {
      schema: {
        operationId: "graders.create.binaryJudge",
        tags: ["judges"],
        summary: "Create a binary judge",
        description:
          "A judge grader whose model decides whether a completion meets `criteria`: PASS scores 1, FAIL 0. The prompt is ours " +
          "or your Handlebars `template`, which must render on the samples (or a built-in thread), else 422 VALIDATION_FAILED " +
          "with check `template`; no model is called. An unknown judgeModel answers 404 MODEL_NOT_FOUND.",
        params: ProjectParams,
        body: z
          .object({
            ...common,
            criteria: BinaryJudge.shape.criteria,
            template: BinaryJudge.shape.template,
            templateVariables: BinaryJudge.shape.templateVariables,
            feedbackKey: BinaryJudge.shape.feedbackKey,
            samples: z
              .array(z.object({ thread: Thread }))
              .max(MAX_SAMPLES)
              .optional()
              .describe("threads the template must render on (instead of the built-in one); no model is called"),
          })
          .describe("a binary judge: its model, its criteria and optionally its own prompt template"),
        response: { 201: json("The created judge grader", GraderDetail), ...errorResponses(...creating, "VALIDATION_FAILED") },
      },
    },
    async (req, reply) => {
      const { key, judgeModel, description, criteria, template, templateVariables, feedbackKey, samples } = req.body;
      // the body's fields are the spec's own schemas: already validated
      const spec: BinaryJudgeSpec = { type: "binary", model: judgeModel, criteria, template, templateVariables, feedbackKey };
      const row = await judgeGraders.create(req.params.project, { key, description, spec, samples: samples?.map((s) => s.thread) });
      return reply.code(201).send(detail(row));
    },
  );

  app.post(
    `${base}/prebuilt-judge`,
    {
      schema: {
        operationId: "graders.create.prebuiltJudge",
        tags: ["judges"],
        summary: "Create a pre-built judge",
        description:
          "A judge grader for a pre-built metric (FAITHFULNESS, CONTEXT_RELEVANCY or ANSWER_RELEVANCY) that the project's model " +
          "`judgeModel` scores from 0 to 1. An unknown judgeModel answers 404 MODEL_NOT_FOUND.",
        params: ProjectParams,
        body: z
          .object({ ...common, type: PrebuiltJudge.shape.metric.describe("the metric the judge scores") })
          .describe("a pre-built judge: its model and its metric"),
        response: { 201: json("The created judge grader", GraderDetail), ...errorResponses(...creating) },
      },
    },
    async (req, reply) => {
      const { key, judgeModel, description, type } = req.body;
      const spec: PrebuiltJudgeSpec = { type: "prebuilt", model: judgeModel, metric: type };
      return reply.code(201).send(detail(await judgeGraders.create(req.params.project, { key, description, spec })));
    },
  );

  app.post(
    `${base}/rubric-judge`,
    {
      schema: {
        operationId: "graders.create.rubricJudge",
        tags: ["judges"],
        summary: "Create a rubric judge",
        description:
          "A judge grader whose model assesses each criterion of a rubric; the score is the criteria's weighted mean (negative " +
          "weights are penalties). `cannotAssess` decides how a criterion the model cannot assess counts. An unknown judgeModel " +
          "answers 404 MODEL_NOT_FOUND.",
        params: ProjectParams,
        body: z
          .object({
            ...common,
            criteria: RubricJudge.shape.criteria,
            cannotAssess: RubricJudge.shape.cannotAssess,
            partialCredit: RubricJudge.shape.partialCredit,
          })
          .describe("a rubric judge: its model and its criteria"),
        response: { 201: json("The created judge grader", GraderDetail), ...errorResponses(...creating) },
      },
    },
    async (req, reply) => {
      const { key, judgeModel, description, criteria, cannotAssess, partialCredit } = req.body;
      const spec: RubricJudgeSpec = { type: "rubric", model: judgeModel, criteria, cannotAssess, partialCredit };
      return reply.code(201).send(detail(await judgeGraders.create(req.params.project, { key, description, spec })));
    },
  );

  app.post(
    `${base}/:graderKey/prompt`,
    {
      schema: {
        operationId: "graders.prompt",
        tags: ["judges"],
        summary: "Show a judge's prompt",
        description:
          "The messages a judge grader would send its model for the thread (its first request); nothing is sent. Another kind of " +
          "grader answers 400; a template that fails on the thread 422 GRADER_ERROR (over its render budget of 1,000,000 characters, " +
          "also a fault of the grader, as when grading); a thread the judge cannot grade 422 INVALID_THREAD.",
        params: GraderParams,
        body: z.object({ thread: Thread }).describe("the thread to render the prompt for"),
        response: {
          200: json(
            "The prompt",
            named(config, "JudgePrompt", () =>
              z
                .object({
                  messages: z
                    .array(
                      z
                        .object({
                          role: z.enum(["system", "user", "assistant"]).describe("the message's role"),
                          content: z.string().describe("its text"),
                        })
                        .describe("one chat message"),
                    )
                    .describe("the chat messages, in order"),
                })
                .describe("the judge's first request to its model"),
            ),
          ),
          ...errorResponses(...IN_PROJECT, ...WITH_BODY, "GRADER_NOT_FOUND", "GRADER_ERROR", "INVALID_THREAD"),
        },
      },
    },
    async (req) => ({ messages: await judgeGraders.prompt(req.params.project, req.params.graderKey, req.body.thread) }),
  );
}
