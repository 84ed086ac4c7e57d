// Every stored grader served over the reward-server protocol, for trainers that speak it
// without our SDK: …/graders/{key}/reward/score, /batch_score, /info, /metadata_schema. Same
// auth as the rest of /v1. The protocol has no per-item error: a batch with an item that fails
// is answered with that item's error (422/502 with its code and `index`), as /score would be.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { GradeOutcome } from "../../sandbox/checks.ts";
import type { WireThread } from "../../sdk/thread.ts";
import { authenticate } from "../auth.ts";
import type { Config } from "../config.ts";
import { RewardTurn } from "../endpoints/protocol.ts";
import { AppError } from "../errors.ts";
import type { Grading } from "../grading.ts";
import { ErrorResponses, GraderParams, MAX_METADATA_DEPTH, nestsDeeperThan } from "../schemas.ts";
import type { Store } from "../store.ts";

const Id = z.union([z.string().max(256), z.number().int()]).optional();
const RewardOut = z.object({ reward: z.number(), metadata: z.record(z.string(), z.unknown()), id: Id });

export async function rewardRoutes(fastify: FastifyInstance, opts: { config: Config; store: Store; grading: Grading }) {
  const { config, store, grading } = opts;
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addHook("onRequest", authenticate(store.keys));
  const Turn = RewardTurn.extend({
    content: z.string().max(config.maxContent, `content is longer than ${config.maxContent} characters (GRADEBOX_MAX_CONTENT)`),
  });
  const Request = z.strictObject({
    turns: z
      .array(Turn)
      .min(1, "a thread needs at least one turn")
      .max(config.maxTurns, `at most ${config.maxTurns} turns (GRADEBOX_MAX_TURNS)`),
    metadata: z
      .record(z.string(), z.unknown())
      .nullable()
      .optional()
      .refine((m) => !m || !nestsDeeperThan(m, MAX_METADATA_DEPTH), `metadata nests more than ${MAX_METADATA_DEPTH} levels`),
    id: Id,
  });
  const base = "/v1/projects/:project/graders/:graderKey/reward";

  async function grade(project: string, key: string, requests: Array<z.infer<typeof Request>>, route: "grade" | "grade-batch") {
    const threads: WireThread[] = requests.map((r) => ({ turns: r.turns, metadata: r.metadata ?? {} }));
    return (await grading.gradeByKey(project, key, threads, { route })).outcomes;
  }
  const answer = (outcome: GradeOutcome, request: z.infer<typeof Request>, index?: number) => {
    if ("error" in outcome) {
      const { code, message, line, column } = outcome.error;
      const where = index === undefined ? "" : `request ${index}: `;
      throw new AppError(code, `${where}${message}`, {
        ...(index === undefined ? {} : { index }),
        ...(line === undefined ? {} : { line, column }),
      });
    }
    return { reward: outcome.score, metadata: outcome.metadata ?? {}, ...(request.id === undefined ? {} : { id: request.id }) };
  };

  app.get(
    `${base}/info`,
    {
      schema: {
        operationId: "reward.info",
        params: GraderParams,
        response: { 200: z.object({ version: z.string(), name: z.string(), description: z.string() }), ...ErrorResponses },
      },
    },
    async (req) => {
      const row = store.mustGet(req.params.project, req.params.graderKey);
      return { version: String(row.version), name: row.key, description: row.description };
    },
  );

  app.get(
    `${base}/metadata_schema`,
    {
      schema: {
        operationId: "reward.metadataSchema",
        params: GraderParams,
        response: { 200: z.record(z.string(), z.unknown()), ...ErrorResponses },
      },
    },
    async (req) => {
      const row = store.mustGet(req.params.project, req.params.graderKey);
      const schema = row.kind === "endpoint" ? row.endpoint?.metadataSchema : undefined;
      return schema && typeof schema === "object" ? (schema as Record<string, unknown>) : { type: "object" };
    },
  );

  app.post(
    `${base}/score`,
    { schema: { operationId: "reward.score", params: GraderParams, body: Request, response: { 200: RewardOut, ...ErrorResponses } } },
    async (req) => {
      const [outcome] = await grade(req.params.project, req.params.graderKey, [req.body], "grade");
      return answer(outcome, req.body);
    },
  );

  app.post(
    `${base}/batch_score`,
    {
      schema: {
        operationId: "reward.batchScore",
        params: GraderParams,
        body: z.strictObject({
          requests: z.array(Request).min(1).max(config.maxBatch, `a batch holds at most ${config.maxBatch} requests (GRADEBOX_MAX_BATCH)`),
        }),
        response: { 200: z.object({ responses: z.array(RewardOut) }), ...ErrorResponses },
      },
    },
    async (req) => {
      const { requests } = req.body;
      const outcomes = await grade(req.params.project, req.params.graderKey, requests, "grade-batch");
      return { responses: outcomes.map((o, i) => answer(o, requests[i], i)) };
    },
  );
}
