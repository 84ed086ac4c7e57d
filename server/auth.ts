// Bearer-key authentication for /v1 routes. A key sees only its own project: any other
// project answers 404, the same as a project that does not exist.

import type { FastifyRequest } from "fastify";

declare module "fastify" {
  interface FastifyRequest {
    /** the project of the request's API key, once authenticated */
    project: string;
  }
}

import { createHash, timingSafeEqual } from "node:crypto";
import type { MetricsToken } from "./bootstrap.ts";
import { AppError } from "./errors.ts";
import type { RegistryCache } from "./registry-cache.ts";

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

export function authenticate(registry: Pick<RegistryCache, "verifyKey">) {
  return async (req: FastifyRequest) => {
    const match = BEARER.exec(req.headers.authorization ?? "");
    if (!match) {
      throw new AppError(
        "UNAUTHORIZED",
        "send `Authorization: Bearer <api key>`; `npx gradebox keys create --project <name>` makes a key (make run prints the default one)",
      );
    }
    const project = await registry.verifyKey(match[1]);
    if (!project) throw new AppError("UNAUTHORIZED", "the API key is not valid or has been revoked");
    req.project = project;
    const wanted = (req.params as { project?: string }).project;
    if (wanted !== undefined && wanted !== project) {
      throw new AppError("PROJECT_NOT_FOUND", `no project "${wanted}" for this API key`);
    }
  };
}

/**
 * GET /metrics: the metrics token, not an API key (the series name every project and grader).
 * Compared as SHA-256 digests with timingSafeEqual, so the time taken says nothing of the token.
 */
export function authenticateMetrics({ token, source }: MetricsToken) {
  const expected = createHash("sha256").update(token).digest();
  const where =
    source === "GRADEBOX_METRICS_TOKEN"
      ? "the value of GRADEBOX_METRICS_TOKEN in the server's environment"
      : source
        ? `saved on the server in ${source.path} at its first start (set GRADEBOX_METRICS_TOKEN to choose your own)`
        : "printed when the server started, and saved nowhere as its database is in memory (set GRADEBOX_METRICS_TOKEN to choose your own)";
  const detail = `GET /metrics needs \`Authorization: Bearer <metrics token>\`; the metrics token is ${where}. API keys are not accepted here`;
  return async (req: FastifyRequest) => {
    const given = BEARER.exec(req.headers.authorization ?? "")?.[1];
    if (given === undefined || !timingSafeEqual(createHash("sha256").update(given).digest(), expected)) {
      throw new AppError("UNAUTHORIZED", detail);
    }
  };
}
