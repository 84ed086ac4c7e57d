// /v1/me and /v1/limits: who the key belongs to, and the limits a client must fit its requests in
// (the SDKs split batches by maxBatchThreads); /v1/projects/{project}/usage: what the project
// stores against its quotas.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { type Config, MAX_SOURCE_BYTES } from "../config.ts";
import { AUTHENTICATED, errorResponses, IN_PROJECT, json, MAX_SAMPLES, ProjectParams } from "../schemas.ts";
import type { Store } from "../store.ts";

export const Limits = z
  .object({
    maxBatchThreads: z.number().int().describe("threads per grade-batch request (GRADEBOX_MAX_BATCH)"),
    maxBodyBytes: z.number().int().describe("bytes per request body (GRADEBOX_BODY_LIMIT)"),
    maxTurns: z.number().int().describe("turns per thread (GRADEBOX_MAX_TURNS)"),
    maxContentChars: z.number().int().describe("characters per turn content (GRADEBOX_MAX_CONTENT)"),
    maxSourceBytes: z.number().int().describe("UTF-8 bytes of a function grader's source"),
    maxSamples: z.number().int().describe("sample threads per grader"),
    timeoutMs: z.number().int().describe("time limit of one grade call (GRADEBOX_TIMEOUT_MS)"),
    memoryMb: z.number().int().describe("heap limit of a grader's isolate (GRADEBOX_MEMORY_MB)"),
  })
  .describe("the server's request limits: a client splits batches and checks inputs against them")
  .meta({ id: "Limits" });
export type Limits = z.infer<typeof Limits>;
const Me = z
  .object({ project: z.string().describe("the API key's project") })
  .describe("the API key's owner")
  .meta({ id: "Me" });

const Used = (what: string, setting: string) =>
  z
    .object({
      used: z.number().int().describe(`${what} the project stores now`),
      limit: z.number().int().describe(`the most it may store (${setting})`),
    })
    .describe(`${what}: used and limit`);
export const Usage = z
  .object({
    graders: Used("graders of every kind", "GRADEBOX_QUOTA_GRADERS"),
    bytes: Used(
      "UTF-8 bytes of every stored version (source, compiled script, samples, description, warnings) and every other grader's definition",
      "GRADEBOX_QUOTA_BYTES",
    ),
    models: Used("judge models", "GRADEBOX_QUOTA_MODELS"),
    secrets: Used("secrets", "GRADEBOX_QUOTA_SECRETS"),
    gradeTokens: Used("grade tokens not revoked", "GRADEBOX_QUOTA_GRADE_TOKENS"),
    versionsPerGrader: z.number().int().describe("the most versions one function grader stores (GRADEBOX_QUOTA_VERSIONS)"),
  })
  .describe("what the project stores against its quotas; a write past one answers 409 QUOTA_EXCEEDED")
  .meta({ id: "Usage" });

export async function accountRoutes(fastify: FastifyInstance, { config, store }: { config: Config; store: Store }) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();

  app.get(
    "/v1/me",
    {
      schema: {
        operationId: "me",
        tags: ["account"],
        summary: "Who am I",
        description: "The project the API key belongs to: every /v1/projects/{project} path must name it. Checks that a key works.",
        response: {
          200: json("The key's project", Me),
          ...errorResponses(...AUTHENTICATED),
        },
      },
    },
    async (req) => ({ project: req.project }),
  );

  const limits: Limits = {
    maxBatchThreads: config.maxBatch,
    maxBodyBytes: config.bodyLimit,
    maxTurns: config.maxTurns,
    maxContentChars: config.maxContent,
    maxSourceBytes: MAX_SOURCE_BYTES,
    maxSamples: MAX_SAMPLES,
    timeoutMs: config.timeoutMs,
    memoryMb: config.memoryMb,
  };
  app.get(
    "/v1/limits",
    {
      schema: {
        operationId: "limits",
        tags: ["account"],
        summary: "Request limits",
        description:
          "The limits this server enforces (set by its operator): batch size, body size, turns, content length, source size, " +
          "samples, time and memory per grade. Split batches by maxBatchThreads to avoid 413 BATCH_TOO_LARGE.",
        response: { 200: json("The server's limits", Limits), ...errorResponses(...AUTHENTICATED) },
      },
    },
    async () => limits,
  );

  app.get(
    "/v1/projects/:project/usage",
    {
      schema: {
        operationId: "usage",
        tags: ["account"],
        summary: "Quota usage",
        description:
          "What the project stores, counted from its rows, against each quota its operator set: graders, bytes of graders " +
          "(every version counts, with its own copy of its samples), models, secrets and live grade tokens, and the versions " +
          "one grader may keep. A write past a quota answers 409 QUOTA_EXCEEDED and stores nothing; deleting frees the room at once.",
        params: ProjectParams,
        response: { 200: json("The project's usage", Usage), ...errorResponses(...IN_PROJECT) },
      },
    },
    async (req) => {
      const used = await store.usage(req.params.project);
      const q = config.quotas;
      return {
        graders: { used: used.graders, limit: q.graders },
        bytes: { used: used.bytes, limit: q.bytes },
        models: { used: used.models, limit: q.models },
        secrets: { used: used.secrets, limit: q.secrets },
        gradeTokens: { used: used.gradeTokens, limit: q.gradeTokens },
        versionsPerGrader: q.versions,
      };
    },
  );
}
