// POST /sf/:token/run_code (and /sf/:token) — SandboxFusion's run_code for verl's sandbox-fusion
// reward path (`sandbox_fusion.url` = https://host/sf/<token>/run_code), run by the token's code
// grader within its limits. The shape and its reasons are in trainers/sandbox-fusion.ts. Not part
// of the OpenAPI document: its caller is verl, and docs/code-graders.md documents it.
//
// verl turns every failed call into a failed test, silently: so every call that ran nothing (a
// refusal, a 504, a runner failure) is counted (gradebox_sandbox_fusion_calls_total) and logged
// at warn, with the token's project.

import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { SandboxUnavailableError } from "../../sandbox/host/sandbox.ts";
import type { Config } from "../config.ts";
import { AppError } from "../errors.ts";
import type { Grading } from "../grading.ts";
import type { Metrics } from "../metrics.ts";
import type { Store } from "../store.ts";
import { authenticateToken, grantOf } from "../token-auth.ts";
import { refusal, requestSchema, responseOf, runSpec, threadOf } from "../trainers/sandbox-fusion.ts";

/** how long a run may wait for the pool beyond its own timeouts before the answer is a 504 (verl's own margin is 10 s) */
const QUEUE_MS = 5_000;

export async function sandboxFusionRoutes(
  fastify: FastifyInstance,
  { config, store, grading, metrics }: { config: Config; store: Store; grading: Grading; metrics: Metrics },
) {
  const Body = requestSchema(config.maxContent);
  /** what a refusal or a 504 told the caller (its detail), for the warn line: verl logs nothing of it */
  const reasons = new WeakMap<FastifyRequest, string>();
  fastify.addHook("onRequest", authenticateToken(store.cache));
  fastify.addHook("onSend", async (req, reply, payload) => {
    if (reply.statusCode >= 400 && typeof payload === "string" && payload.length <= 64 * 1024) {
      try {
        const detail = (JSON.parse(payload) as { detail?: unknown }).detail;
        if (typeof detail === "string") reasons.set(req, detail.slice(0, 500));
      } catch {}
    }
    return payload;
  });
  fastify.addHook("onResponse", async (req, reply) => {
    if (reply.statusCode < 400) return;
    const outcome = reply.statusCode === 504 ? "busy" : "refused";
    const project = req.tokenGrant?.project ?? "unknown";
    const reason = reasons.get(req) ?? `HTTP ${reply.statusCode}`;
    metrics.sandboxFusionCall(project, outcome);
    req.log.warn(
      { project, status: reply.statusCode, outcome, reason },
      `sandbox-fusion run_code ${outcome === "busy" ? "answered 504 (verl retries it)" : "refused"}: verl scores the test 0: ${reason}`,
    );
  });

  const run = async (req: FastifyRequest, reply: FastifyReply) => {
    const grant = grantOf(req);
    const parsed = Body.safeParse(req.body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
      throw new AppError(
        "INVALID_REQUEST",
        `${where}${issue?.message ?? "invalid body"}. SandboxFusion's run_code request is {"code", "language", "stdin", "run_timeout", "memory_limit_MB", …}`,
      );
    }
    const body = parsed.data;
    const row = await store.cache.grader(grant.project, grant.grader);
    if (row.kind !== "code" || !row.code) {
      throw new AppError(
        "INVALID_REQUEST",
        `the token's grader "${row.key}" is a ${row.kind} grader: /sf/<token>/run_code runs programs with a code grader's limits; make a token for one`,
      );
    }
    const refused = refusal(body, row.code);
    if (refused) throw new AppError("INVALID_REQUEST", refused);
    const spec = runSpec(body, row.code);
    const deadlineAt = Date.now() + spec.limits.cpuMs + QUEUE_MS;
    let outcome: Awaited<ReturnType<Grading["runProgram"]>>;
    try {
      outcome = await grading.runProgram(row, spec, threadOf(body), deadlineAt);
    } catch (error) {
      // no sandbox to run it (shutting down, restarting): worth verl's retry, which only a 504 gets
      if (error instanceof SandboxUnavailableError) {
        return reply.code(504).send({ detail: error.message });
      }
      throw error;
    }
    const answer = responseOf(outcome);
    if (answer.outcome === "busy") return reply.code(504).send({ detail: answer.body.message });
    metrics.sandboxFusionCall(grant.project, answer.outcome);
    if (answer.outcome === "sandbox_error") {
      req.log.warn({ project: grant.project, grader: row.key, message: answer.body.message }, "sandbox-fusion run_code: SandboxError");
    }
    return answer.body;
  };
  fastify.post("/sf/:token/run_code", { schema: { hide: true } }, run);
  fastify.post("/sf/:token", { schema: { hide: true } }, run);
}
