// Judge graders: create a binary, pre-built or rubric judge, and show the prompt a judge sends
// for a thread. Listing, getting, locking, deleting and grading are the graders routes'.

import { createHash } from "node:crypto";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { MOCK_THREAD } from "../../sandbox/checks.ts";
import type { WireThread } from "../../sdk/thread.ts";
import { authenticate } from "../auth.ts";
import type { Config } from "../config.ts";
import { AppError } from "../errors.ts";
import type { Grading } from "../grading.ts";
import { judgeItemError } from "../judges/judges.ts";
import { binaryPrompt, binaryTemplate, ThreadUnfit } from "../judges/kinds.ts";
import {
  BinaryJudge,
  type BinaryJudgeSpec,
  type JudgeSpec,
  ModelKey,
  PrebuiltJudge,
  type PrebuiltJudgeSpec,
  RubricJudge,
  type RubricJudgeSpec,
} from "../judges/spec.ts";
import { type CompiledTemplate, TemplateError } from "../judges/template.ts";
import {
  Description,
  ErrorResponses,
  GraderDetail,
  GraderKey,
  GraderParams,
  MAX_SAMPLES,
  ProjectParams,
  threadSchema,
} from "../schemas.ts";
import type { Store } from "../store.ts";
import { detail } from "./graders.ts";

export async function judgeRoutes(fastify: FastifyInstance, opts: { config: Config; store: Store; grading: Grading }) {
  const { config, store, grading } = opts;
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addHook("onRequest", authenticate(store.keys));
  const Thread = threadSchema(config);
  const base = "/v1/projects/:project/graders";
  const common = { key: GraderKey, judgeModel: ModelKey.describe("the key of one of the project's models"), description: Description };

  /** A binary judge's template must compile and render on every sample thread (or on the built-in one). */
  function checkTemplate(spec: BinaryJudgeSpec, samples: readonly WireThread[]): void {
    const refuse = (message: string, line?: number, column?: number) => {
      throw new AppError("VALIDATION_FAILED", `template check failed: ${message}`, {
        check: "template",
        message,
        ...(line === undefined ? {} : { line, column }),
      });
    };
    let template: CompiledTemplate;
    try {
      template = binaryTemplate(spec);
    } catch (error) {
      if (error instanceof TemplateError) refuse(error.message, error.line, error.column);
      throw error;
    }
    const threads = samples.length ? samples : [MOCK_THREAD as unknown as WireThread];
    for (const [i, thread] of threads.entries()) {
      const where = samples.length ? `sample ${i}` : "the built-in sample thread";
      try {
        binaryPrompt(spec, template, thread);
      } catch (error) {
        if (error instanceof TemplateError) refuse(`it fails on ${where}: ${error.message}`, error.line, error.column);
        if (error instanceof ThreadUnfit) refuse(`${where}: ${error.message}`);
        throw error;
      }
    }
  }

  function create(project: string, key: string, description: string, spec: JudgeSpec) {
    const sha256 = createHash("sha256").update(JSON.stringify(spec)).digest("hex");
    return detail(store.insertJudge({ project, key, description, spec, sha256 }));
  }

  app.post(
    `${base}/binary-judge`,
    {
      schema: {
        operationId: "graders.create.binaryJudge",
        params: ProjectParams,
        body: z.object({
          ...common,
          criteria: BinaryJudge.shape.criteria,
          template: BinaryJudge.shape.template,
          templateVariables: BinaryJudge.shape.templateVariables,
          samples: z
            .array(z.object({ thread: Thread }))
            .max(MAX_SAMPLES)
            .optional()
            .describe("threads the template must render on (instead of the built-in one); no model is called"),
        }),
        response: { 201: GraderDetail, ...ErrorResponses },
      },
    },
    async (req, reply) => {
      const { key, judgeModel, description, criteria, template, templateVariables, samples } = req.body;
      // the body's fields are the spec's own schemas: already validated
      const spec: BinaryJudgeSpec = { type: "binary", model: judgeModel, criteria, template, templateVariables };
      store.mustGetModel(req.params.project, judgeModel);
      checkTemplate(
        spec,
        (samples ?? []).map((s) => s.thread),
      );
      return reply.code(201).send(create(req.params.project, key, description, spec));
    },
  );

  app.post(
    `${base}/prebuilt-judge`,
    {
      schema: {
        operationId: "graders.create.prebuiltJudge",
        params: ProjectParams,
        body: z.object({ ...common, type: PrebuiltJudge.shape.metric }),
        response: { 201: GraderDetail, ...ErrorResponses },
      },
    },
    async (req, reply) => {
      const { key, judgeModel, description, type } = req.body;
      const spec: PrebuiltJudgeSpec = { type: "prebuilt", model: judgeModel, metric: type };
      return reply.code(201).send(create(req.params.project, key, description, spec));
    },
  );

  app.post(
    `${base}/rubric-judge`,
    {
      schema: {
        operationId: "graders.create.rubricJudge",
        params: ProjectParams,
        body: z.object({
          ...common,
          criteria: RubricJudge.shape.criteria,
          cannotAssess: RubricJudge.shape.cannotAssess,
          partialCredit: RubricJudge.shape.partialCredit,
        }),
        response: { 201: GraderDetail, ...ErrorResponses },
      },
    },
    async (req, reply) => {
      const { key, judgeModel, description, criteria, cannotAssess, partialCredit } = req.body;
      const spec: RubricJudgeSpec = { type: "rubric", model: judgeModel, criteria, cannotAssess, partialCredit };
      return reply.code(201).send(create(req.params.project, key, description, spec));
    },
  );

  app.post(
    `${base}/:graderKey/prompt`,
    {
      schema: {
        operationId: "graders.prompt",
        params: GraderParams,
        body: z.object({ thread: Thread }),
        response: {
          200: z.object({ messages: z.array(z.object({ role: z.enum(["system", "user", "assistant"]), content: z.string() })) }),
          ...ErrorResponses,
        },
      },
    },
    async (req) => {
      const row = store.mustGet(req.params.project, req.params.graderKey);
      if (row.kind !== "judge")
        throw new AppError("INVALID_REQUEST", `grader "${row.key}" is a ${row.kind} grader; only judges have prompts`);
      try {
        return { messages: grading.judges.prompt(grading.judgeTarget(row), req.body.thread) };
      } catch (error) {
        if (!(error instanceof TemplateError || error instanceof ThreadUnfit)) throw error;
        const { code, message, line, column } = judgeItemError(error);
        throw new AppError(code, message, line === undefined ? {} : { line, column });
      }
    },
  );
}
