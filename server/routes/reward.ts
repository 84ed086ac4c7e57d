// Every stored grader served over the reward-server protocol, for trainers that speak it
// without our SDK: …/graders/{key}/reward/score, /batch_score, /info, /metadata_schema. Same
// auth as the rest of /v1. The protocol has no per-item error: a batch with an item that fails
// is answered with that item's error (422/502 with its code and `index`), as /score would be.
// GET …/reward/ws is the same protocol over a WebSocket (reward-socket.ts). The handlers are
// rewardProtocol's, shared with the grade-token address of the same protocol (reward-token.ts).

import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { GradeOutcome } from "../../sandbox/validate/checks.ts";
import type { WireThread } from "../../sdk/thread.ts";
import type { Config } from "../config.ts";
import { Id, RewardTurn } from "../endpoints/protocol.ts";
import { AppError } from "../errors.ts";
import type { Grading } from "../grading.ts";
import { named } from "../openapi.ts";
import type { Provenance } from "../results.ts";
import type { RewardSockets } from "../reward-sockets.ts";
import { errorResponses, GRADING, GraderParams, IN_PROJECT, json, MAX_METADATA_DEPTH, nestsDeeperThan, WITH_BODY } from "../schemas.ts";
import type { Store } from "../store.ts";
import { upgradeRequest, wantsUpgrade } from "../websocket.ts";
import { type Framing, serveRewardSocket } from "./reward-socket.ts";

const RewardOut = z
  .object({
    reward: z.number().describe("the grader's score"),
    metadata: z
      .record(z.string(), z.unknown())
      .describe("what the grader returned besides the score, and `gradebox.provenance`: which grader, version and source digest scored it"),
    id: Id,
  })
  .describe("one request's reward")
  .meta({ id: "RewardResponse" });
const RewardBatchResponse = z
  .object({ responses: z.array(RewardOut).describe("one per request, in order") })
  .describe("the batch's rewards")
  .meta({ id: "RewardBatchResponse" });
const RewardInfo = z
  .object({
    version: z.string().describe("the grader's current version"),
    name: z.string().describe("the grader's key"),
    description: z.string().describe("the grader's description"),
  })
  .describe("what the reward server is")
  .meta({ id: "RewardInfo" });

/** The protocol's request schemas and handlers, by project and grader: what every address of the protocol serves. */
export function rewardProtocol({ config, store, grading, rewardSockets }: RewardServices) {
  const Turn = RewardTurn.extend({
    content: z
      .string()
      .max(config.maxContent, `content is longer than ${config.maxContent} characters (GRADEBOX_MAX_CONTENT)`)
      .describe("what was said"),
  }).describe("one turn of the conversation");
  const Request = named(config, "RewardRequest", () =>
    z
      .strictObject({
        turns: z
          .array(Turn)
          .min(1, "a thread needs at least one turn")
          .max(config.maxTurns, `at most ${config.maxTurns} turns (GRADEBOX_MAX_TURNS)`)
          .describe("the conversation, in order"),
        metadata: z
          .record(z.string(), z.unknown())
          .nullable()
          .optional()
          .refine((m) => !m || !nestsDeeperThan(m, MAX_METADATA_DEPTH), `metadata nests more than ${MAX_METADATA_DEPTH} levels`)
          .describe("the thread's metadata (null: none); an endpoint grader checks it against its metadata schema"),
        id: Id,
      })
      .describe("one reward-server protocol request: a conversation to score (no other fields)"),
  );
  const BatchRequest = z
    .strictObject({
      requests: z
        .array(Request)
        .min(1)
        .max(config.maxBatch, `a batch holds at most ${config.maxBatch} requests (GRADEBOX_MAX_BATCH)`)
        .describe("the requests, in order"),
    })
    .describe("a batch of reward-server protocol requests");
  type Request = z.infer<typeof Request>;

  async function grade(project: string, key: string, requests: Request[], route: "grade" | "grade-batch", signal?: AbortSignal) {
    const threads: WireThread[] = requests.map((r) => ({ turns: r.turns, metadata: r.metadata ?? {} }));
    return grading.gradeByKey(project, key, threads, { route, clientGone: signal });
  }
  /** the protocol's answer has no room of its own for provenance: it travels in each reward's metadata, under `gradebox` */
  const answer = (outcome: GradeOutcome, request: Request, provenance: Provenance, index?: number) => {
    if ("error" in outcome) {
      const { code, message, line, column } = outcome.error;
      const where = index === undefined ? "" : `request ${index}: `;
      throw new AppError(code, `${where}${message}`, {
        ...(index === undefined ? {} : { index }),
        ...(line === undefined ? {} : { line, column }),
      });
    }
    if ("abstained" in outcome) {
      // the protocol's reward is a number: an abstention must not read as one, so it is the request's error
      const where = index === undefined ? "" : `request ${index}: `;
      throw new AppError("ABSTAINED", `${where}${outcome.abstained.code}: ${outcome.abstained.reason}`, {
        ...(index === undefined ? {} : { index }),
        abstained: outcome.abstained,
      });
    }
    return {
      reward: outcome.score,
      metadata: { ...outcome.metadata, gradebox: { provenance } },
      ...(request.id === undefined ? {} : { id: request.id }),
    };
  };
  const score = async (project: string, key: string, request: Request, signal?: AbortSignal) => {
    const { outcomes, provenance } = await grade(project, key, [request], "grade", signal);
    return answer(outcomes[0], request, provenance);
  };
  const batchScore = async (project: string, key: string, { requests }: z.infer<typeof BatchRequest>, signal?: AbortSignal) => {
    const { outcomes, provenance } = await grade(project, key, requests, "grade-batch", signal);
    return { responses: outcomes.map((o, i) => answer(o, requests[i], provenance, i)) };
  };

  return {
    Request,
    BatchRequest,
    score,
    batchScore,
    async info(project: string, key: string) {
      const row = await store.mustGet(project, key);
      return { version: String(row.version), name: row.key, description: row.description };
    },
    async metadataSchema(project: string, key: string) {
      const row = await store.mustGet(project, key);
      const schema = row.kind === "endpoint" ? row.endpoint?.metadataSchema : undefined;
      return schema && typeof schema === "object" ? (schema as Record<string, unknown>) : { type: "object" };
    },
    /** Takes the request's WebSocket over and serves the grader on it; `path` names the route in the refusal of a plain GET. */
    async socket(
      fastify: FastifyInstance,
      req: FastifyRequest,
      reply: FastifyReply,
      { project, key, framing, path }: { project: string; key: string; framing: Framing; path: string },
    ) {
      if (!wantsUpgrade(req)) {
        throw new AppError("INVALID_REQUEST", `${path} is a WebSocket: connect with Upgrade: websocket (ws:// or wss://)`);
      }
      // an unknown grader, or a project with all its sockets open, is refused over HTTP, before the upgrade
      await store.mustGet(project, key);
      const release = rewardSockets.take(project);
      // the connection's end, whether or not the upgrade completed
      const connection = req.raw.socket;
      if (connection.destroyed) release();
      else connection.once("close", release);
      const ws = await upgradeRequest(fastify, req, reply);
      serveRewardSocket(
        ws,
        framing,
        {
          score: Request,
          batch: BatchRequest,
          onScore: (request, signal) => score(project, key, request, signal),
          onBatch: (request, signal) => batchScore(project, key, request, signal),
        },
        { project, budget: fastify.bodyBudget, bufferBytes: config.rewardSocketBufferBytes },
      );
    },
  };
}

/** What the protocol's addresses are served with (the app's services). */
export interface RewardServices {
  config: Config;
  store: Store;
  grading: Grading;
  /** open sockets per project, shared by both addresses */
  rewardSockets: RewardSockets;
}

/** The route schemas' shared parts, for both addresses of the protocol. */
export const REWARD_SCHEMAS = { RewardOut, RewardBatchResponse, RewardInfo };
export const FramingQuery = z
  .object({
    framing: z
      .enum(["chunks", "whole"])
      .optional()
      .describe("chunks: Adaptive's framing (total_num_chunks, then chunks; the default on …/ws); whole: one message per answer"),
  })
  .describe("how answers are framed");

export async function rewardRoutes(fastify: FastifyInstance, opts: RewardServices) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const protocol = rewardProtocol(opts);
  const { Request, BatchRequest } = protocol;
  const base = "/v1/projects/:project/graders/:graderKey/reward";
  app.get(
    `${base}/info`,
    {
      schema: {
        operationId: "reward.info",
        tags: ["reward"],
        summary: "Reward server: info",
        description: "The reward-server protocol's /info for the grader: its current version, its key and its description.",
        params: GraderParams,
        response: {
          200: json("The grader's info", RewardInfo),
          ...errorResponses(...IN_PROJECT, "GRADER_NOT_FOUND"),
        },
      },
    },
    async (req) => protocol.info(req.params.project, req.params.graderKey),
  );

  app.get(
    `${base}/metadata_schema`,
    {
      schema: {
        operationId: "reward.metadataSchema",
        tags: ["reward"],
        summary: "Reward server: metadata schema",
        description:
          'The JSON schema a request\'s metadata must match: an external endpoint grader\'s (as its endpoint gave it), otherwise {"type": "object"}.',
        params: GraderParams,
        response: {
          200: json("The metadata's JSON schema", z.record(z.string(), z.unknown()).describe("a JSON schema")),
          ...errorResponses(...IN_PROJECT, "GRADER_NOT_FOUND"),
        },
      },
    },
    async (req) => protocol.metadataSchema(req.params.project, req.params.graderKey),
  );

  app.post(
    `${base}/score`,
    {
      schema: {
        operationId: "reward.score",
        tags: ["reward"],
        summary: "Reward server: score",
        description:
          "Scores one reward-server protocol request with the grader. The grader's failure is the response's, as for …/grade: " +
          "422 (GRADER_ERROR, GRADER_TIMEOUT, INVALID_SCORE, …), 502 when its judge model or endpoint did not answer.",
        params: GraderParams,
        body: Request,
        response: {
          200: json("The request's reward", RewardOut),
          ...errorResponses(...IN_PROJECT, ...WITH_BODY, "GRADER_NOT_FOUND", "ABSTAINED", ...GRADING),
        },
      },
    },
    async (req) => protocol.score(req.params.project, req.params.graderKey, req.body),
  );

  app.get(
    `${base}/ws`,
    {
      schema: {
        operationId: "reward.websocket",
        tags: ["reward"],
        summary: "Reward server: WebSocket",
        description:
          "The reward-server protocol over a WebSocket (Adaptive's RewardClient.connect_websocket), authenticated at the upgrade. " +
          "Each text message is `{id, turns, metadata?}` (score) or `{id, requests}` (batch_score) with an integer or string id; " +
          "each answer carries its request's id and answers come as requests finish, in any order. Answers are framed as " +
          "Adaptive's servers frame them, `{id, total_num_chunks}` then `{id, chunk}` messages whose chunks joined are the " +
          "response (framing=whole: the response itself, one message); a failure is `{id, error: {code, message}}`. At most " +
          "64 requests of a socket are graded at once (it is not read past them); a message over the body limit closes it " +
          "(1009), a binary one (1003), 16 invalid ones (1008). A request being graded holds its message's bytes of the " +
          "project's body budget, as an HTTP body does: past it the request is answered TOO_MANY_BODIES or BODY_CAPACITY " +
          "(retry after `retryAfter` seconds). An answer larger than a socket may queue (GRADEBOX_REWARD_SOCKET_BUFFER_BYTES) " +
          "is ANSWER_TOO_LARGE; a client that leaves that much unread is dropped. Closing the socket cancels its grading. " +
          "A project has at most GRADEBOX_REWARD_SOCKETS_PER_PROJECT sockets open: past it the upgrade is refused, " +
          "429 TOO_MANY_SOCKETS. Without an upgrade: 400 INVALID_REQUEST.",
        params: GraderParams,
        querystring: FramingQuery,
        response: errorResponses(...IN_PROJECT, "GRADER_NOT_FOUND", "INVALID_REQUEST", "TOO_MANY_SOCKETS"),
      },
    },
    async (req, reply) => {
      const { project, graderKey } = req.params;
      const path = `${base.replace(":project", project).replace(":graderKey", graderKey)}/ws`;
      await protocol.socket(fastify, req, reply, { project, key: graderKey, framing: req.query.framing ?? "chunks", path });
    },
  );

  app.post(
    `${base}/batch_score`,
    {
      schema: {
        operationId: "reward.batchScore",
        tags: ["reward"],
        summary: "Reward server: batch score",
        description:
          "Scores a batch of reward-server protocol requests (at most maxBatchThreads), answered in order. The protocol has no " +
          "per-item error: a request that fails makes the response that request's error (422 or 502), with its `index`.",
        params: GraderParams,
        body: BatchRequest,
        response: {
          200: json("Each request's reward", RewardBatchResponse),
          ...errorResponses(...IN_PROJECT, ...WITH_BODY, "GRADER_NOT_FOUND", "ABSTAINED", ...GRADING),
        },
      },
    },
    async (req) => protocol.batchScore(req.params.project, req.params.graderKey, req.body),
  );
}
