// buildApp: the Fastify application, not listening. The entry point (main.ts) and the tests
// build it with a store and a started sandbox pool. It reads as what it registers: the
// plugins every request goes through (plugins/), the services (services.ts), then the routes.

import { randomUUID } from "node:crypto";
import Fastify, { type FastifyInstance, LogController } from "fastify";
import type { SandboxPool } from "../sandbox/host/pool.ts";
import { authenticate } from "./auth.ts";
import type { MetricsToken } from "./bootstrap.ts";
import type { Config } from "./config.ts";
import { registerConsole } from "./console.ts";
import { docsPlugin } from "./plugins/docs.ts";
import { errorsPlugin, frameworkErrors } from "./plugins/errors.ts";
import { healthPlugin } from "./plugins/health.ts";
import { idleGcPlugin } from "./plugins/idle-gc.ts";
import { metricsPlugin } from "./plugins/metrics.ts";
import { requestsPlugin } from "./plugins/requests.ts";
import { accountRoutes } from "./routes/account.ts";
import { codeRoutes } from "./routes/code.ts";
import { endpointRoutes } from "./routes/endpoints.ts";
import { graderRoutes } from "./routes/graders.ts";
import { gymRoutes, rewriteGymUrl } from "./routes/gym.ts";
import { judgeRoutes } from "./routes/judges.ts";
import { keyRoutes } from "./routes/keys.ts";
import { modelRoutes } from "./routes/models.ts";
import { openRlhfRoutes } from "./routes/openrlhf.ts";
import { rewardRoutes } from "./routes/reward.ts";
import { rewardTokenRoutes } from "./routes/reward-token.ts";
import { sandboxFusionRoutes } from "./routes/sandbox-fusion.ts";
import { secretRoutes } from "./routes/secrets.ts";
import { tokenRoutes } from "./routes/tokens.ts";
import { buildServices } from "./services.ts";
import type { Store } from "./store.ts";
import { acceptUpgrades } from "./websocket.ts";

export interface AppOptions {
  config: Config;
  store: Store;
  pool: SandboxPool;
  /** the bearer token GET /metrics needs (bootstrapMetricsToken) */
  metricsToken: MetricsToken;
}

export async function buildApp({ config, store, pool, metricsToken }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: { level: config.logLevel, redact: ["req.headers.authorization"] },
    bodyLimit: config.bodyLimit,
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && /^[\w.-]{1,128}$/.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    // NeMo Gym reaches a resources server at the root of a host: <token>.gym.<host> is /gym/<token> (routes/gym.ts)
    rewriteUrl: rewriteGymUrl,
    // grading is the hot path: a log line per request is debug-level (plugins/requests.ts)
    logController: new LogController({ disableRequestLogging: true }),
    // long enough for any valid key to reach validation (which explains the rule)
    routerOptions: { maxParamLength: 256 },
    frameworkErrors,
  });
  await app.register(requestsPlugin, { config });
  await app.register(errorsPlugin, { config });
  await app.register(docsPlugin, { config });
  await app.register(idleGcPlugin);
  registerConsole(app);
  // WebSocket routes (the reward protocol's) are routed, authenticated and refused as any other
  acceptUpgrades(app, config.bodyLimit);

  const services = buildServices({ config, store, pool, log: app.log });
  app.addHook("onClose", services.close);
  await app.register(healthPlugin, { db: store.db, pool });
  await app.register(metricsPlugin, { metrics: services.metrics, metricsToken });

  // every /v1 route takes an API key: one hook for all of them, registered around them
  await app.register(async (v1) => {
    v1.addHook("onRequest", authenticate(store.cache, config.adminToken));
    await v1.register(accountRoutes, { config, store });
    await v1.register(graderRoutes, services);
    await v1.register(judgeRoutes, services);
    await v1.register(modelRoutes, services);
    await v1.register(endpointRoutes, services);
    await v1.register(codeRoutes, services);
    await v1.register(secretRoutes, services);
    await v1.register(keyRoutes, { store });
    await v1.register(tokenRoutes, { store });
    await v1.register(rewardRoutes, services);
  });
  // the trainers that send no Authorization header: a grade token in the URL (token-auth.ts)
  app.decorateRequest("tokenGrant", undefined);
  await app.register(openRlhfRoutes, services);
  await app.register(gymRoutes, services);
  await app.register(rewardTokenRoutes, services);
  await app.register(sandboxFusionRoutes, services);
  return app;
}
