// POST /rm/:token — OpenRLHF's remote reward model (`--reward.remote_url`, formerly
// `--remote_rm_url`), graded by the token's grader. The shape and its reasons are in
// trainers/openrlhf.ts. Not part of the OpenAPI document: its caller is OpenRLHF, and
// docs/trainers/openrlhf.md documents it.

import type { FastifyInstance } from "fastify";
import type { WireThread } from "../../sdk/thread.ts";
import type { Config } from "../config.ts";
import { AppError } from "../errors.ts";
import type { Grading } from "../grading.ts";
import { clientGone } from "../request-work.ts";
import { refuseGroupOnly } from "../results.ts";
import type { Store } from "../store.ts";
import { authenticateToken, grantOf } from "../token-auth.ts";
import { answerOf, isRefused, requestSchema, threadsOf } from "../trainers/openrlhf.ts";
import { withOverrides } from "../trainers/token-options.ts";

export async function openRlhfRoutes(
  fastify: FastifyInstance,
  { config, store, grading }: { config: Config; store: Store; grading: Grading },
) {
  const Body = requestSchema(config);
  fastify.addHook("onRequest", authenticateToken(store.cache));

  fastify.post("/rm/:token", { schema: { hide: true } }, async (req, reply) => {
    const grant = grantOf(req);
    const options = withOverrides(grant.options, req.query);
    const parsed = Body.safeParse(req.body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
      throw new AppError(
        "INVALID_REQUEST",
        `${where}${issue?.message ?? "invalid body"}. OpenRLHF's request is {"query": [...], "prompts": [...], "labels": [...]}, one entry per sample each`,
      );
    }
    const body = parsed.data;
    const row = await store.cache.grader(grant.project, grant.grader);
    const componentNames = options.components ?? row.parts?.map((p) => p.name) ?? [];
    const { threads, promptMismatch } = threadsOf(body, options, config);
    const graded = threads.filter((t): t is WireThread => !isRefused(t));
    const outcomes =
      graded.length === 0
        ? []
        : (await grading.gradeByKey(grant.project, grant.grader, graded, { route: "grade-batch", clientGone: clientGone(reply.raw) }))
            .outcomes;
    refuseGroupOnly(outcomes);
    let next = 0;
    const all = threads.map((t) => (isRefused(t) ? t : outcomes[next++]));
    return answerOf(all as Parameters<typeof answerOf>[0], promptMismatch, options, componentNames);
  });
}
