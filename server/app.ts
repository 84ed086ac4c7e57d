// buildApp: the Fastify application, not listening. The entry point (main.ts) and the tests
// build it with a store and a started sandbox pool.

import { randomUUID } from "node:crypto";
import fastifySwagger from "@fastify/swagger";
import fastifySwaggerUi from "@fastify/swagger-ui";
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, LogController } from "fastify";
import { hasZodFastifySchemaValidationErrors, jsonSchemaTransform, serializerCompiler } from "fastify-type-provider-zod";
import { z } from "zod";
import type { SandboxPool } from "../sandbox/host/pool.ts";
import { SandboxUnavailableError } from "../sandbox/host/sandbox.ts";
import { authenticate, authenticateMetrics } from "./auth.ts";
import { BodyBudget, registerBodyBudget } from "./body-budget.ts";
import { bootstrapSecretsKey, type MetricsToken } from "./bootstrap.ts";
import type { Config } from "./config.ts";
import { registerConsole } from "./console.ts";
import { egressAgent, egressPolicy } from "./egress.ts";
import { Endpoints, MAX_ENDPOINT_RESPONSE_BYTES } from "./endpoints/endpoints.ts";
import { AppError, type ErrorCode, FASTIFY_CODES, problem } from "./errors.ts";
import { Grading } from "./grading.ts";
import { registerJsonParser } from "./json-body.ts";
import { Judges } from "./judges/judges.ts";
import { MAX_RESPONSE_BYTES } from "./judges/model-client.ts";
import { Metrics } from "./metrics.ts";
import { OutboundGate } from "./outbound.ts";
import { accountRoutes } from "./routes/account.ts";
import { endpointRoutes } from "./routes/endpoints.ts";
import { graderRoutes } from "./routes/graders.ts";
import { judgeRoutes } from "./routes/judges.ts";
import { modelRoutes } from "./routes/models.ts";
import { rewardRoutes } from "./routes/reward.ts";
import { secretRoutes } from "./routes/secrets.ts";
import { SecretBox } from "./secrets/box.ts";
import { parseGrants, Secrets } from "./secrets/secrets.ts";
import { EndpointGraders } from "./services/endpoint-graders.ts";
import { Graders } from "./services/graders.ts";
import { JudgeGraders } from "./services/judge-graders.ts";
import { Models } from "./services/models.ts";
import { Validation } from "./services/validation.ts";
import { Versions } from "./services/versions.ts";
import { graderIdOf, type Store } from "./store.ts";
import { ValidationLimiter } from "./validation-limit.ts";
import { boundedValidatorCompiler, describeZodIssues } from "./validator.ts";

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
    // grading is the hot path: a log line per request is debug-level (see the onResponse hook)
    logController: new LogController({ disableRequestLogging: true }),
    // long enough for any valid key to reach validation (which explains the rule)
    routerOptions: { maxParamLength: 256 },
    // errors raised by the router itself (bad URL encoding, overlong parameters): problem+json too
    frameworkErrors: (error, req, res) => {
      const body = problem("INVALID_REQUEST", `${error.message}; keys and projects are at most 128 characters`, req.id);
      (res as FastifyReply).code(400).header("x-request-id", req.id).type("application/problem+json").send(JSON.stringify(body));
    },
  });
  registerJsonParser(app);
  registerBodyBudget(app, config, new BodyBudget(config));
  app.setValidatorCompiler(boundedValidatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  app.addHook("onRequest", async (req, reply) => {
    reply.header("x-request-id", req.id);
  });
  // a batch over the limit is refused before zod walks its threads (10 MB holds 240 000 of them)
  app.addHook("preValidation", async (req) => {
    const threads = (req.body as { threads?: unknown } | null | undefined)?.threads;
    if (Array.isArray(threads) && threads.length > config.maxBatch) {
      throw new AppError(
        "BATCH_TOO_LARGE",
        `a batch holds at most ${config.maxBatch} threads (GRADEBOX_MAX_BATCH); this one has ${threads.length}`,
        { limit: config.maxBatch },
      );
    }
  });
  const debugRequests = config.logLevel === "debug" || config.logLevel === "trace";
  app.addHook("onResponse", async (req, reply) => {
    if (reply.statusCode >= 500) req.log.error({ method: req.method, url: req.url, status: reply.statusCode }, "request failed");
    else if (debugRequests) {
      req.log.debug({ method: req.method, url: req.url, status: reply.statusCode, ms: reply.elapsedTime }, "request");
    }
  });

  app.setErrorHandler((error: FastifyError, req, reply) => {
    let code: ErrorCode;
    let detail: string;
    let extra: Record<string, unknown> = {};
    if (error instanceof AppError) {
      ({ code, detail, extra } = error);
    } else if (error instanceof SandboxUnavailableError) {
      code = "SANDBOX_UNAVAILABLE";
      detail = `${error.message}; retry shortly`;
    } else if (hasZodFastifySchemaValidationErrors(error)) {
      code = "INVALID_REQUEST";
      detail = describeZodIssues(error);
    } else if (error.code && FASTIFY_CODES[error.code]) {
      code = FASTIFY_CODES[error.code];
      detail =
        code === "BODY_TOO_LARGE"
          ? `request body is larger than ${config.bodyLimit} bytes (GRADEBOX_BODY_LIMIT)`
          : code === "UNSUPPORTED_MEDIA_TYPE"
            ? `send JSON with content-type: application/json (got ${JSON.stringify(req.headers["content-type"] ?? "none")})`
            : error.message;
    } else if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      code = "INVALID_REQUEST";
      detail = error.message;
    } else {
      req.log.error({ err: error }, "unhandled error");
      code = "INTERNAL";
      detail = "an internal error occurred; the request id identifies it in the server log";
    }
    const body = problem(code, detail, req.id, extra);
    if (code === "UNAUTHORIZED") reply.header("www-authenticate", 'Bearer realm="gradebox"');
    if (typeof extra.retryAfter === "number") reply.header("retry-after", String(extra.retryAfter));
    reply.code(body.status).type("application/problem+json").send(JSON.stringify(body));
  });

  app.setNotFoundHandler((req, reply) => {
    const body = problem("NOT_FOUND", `no route ${req.method} ${req.url.split("?")[0]}`, req.id);
    reply.code(404).type("application/problem+json").send(JSON.stringify(body));
  });

  // OpenAPI 3.1 generated from the routes' own zod schemas; interactive docs at /docs
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
        { name: "secrets", description: "Values the project's models and endpoints send (API keys, headers): write-only, bound to a host" },
        { name: "reward", description: "Every grader served over the reward-server protocol, for trainers that speak it" },
        { name: "account", description: "The API key's project and the server's limits" },
        { name: "health", description: "Liveness and readiness probes (no API key)" },
      ],
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "an API key: gbx_…" } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });
  await app.register(fastifySwaggerUi, { routePrefix: "/docs" });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());

  app.decorateRequest("project", "");
  registerConsole(app);

  const metrics = new Metrics(pool);
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
      database = await store.db.ping();
    } catch {}
    const ready = database && pool.readyWorkers > 0;
    return reply.code(ready ? 200 : 503).send({ status: ready ? "ready" : "not ready", database, workers: pool.readyWorkers });
  });
  // the series name every project and grader: the metrics token only, not an API key
  app.get("/metrics", { schema: { hide: true }, onRequest: authenticateMetrics(metricsToken) }, async (_req, reply) => {
    await metrics.collectWorkers();
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  const egress = egressPolicy(config.egressAllow);
  const dispatcher = egressAgent(egress, { maxResponseSize: MAX_RESPONSE_BYTES });
  const secretsKey = bootstrapSecretsKey(config);
  const secrets = new Secrets(store.db, secretsKey && new SecretBox(secretsKey), parseGrants(config.secretGrants));
  const outbound = new OutboundGate({ perProject: config.outboundPerProject, total: config.outboundMax, maxWaiting: 100_000 });
  const judges = new Judges(dispatcher, metrics, (id) => store.modelById(id), {
    apiKey: (model) => secrets.apiKey(model),
    gate: outbound,
    // a judge's template over its budget is a fault of its grader, recorded as a worker it took down is (onFault, below)
    onFault: (graderId, reason) => onFault(graderId, reason),
  });
  // endpoints answer whole batches: their replies get a larger cap than a judge's verdict
  const endpointDispatcher = egressAgent(egress, { maxResponseSize: MAX_ENDPOINT_RESPONSE_BYTES });
  const endpoints = new Endpoints(endpointDispatcher, metrics, {
    secretHeaders: (project, spec) => secrets.headers(project, spec),
    gate: outbound,
    // an endpoint whose metadata schema check goes over budget is at fault, as a grader that kills its worker
    onFault: (graderId, reason) => onFault(graderId, reason),
  });
  const grading = new Grading(store, pool, metrics, judges, endpoints);
  app.addHook("onClose", async () => {
    await Promise.all([dispatcher.close(), endpointDispatcher.close()]);
  });

  // a grader that takes its worker down (or a judge's template or an endpoint's schema check over
  // its budget) is recorded; the third time in 10 minutes quarantines it
  const onFault = (graderId: string, reason: string) => {
    grading.recordFault(graderIdOf(graderId), reason).then(
      (quarantined) => {
        if (!quarantined) return;
        metrics.quarantines.inc();
        app.log.warn({ graderId, reason }, "grader quarantined");
      },
      (error) => app.log.error({ err: error, graderId }, "could not record a grader fault"),
    );
  };
  const onWorkerExit = (info: { pid: number; code: number | null; signal: string | null; stderrTail: string }) => {
    metrics.workerRestarts.inc();
    app.log.warn({ ...info, stderrTail: info.stderrTail.slice(-500) }, "sandbox worker exited; replacing it");
  };
  // validations that take their worker down count per project (a rate limit after a few)
  const validations = new ValidationLimiter();
  const onValidationFault = (project: string, reason: string) => {
    validations.record(project);
    app.log.warn({ project, reason }, "a validation took its sandbox worker down");
  };
  const validation = new Validation(pool, validations);
  const versions = new Versions(store, validation);
  const graders = new Graders(store, pool, validation, grading);
  pool.on("graderFault", onFault);
  pool.on("validationFault", onValidationFault);
  pool.on("workerExit", onWorkerExit);
  app.addHook("onClose", async () => {
    pool.off("graderFault", onFault);
    pool.off("validationFault", onValidationFault);
    pool.off("workerExit", onWorkerExit);
  });

  // every /v1 route takes an API key: one hook for all of them, registered around them
  await app.register(async (v1) => {
    v1.addHook("onRequest", authenticate(store.cache));
    await v1.register(accountRoutes, { config });
    await v1.register(graderRoutes, { config, store, graders, versions, validation, grading });
    await v1.register(judgeRoutes, { config, judgeGraders: new JudgeGraders(store, grading) });
    await v1.register(modelRoutes, { store, models: new Models(store, judges, egress, secrets) });
    await v1.register(endpointRoutes, { endpointGraders: new EndpointGraders(store, grading, secrets) });
    await v1.register(secretRoutes, { secrets });
    await v1.register(rewardRoutes, { config, store, grading });
  });
  return app;
}
