// Bearer-key authentication for /v1 routes. A key sees only its own project: any other
// project answers 404, the same as a project that does not exist.

import type { FastifyRequest } from "fastify";

declare module "fastify" {
  interface FastifyRequest {
    /** the project of the request's API key, once authenticated */
    project: string;
  }
}

import { AppError } from "./errors.ts";
import type { Keys } from "./keys.ts";

export function authenticate(keys: Keys) {
  return async (req: FastifyRequest) => {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(req.headers.authorization ?? "");
    if (!match) {
      throw new AppError(
        "UNAUTHORIZED",
        "send `Authorization: Bearer <api key>`; `npx gradebox keys create --project <name>` makes a key (make run prints the default one)",
      );
    }
    const project = keys.verify(match[1]);
    if (!project) throw new AppError("UNAUTHORIZED", "the API key is not valid or has been revoked");
    req.project = project;
    const wanted = (req.params as { project?: string }).project;
    if (wanted !== undefined && wanted !== project) {
      throw new AppError("PROJECT_NOT_FOUND", `no project "${wanted}" for this API key`);
    }
  };
}
