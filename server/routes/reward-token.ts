// The reward-server protocol at a grade token's address, for Adaptive's RewardClient, which sends
// no Authorization header (over HTTP or at the upgrade) and is given one URL: it posts to
// `<url>/score` and `<url>/batch_score`, gets `<url>/info` and `<url>/metadata_schema`, and opens
// its WebSocket at `<url>/ws` (adaptive_harmony's client, Adaptive's chunked framing) or at `<url>`
// itself (adaptive_sdk's client, one message per answer). So `/v1/reward/<token>` is that URL,
// and the token grades with its grader and opens nothing else. Same handlers as the project-key
// routes (reward.ts); authenticated as the trainer routes are (token-auth.ts): 401 before the
// body is read, the token's project's share of bodies and of the sandbox pool.
// Not part of the OpenAPI document: its caller is Adaptive's client, and docs/trainers/adaptive.md
// documents it.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { authenticateToken, grantOf } from "../token-auth.ts";
import { FramingQuery, REWARD_SCHEMAS, type RewardServices, rewardProtocol } from "./reward.ts";

const base = "/v1/reward/:token";
const hidden = { hide: true } as const;

export async function rewardTokenRoutes(fastify: FastifyInstance, opts: RewardServices) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const protocol = rewardProtocol(opts);
  fastify.addHook("onRequest", authenticateToken(opts.store.cache));

  app.get(`${base}/info`, { schema: { ...hidden, response: { 200: REWARD_SCHEMAS.RewardInfo } } }, async (req) => {
    const { project, grader } = grantOf(req);
    return protocol.info(project, grader);
  });
  app.get(`${base}/metadata_schema`, { schema: { ...hidden, response: { 200: z.record(z.string(), z.unknown()) } } }, async (req) => {
    const { project, grader } = grantOf(req);
    return protocol.metadataSchema(project, grader);
  });
  app.post(`${base}/score`, { schema: { ...hidden, body: protocol.Request, response: { 200: REWARD_SCHEMAS.RewardOut } } }, async (req) => {
    const { project, grader } = grantOf(req);
    return protocol.score(project, grader, req.body);
  });
  app.post(
    `${base}/batch_score`,
    { schema: { ...hidden, body: protocol.BatchRequest, response: { 200: REWARD_SCHEMAS.RewardBatchResponse } } },
    async (req) => {
      const { project, grader } = grantOf(req);
      return protocol.batchScore(project, grader, req.body);
    },
  );
  // each address frames answers as the client that opens it reads them; ?framing= overrides
  for (const [suffix, framing] of [
    ["/ws", "chunks"],
    ["", "whole"],
  ] as const) {
    app.get(`${base}${suffix}`, { schema: { ...hidden, querystring: FramingQuery } }, async (req, reply) => {
      const { project, grader } = grantOf(req);
      const path = `/v1/reward/<token>${suffix}`;
      await protocol.socket(fastify, req, reply, { project, key: grader, framing: req.query.framing ?? framing, path });
    });
  }
}
