// Bearer authentication for /v1 routes. An API key sees only its own project: any other project
// answers 404, the same as a project that does not exist. The keys routes (route config
// `keyManagement`) also need the key's role to be admin, or take the operator's token
// (GRADEBOX_ADMIN_TOKEN), which manages every project's keys and nothing else.

import type { FastifyRequest } from "fastify";

declare module "fastify" {
  interface FastifyRequest {
    /** the project of the request's API key (for the operator's token, the path's), once authenticated */
    project: string;
    /** the API key's role, or "operator" for the operator's token */
    keyRole: KeyRole | "operator";
  }
  interface FastifyContextConfig {
    /** the route manages API keys: an admin key of the project, or the operator's token */
    keyManagement?: boolean;
  }
}

import { createHash, timingSafeEqual } from "node:crypto";
import type { MetricsToken } from "./bootstrap.ts";
import { AppError } from "./errors.ts";
import type { RegistryCache } from "./registry-cache.ts";
import type { KeyRole } from "./store/keys.ts";

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

const digest = (text: string) => createHash("sha256").update(text).digest();

/** What a client is told to do without a key: commands that work from wherever it is. */
export const NO_KEY_HINT =
  "send `Authorization: Bearer <api key>` (the SDKs and the CLI send GRADEBOX_API_KEY, or their apiKey / api_key / --api-key; " +
  "on the server's host the first make run saved the default project's key to data/default.key). A project's admin makes keys for the team from anywhere with " +
  "`gradebox keys create --server <this server's URL>` (the admin's own key in GRADEBOX_API_KEY); on the server's host, " +
  "`npx gradebox keys create --project <name>` (make run prints the default project's first key)";

export function authenticate(registry: Pick<RegistryCache, "grantOf">, adminToken?: string) {
  const operator = adminToken === undefined ? undefined : digest(adminToken);
  return async (req: FastifyRequest) => {
    const match = BEARER.exec(req.headers.authorization ?? "");
    if (!match) throw new AppError("UNAUTHORIZED", NO_KEY_HINT);
    const keyManagement = req.routeOptions.config?.keyManagement === true;
    const wanted = (req.params as { project?: string }).project;
    // compared as SHA-256 digests: the time taken says nothing of the token
    if (operator && timingSafeEqual(digest(match[1]), operator)) {
      if (!keyManagement || wanted === undefined) {
        throw new AppError(
          "UNAUTHORIZED",
          "the operator's token (GRADEBOX_ADMIN_TOKEN) manages API keys only (/v1/projects/{project}/keys); this route needs an API key",
        );
      }
      req.project = wanted;
      req.keyRole = "operator";
      return;
    }
    const grant = await registry.grantOf(match[1]);
    if (!grant) throw new AppError("UNAUTHORIZED", "the API key is not valid or has been revoked");
    req.project = grant.project;
    req.keyRole = grant.role;
    if (wanted !== undefined && wanted !== grant.project) {
      throw new AppError("PROJECT_NOT_FOUND", `no project "${wanted}" for this API key`);
    }
    if (keyManagement && grant.role !== "admin") {
      throw new AppError(
        "FORBIDDEN",
        `this API key's role is ${grant.role}: managing the project's keys needs one of its admin keys (\`gradebox keys list\` shows the roles) or the operator's token`,
      );
    }
  };
}

/**
 * GET /metrics: the metrics token, not an API key (the series name every project and grader).
 * Compared as SHA-256 digests with timingSafeEqual, so the time taken says nothing of the token.
 */
export function authenticateMetrics({ token, source }: MetricsToken) {
  const expected = digest(token);
  const where =
    source === "GRADEBOX_METRICS_TOKEN"
      ? "the value of GRADEBOX_METRICS_TOKEN in the server's environment"
      : source
        ? `saved on the server in ${source.path} at its first start (set GRADEBOX_METRICS_TOKEN to choose your own)`
        : "printed when the server started, and saved nowhere as its database is in memory (set GRADEBOX_METRICS_TOKEN to choose your own)";
  const detail = `GET /metrics needs \`Authorization: Bearer <metrics token>\`; the metrics token is ${where}. API keys are not accepted here`;
  return async (req: FastifyRequest) => {
    const given = BEARER.exec(req.headers.authorization ?? "")?.[1];
    if (given === undefined || !timingSafeEqual(digest(given), expected)) {
      throw new AppError("UNAUTHORIZED", detail);
    }
  };
}
