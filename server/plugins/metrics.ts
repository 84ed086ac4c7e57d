// GET /metrics: Prometheus's text format. The series name every project and grader, so it takes
// the metrics token only, never an API key.

import type { FastifyInstance } from "fastify";
import { authenticateMetrics } from "../auth.ts";
import type { MetricsToken } from "../bootstrap.ts";
import type { Metrics } from "../metrics.ts";

export async function metricsPlugin(app: FastifyInstance, { metrics, metricsToken }: { metrics: Metrics; metricsToken: MetricsToken }) {
  app.get("/metrics", { schema: { hide: true }, onRequest: authenticateMetrics(metricsToken) }, async (_req, reply) => {
    await metrics.collectWorkers();
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}
