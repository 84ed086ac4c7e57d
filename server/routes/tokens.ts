// /v1/projects/:project/graders/:graderKey/tokens — grade tokens: grade-only credentials for
// trainers that cannot send an Authorization header (OpenRLHF, NeMo Gym, Adaptive's RewardClient), so the credential sits
// in the URL. One token grades with one grader and does nothing else; it is shown once, stored
// as SHA-256, and revocable. Managed as API keys are: an admin key of the project, or the
// operator's token.

import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { AppError } from "../errors.ts";
import { errorResponses, GraderParams, IN_PROJECT, json, WITH_BODY } from "../schemas.ts";
import type { GradeTokenInfo } from "../store/tokens.ts";
import type { Store } from "../store.ts";
import { GradeTokenOptions, GradeTokenOptionsInput, GradeTokenOptionsOut } from "../trainers/token-options.ts";

const GradeToken = z
  .object({
    id: z.string().describe("the token's id (tok_…): what revoking names"),
    project: z.string().describe("the project of the grader"),
    grader: z.string().describe("the grader the token grades with: its only use"),
    prefix: z.string().describe("the token's first characters, to recognise it"),
    label: z.string().describe("a note to recognise the token by"),
    options: GradeTokenOptionsOut,
    createdAt: z.string().describe("ISO 8601: when it was made"),
    revokedAt: z.string().nullable().describe("ISO 8601: when it was revoked; null while it is live"),
  })
  .describe("a grade token as listed: never the token itself")
  .meta({ id: "GradeToken" });
const GradeTokenList = z
  .object({ data: z.array(GradeToken).describe("the grader's tokens, live and revoked, oldest first") })
  .describe("the grader's grade tokens")
  .meta({ id: "GradeTokenList" });
const CreatedGradeToken = GradeToken.extend({
  token: z.string().describe("the token itself: shown in this answer only, stored only as its SHA-256"),
  urls: z
    .object({
      openrlhf: z.string().describe("OpenRLHF's --reward.remote_url (formerly --remote_rm_url)"),
      gymHost: z.string().describe("NeMo Gym's resources-server host, for host-based routing (the port is the server's)"),
      gymPath: z.string().describe("the same resources server under a path, for a reverse proxy or curl"),
      adaptive: z
        .string()
        .describe("the reward-server protocol (Adaptive's RewardClient(url)): …/score, /batch_score, /info, /metadata_schema, /ws"),
      sandboxFusion: z.string().describe("verl's sandbox_fusion url (SandboxFusion's run_code): works with a code grader's token only"),
    })
    .describe("where trainers reach the grader with this token, as this server was addressed"),
})
  .describe("a new grade token, with the token itself (never shown again)")
  .meta({ id: "CreatedGradeToken" });
const CreateGradeToken = z
  .strictObject({
    label: z
      .string()
      .max(200, "a token's label is at most 200 characters")
      .refine((s) => !s.includes("\u0000"), "label must not contain NUL characters")
      .optional()
      .describe("a note to recognise the token by (none unless given)"),
    options: GradeTokenOptionsInput.optional(),
  })
  .describe("a new token's label and options");
const TokenParams = GraderParams.extend({
  tokenId: z
    .string()
    .regex(/^tok_[0-9a-f]{1,64}$/, "a token id is tok_ and hex digits (GET …/tokens lists them)")
    .describe("the token's id, tok_…"),
});

const MANAGING = [...IN_PROJECT, "FORBIDDEN"] as const;
const WHO = "An admin key of the project may call it, or the operator's token (GRADEBOX_ADMIN_TOKEN); a grader key answers 403 FORBIDDEN.";

/** Where this server was reached: the URLs a trainer is given are built from it. */
function origin(req: FastifyRequest): { base: string; hostname: string } {
  const host = req.host || "localhost";
  return { base: `${req.protocol}://${host}`, hostname: req.hostname || "localhost" };
}

export function tokenUrls(req: FastifyRequest, token: string) {
  const { base, hostname } = origin(req);
  return {
    openrlhf: `${base}/rm/${token}`,
    gymHost: `${token}.gym.${hostname}`,
    gymPath: `${base}/gym/${token}`,
    adaptive: `${base}/v1/reward/${token}`,
    sandboxFusion: `${base}/sf/${token}/run_code`,
  };
}

export async function tokenRoutes(fastify: FastifyInstance, { store }: { store: Store }) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const base = "/v1/projects/:project/graders/:graderKey/tokens";
  const config = { keyManagement: true };

  app.post(
    base,
    {
      config,
      schema: {
        operationId: "tokens.create",
        tags: ["keys"],
        summary: "Create a grade token",
        description:
          "A grade-only token for the grader, for trainers that send no Authorization header: it sits in the URL " +
          "(POST /rm/{token} for OpenRLHF, the NeMo Gym resources server at {token}.gym.{host}, Adaptive's RewardClient at " +
          "/v1/reward/{token}). It grades with this grader and " +
          `does nothing else; returned with the token itself this once (only its SHA-256 is stored). ${WHO}`,
        params: GraderParams,
        body: CreateGradeToken,
        response: {
          201: json("The token, shown once", CreatedGradeToken),
          ...errorResponses(...MANAGING, ...WITH_BODY, "GRADER_NOT_FOUND", "QUOTA_EXCEEDED"),
        },
      },
    },
    async (req, reply) => {
      const { project, graderKey } = req.params;
      await store.mustGet(project, graderKey);
      const options = GradeTokenOptions.parse(req.body.options ?? {});
      const { token, info } = await store.tokens.create(project, graderKey, req.body.label ?? "", options);
      return reply.code(201).send({ ...listed(info), token, urls: tokenUrls(req, token) });
    },
  );

  app.get(
    base,
    {
      config,
      schema: {
        operationId: "tokens.list",
        tags: ["keys"],
        summary: "List a grader's grade tokens",
        description: `The grader's grade tokens, live and revoked: ids, prefixes, labels, options and dates, never a token itself. ${WHO}`,
        params: GraderParams,
        response: { 200: json("The grader's tokens", GradeTokenList), ...errorResponses(...MANAGING) },
      },
    },
    async (req) => ({ data: (await store.tokens.list(req.params.project, req.params.graderKey)).map(listed) }),
  );

  app.delete(
    `${base}/:tokenId`,
    {
      config,
      schema: {
        operationId: "tokens.revoke",
        tags: ["keys"],
        summary: "Revoke a grade token",
        description: `Revokes the token: every node refuses it (401) from the answer on. Revoking a revoked token answers it again. ${WHO}`,
        params: TokenParams,
        response: { 200: json("The token, revoked", GradeToken), ...errorResponses(...MANAGING, "TOKEN_NOT_FOUND") },
      },
    },
    async (req) => {
      const { project, graderKey, tokenId } = req.params;
      const found = await store.tokens.get(tokenId);
      // another project's or grader's token is as unknown as one that does not exist
      if (!found || found.project !== project || found.grader !== graderKey) {
        throw new AppError(
          "TOKEN_NOT_FOUND",
          `no grade token ${tokenId} for grader "${graderKey}" of project "${project}"; GET ${base.replace(":project", project).replace(":graderKey", graderKey)} lists them`,
        );
      }
      if (found.revokedAt === null) await store.tokens.revoke(tokenId);
      return listed((await store.tokens.get(tokenId)) ?? found);
    },
  );
}

/** A token as an answer lists it: its options with the components field only when set. */
function listed(info: GradeTokenInfo) {
  return { ...info, options: { ...info.options } };
}
