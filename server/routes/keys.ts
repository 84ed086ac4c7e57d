// /v1/projects/:project/keys — the project's API keys, for a team whose members are not on the
// server's host: an admin key of the project (or the operator's token, GRADEBOX_ADMIN_TOKEN, for
// any project) creates, lists and revokes them. A key itself is shown once, at creation; a
// revoked key stops working on every node at once (the registry cache hears of it).

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { AppError } from "../errors.ts";
import {
  ApiKeyInfo,
  ApiKeyList,
  CreateApiKey,
  CreatedApiKey,
  errorResponses,
  IN_PROJECT,
  json,
  KeyParams,
  ProjectParams,
  WITH_BODY,
} from "../schemas.ts";
import type { Store } from "../store.ts";

const MANAGING = [...IN_PROJECT, "FORBIDDEN"] as const;
const WHO =
  "An admin key of the project may call it, or the operator's token (GRADEBOX_ADMIN_TOKEN) for any project; a grader key answers 403 FORBIDDEN.";

export async function keyRoutes(fastify: FastifyInstance, { store }: { store: Store }) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const base = "/v1/projects/:project/keys";
  const config = { keyManagement: true };

  app.post(
    base,
    {
      config,
      schema: {
        operationId: "keys.create",
        tags: ["keys"],
        summary: "Create an API key",
        description:
          `A new key for the project, returned with the key itself this once (only its SHA-256 is stored). ${WHO} ` +
          "The operator's token may create a new project's first key, which creates the project; a project's first key is its admin.",
        params: ProjectParams,
        body: CreateApiKey,
        response: { 201: json("The key, shown once", CreatedApiKey), ...errorResponses(...MANAGING, ...WITH_BODY) },
      },
    },
    async (req, reply) => {
      const { key, info } = await store.keys.create(req.params.project, req.body.label ?? "", req.body.role);
      return reply.code(201).send({ ...info, key });
    },
  );

  app.get(
    base,
    {
      config,
      schema: {
        operationId: "keys.list",
        tags: ["keys"],
        summary: "List API keys",
        description: `The project's keys, live and revoked: ids, prefixes, labels, roles and dates, never a key itself. ${WHO}`,
        params: ProjectParams,
        response: { 200: json("The project's keys", ApiKeyList), ...errorResponses(...MANAGING) },
      },
    },
    async (req) => ({ data: await store.keys.list(req.params.project) }),
  );

  app.delete(
    `${base}/:keyId`,
    {
      config,
      schema: {
        operationId: "keys.revoke",
        tags: ["keys"],
        summary: "Revoke an API key",
        description:
          `Revokes the key: every node refuses it from the answer on. Revoking a revoked key answers it again. ${WHO} ` +
          "An admin key cannot revoke the project's last live admin key (409 LAST_ADMIN_KEY: nobody could manage the keys after it); " +
          "the operator's token can.",
        params: KeyParams,
        response: {
          200: json("The key, revoked", ApiKeyInfo),
          ...errorResponses(...MANAGING, "KEY_NOT_FOUND", "LAST_ADMIN_KEY"),
        },
      },
    },
    async (req) => {
      const { project, keyId } = req.params;
      const found = await store.keys.get(keyId);
      // another project's key is as unknown as one that does not exist
      if (!found || found.project !== project) {
        throw new AppError("KEY_NOT_FOUND", `no key ${keyId} in project "${project}"; GET /v1/projects/${project}/keys lists them`);
      }
      if (found.revokedAt !== null) return found;
      if (found.role === "admin" && req.keyRole !== "operator" && (await store.keys.liveAdmins(project)) <= 1) {
        throw new AppError(
          "LAST_ADMIN_KEY",
          `${keyId} is the last live admin key of project "${project}": create another admin key first (role: "admin"), or ask the operator`,
        );
      }
      await store.keys.revoke(keyId).catch((error) => {
        // revoked meanwhile by another request: the answer is the same
        if (!(error instanceof AppError && error.code === "INVALID_REQUEST")) throw error;
      });
      return (await store.keys.get(keyId)) ?? found;
    },
  );
}
