// Every failure answers application/problem+json from the one error table (errors.ts): the
// error handler, the not-found handler, the router's own errors, and the compilers whose
// failures reach them (a bad body's first 20 issues, validator.ts). Registered at the root
// (fastify-plugin), so every route's scope inherits them.

import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { hasZodFastifySchemaValidationErrors, serializerCompiler } from "fastify-type-provider-zod";
import { SandboxUnavailableError } from "../../sandbox/host/sandbox.ts";
import type { Config } from "../config.ts";
import { AppError, type ErrorCode, FASTIFY_CODES, problem } from "../errors.ts";
import { boundedValidatorCompiler, describeZodIssues } from "../validator.ts";

/** Errors raised by the router itself (bad URL encoding, overlong parameters): Fastify's `frameworkErrors` option. */
export function frameworkErrors(error: FastifyError, req: FastifyRequest, res: FastifyReply): void {
  const body = problem("INVALID_REQUEST", `${error.message}; keys and projects are at most 128 characters`, req.id);
  res.code(400).header("x-request-id", req.id).type("application/problem+json").send(JSON.stringify(body));
}

export const errorsPlugin = fp(
  async (app, { config }: { config: Pick<Config, "bodyLimit"> }) => {
    app.setValidatorCompiler(boundedValidatorCompiler);
    app.setSerializerCompiler(serializerCompiler);

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
  },
  { name: "errors" },
);
