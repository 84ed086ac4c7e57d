// The probes, without an API key: /healthz (the process serves requests) and /readyz (it can
// grade: the database answers and a sandbox worker is up).

import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { Sandbox } from "../../sandbox/host/sandbox.ts";
import type { Db } from "../db/db.ts";

export async function healthPlugin(app: FastifyInstance, { db, pool }: { db: Pick<Db, "ping">; pool: Pick<Sandbox, "readyWorkers"> }) {
  app.get(
    "/healthz",
    {
      schema: {
        operationId: "health",
        tags: ["health"],
        summary: "Liveness",
        description: "Answers 200 while the process serves requests (a liveness probe); GET /readyz says whether it can grade.",
        security: [],
        response: {
          200: z
            .object({
              status: z.literal("ok").describe("always ok"),
              workers: z.number().describe("sandbox workers ready to grade"),
            })
            .describe("The process is up"),
        },
      },
    },
    async () => ({ status: "ok", workers: pool.readyWorkers }),
  );
  // ready to grade: the database answers and at least one sandbox worker is up
  const Readiness = z.object({
    status: z.enum(["ready", "not ready"]).describe("ready: the database answers and a sandbox worker is up"),
    database: z.boolean().describe("the database answers"),
    workers: z.number().describe("sandbox workers ready to grade"),
  });
  const readyz = {
    operationId: "ready",
    tags: ["health"],
    summary: "Readiness",
    description:
      "Answers 200 when the server can grade (its database answers and a sandbox worker is up), 503 otherwise: route traffic on it.",
    security: [],
    response: {
      200: Readiness.describe("Ready to grade"),
      503: Readiness.describe("Not ready: the database does not answer or no sandbox worker is up"),
    },
  };
  app.get("/readyz", { schema: readyz }, async (_req, reply) => {
    let database = false;
    try {
      database = await db.ping();
    } catch {}
    const ready = database && pool.readyWorkers > 0;
    return reply.code(ready ? 200 : 503).send({ status: ready ? "ready" : "not ready", database, workers: pool.readyWorkers });
  });
}
