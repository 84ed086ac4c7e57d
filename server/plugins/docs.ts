// The OpenAPI 3.1 document, generated from the routes' own zod schemas, at /openapi.json, and
// the interactive docs at /docs. Registered at the root (fastify-plugin) before the routes, so
// the document sees every route.

import fastifySwagger from "@fastify/swagger";
import fastifySwaggerUi from "@fastify/swagger-ui";
import fp from "fastify-plugin";
import type { Config } from "../config.ts";
import { documentTransforms } from "../openapi.ts";

export const docsPlugin = fp<{ config: Config }>(
  async (app, { config }) => {
    await app.register(fastifySwagger, {
      openapi: {
        openapi: "3.1.0",
        info: {
          title: "Gradebox",
          version: "0.1.0",
          description:
            "Graders: register, validate and run async grade(thread) functions, combined graders, LLM judges and external reward " +
            "servers. Every /v1 route takes `Authorization: Bearer <API key>`, and a key sees its own project only. Errors are " +
            "application/problem+json documents (RFC 9457) whose `code` says what went wrong and `detail` how to fix it; each " +
            "operation lists the codes it can answer.",
        },
        tags: [
          { name: "graders", description: "Function and combined graders: create, list, get, lock, delete, grade" },
          { name: "versions", description: "A function grader's stored versions: every update is a new one" },
          { name: "judges", description: "Judge graders: a model grades against criteria, a metric or a rubric" },
          { name: "models", description: "The OpenAI-compatible models a project's judges call" },
          { name: "endpoints", description: "External endpoint graders: reward servers the project runs" },
          { name: "code", description: "Code-execution graders: the completion's program run against the tests in its metadata" },
          {
            name: "secrets",
            description: "Values the project's models and endpoints send (API keys, headers): write-only, bound to a host",
          },
          {
            name: "keys",
            description:
              "The project's API keys, managed by one of its admin keys (or the operator's GRADEBOX_ADMIN_TOKEN): a key is shown once",
          },
          { name: "reward", description: "Every grader served over the reward-server protocol, for trainers that speak it" },
          { name: "account", description: "The API key's project and the server's limits" },
          { name: "health", description: "Liveness and readiness probes (no API key)" },
        ],
        components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "an API key: gbx_…" } } },
        security: [{ bearer: [] }],
      },
      // named components.schemas, this server's limits in the thread schemas (openapi.ts)
      ...documentTransforms(config),
    });
    await app.register(fastifySwaggerUi, { routePrefix: "/docs" });
    app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  },
  { name: "docs" },
);
