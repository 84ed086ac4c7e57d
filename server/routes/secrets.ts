// /v1/projects/:project/secrets — values a project's models and endpoints send (API keys,
// headers). Write-only: a value is never returned, only its name, host and dates.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { errorResponses, IN_PROJECT, json, ProjectParams, WITH_BODY } from "../schemas.ts";
import { MAX_SECRET_BYTES, Secret, SecretName, type Secrets } from "../secrets/secrets.ts";

const SecretParams = ProjectParams.extend({ name: SecretName });

const SecretList = z
  .object({ data: z.array(Secret).describe("the secrets, by name") })
  .describe("the secrets")
  .meta({ id: "SecretList" });

const SecretValue = z
  .object({
    value: z
      .string()
      .min(1, "a secret's value is not empty")
      .refine((v) => Buffer.byteLength(v, "utf8") <= MAX_SECRET_BYTES, `a secret's value is at most ${MAX_SECRET_BYTES} bytes of UTF-8`)
      .refine((v) => !/[\r\n\0]/.test(v), "a secret's value has no line breaks or NUL (it is sent as a header)")
      .describe(`the value, at most ${MAX_SECRET_BYTES} bytes; it is never returned`),
  })
  .strict()
  .describe("a secret's value");

export async function secretRoutes(fastify: FastifyInstance, opts: { secrets: Secrets }) {
  const { secrets } = opts;
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const base = "/v1/projects/:project/secrets";

  app.put(
    `${base}/:name`,
    {
      schema: {
        operationId: "secrets.set",
        tags: ["secrets"],
        summary: "Set a secret",
        description:
          "Creates the secret, or replaces its value (rotation). The value is sealed (AES-256-GCM under the operator's key) and never " +
          "returned. Setting a value unbinds it from its host: the next model or endpoint that uses it binds it to theirs. A server " +
          "without a secrets key answers 503 SECRETS_NOT_CONFIGURED.",
        params: SecretParams,
        body: SecretValue,
        response: {
          200: json("The secret's value was replaced", Secret),
          201: json("The secret was created", Secret),
          ...errorResponses(...IN_PROJECT, ...WITH_BODY, "SECRETS_NOT_CONFIGURED", "QUOTA_EXCEEDED"),
        },
      },
    },
    async (req, reply) => {
      const { secret, created } = await secrets.put(req.params.project, req.params.name, req.body.value);
      return reply.code(created ? 201 : 200).send(secret);
    },
  );

  app.get(
    base,
    {
      schema: {
        operationId: "secrets.list",
        tags: ["secrets"],
        summary: "List secrets",
        description: "The project's secrets: names, bound hosts and dates, never values.",
        params: ProjectParams,
        response: {
          200: json("The project's secrets", SecretList),
          ...errorResponses(...IN_PROJECT),
        },
      },
    },
    async (req) => ({ data: await secrets.list(req.params.project) }),
  );

  app.get(
    `${base}/:name`,
    {
      schema: {
        operationId: "secrets.get",
        tags: ["secrets"],
        summary: "Get a secret",
        description: "One secret's name, bound host and dates (never its value). An unknown name answers 404 SECRET_NOT_FOUND.",
        params: SecretParams,
        response: { 200: json("The secret", Secret), ...errorResponses(...IN_PROJECT, "SECRET_NOT_FOUND") },
      },
    },
    async (req) => secrets.get(req.params.project, req.params.name),
  );

  app.delete(
    `${base}/:name`,
    {
      schema: {
        operationId: "secrets.delete",
        tags: ["secrets"],
        summary: "Delete a secret",
        description: "Deletes a secret no model or endpoint uses; one in use answers 409 SECRET_IN_USE, whose `usedBy` lists them.",
        params: SecretParams,
        response: { 204: z.null().describe("Deleted"), ...errorResponses(...IN_PROJECT, "SECRET_NOT_FOUND", "SECRET_IN_USE") },
      },
    },
    async (req, reply) => {
      await secrets.delete(req.params.project, req.params.name);
      return reply.code(204).send(null);
    },
  );
}
