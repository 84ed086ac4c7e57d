// What every request goes through around its route: its id echoed back, the strict JSON parser,
// the budget of body bytes held at once, the batch size checked before zod walks a body, and a
// log line (debug-level: grading is the hot path). Registered at the root (fastify-plugin).

import fp from "fastify-plugin";
import { BodyBudget, registerBodyBudget } from "../body-budget.ts";
import type { Config } from "../config.ts";
import { checkBatchSize } from "../errors.ts";
import { registerJsonParser } from "../json-body.ts";

export const requestsPlugin = fp(
  async (app, { config }: { config: Config }) => {
    registerJsonParser(app);
    registerBodyBudget(app, config, new BodyBudget(config));
    // the API key's project, set by the /v1 authentication hook
    app.decorateRequest("project", "");

    app.addHook("onRequest", async (req, reply) => {
      reply.header("x-request-id", req.id);
    });
    // a batch over the limit is refused before zod walks its threads (10 MB holds 240 000 of them)
    app.addHook("preValidation", async (req) => {
      const threads = (req.body as { threads?: unknown } | null | undefined)?.threads;
      if (Array.isArray(threads)) checkBatchSize(threads.length, config.maxBatch);
    });
    const debugRequests = config.logLevel === "debug" || config.logLevel === "trace";
    app.addHook("onResponse", async (req, reply) => {
      if (reply.statusCode >= 500) req.log.error({ method: req.method, url: req.url, status: reply.statusCode }, "request failed");
      else if (debugRequests) {
        req.log.debug({ method: req.method, url: req.url, status: reply.statusCode, ms: reply.elapsedTime }, "request");
      }
    });
  },
  { name: "requests" },
);
