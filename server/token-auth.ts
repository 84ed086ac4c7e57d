// Authentication of the trainer routes (/rm/:token, /gym/:token/…): the grade token in the path
// (trainers that call them send no Authorization header). A token that is not live answers 401 at
// once, before its body is read: OpenRLHF retries any error five times, a second apart, and should
// hear the same quick answer each time. The token's project is the request's, so its body counts
// against the project's share of bodies in flight (body-budget.ts) and its grading against the
// project's fair share of the sandbox pool, exactly as an API key's would.

import type { FastifyRequest } from "fastify";
import { AppError } from "./errors.ts";
import type { RegistryCache } from "./registry-cache.ts";
import { type TokenGrant, tokenRefusal } from "./store/tokens.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** the grade token's grant, on the trainer routes once authenticated */
    tokenGrant: TokenGrant | undefined;
  }
}

export function authenticateToken(registry: Pick<RegistryCache, "tokenGrant">) {
  return async (req: FastifyRequest) => {
    const token = (req.params as { token?: string }).token ?? "";
    const grant = await registry.tokenGrant(token);
    if (!grant) throw new AppError("UNAUTHORIZED", tokenRefusal(token));
    req.project = grant.project;
    req.tokenGrant = grant;
  };
}

/** The grant the route's hook set (a route of the trainer plugins is never reached without one). */
export function grantOf(req: FastifyRequest): TokenGrant {
  if (!req.tokenGrant) throw new AppError("UNAUTHORIZED", tokenRefusal(""));
  return req.tokenGrant;
}
