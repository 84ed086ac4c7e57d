// NeMo Gym's resources server, one per grade token. Gym addresses a resources server by host and
// port only (`http://{host}:{port}{path}`, nemo_gym/server_utils.py): no base path, so a token
// cannot sit in a path Gym builds. Two addresses reach the same routes:
// - host-based: `<token>.gym.<anything>` on the server's own port (Gym's `host:` is that name,
//   resolved by wildcard DNS or a hosts-file line); rewriteGymUrl turns the Host into the path;
// - `/gym/<token>/…`: the path form, for a reverse proxy that gives a port to a token, and curl.
// Gym's observability prefixes a resources server's paths with /ng-rollout/<id>: dropped.
// Not part of the OpenAPI document: docs/trainers/nemo-gym.md documents them.

import type { FastifyInstance } from "fastify";
import type { Config } from "../config.ts";
import { AppError } from "../errors.ts";
import type { Grading } from "../grading.ts";
import { parseJsonOrRefuse } from "../json-body.ts";
import { refuseGroupOnly } from "../results.ts";
import type { Store } from "../store.ts";
import { authenticateToken, grantOf } from "../token-auth.ts";
import { aggregateMetrics, appendMembers, resultNote, rewardComponents, threadOfVerify } from "../trainers/gym.ts";
import { isRefused } from "../trainers/openrlhf.ts";
import { withOverrides } from "../trainers/token-options.ts";

const GYM_HOST = /^(gbr-[0-9a-f]{40})\.gym\./i;
const ROLLOUT_PREFIX = /^(\/gym\/[^/?]+)\/ng-rollout\/[^/?]+(?=\/)/;

/** Fastify's rewriteUrl: a request to `<token>.gym.<host>` is one to /gym/<token>/…; /ng-rollout/<id> is dropped. */
export function rewriteGymUrl(req: { url?: string; headers: { host?: string } }): string {
  const url = req.url ?? "/";
  const host = GYM_HOST.exec(req.headers.host ?? "");
  const path = host ? `/gym/${(host[1] as string).toLowerCase()}${url.startsWith("/") ? url : `/${url}`}` : url;
  return path.replace(ROLLOUT_PREFIX, "$1");
}

interface RawBody {
  raw: string;
  value: unknown;
}

export async function gymRoutes(fastify: FastifyInstance, { config, store, grading }: { config: Config; store: Store; grading: Grading }) {
  fastify.addHook("onRequest", authenticateToken(store.cache));
  // /verify echoes the body's bytes: the text is kept beside its parsed value (this plugin's parser only)
  fastify.removeContentTypeParser("application/json");
  fastify.addContentTypeParser("application/json", { parseAs: "string" }, (_req, text, done) => {
    try {
      done(null, { raw: text as string, value: parseJsonOrRefuse(text as string, "the request body") } satisfies RawBody);
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  const objectBody = (body: unknown, what: string): { raw: string; value: Record<string, unknown> } => {
    const b = body as RawBody | undefined;
    if (!b || typeof b.value !== "object" || b.value === null || Array.isArray(b.value)) {
      throw new AppError("INVALID_REQUEST", `${what} takes a JSON object`);
    }
    return { raw: b.raw, value: b.value as Record<string, unknown> };
  };

  fastify.post("/gym/:token/seed_session", { schema: { hide: true } }, async () => ({}));

  fastify.post("/gym/:token/verify", { schema: { hide: true } }, async (req, reply) => {
    const grant = grantOf(req);
    const options = withOverrides(grant.options, req.query);
    const { raw, value } = objectBody(req.body, "/verify");
    const thread = threadOfVerify(value, config);
    let outcome: Parameters<typeof rewardComponents>[0];
    let version: number | undefined;
    if (isRefused(thread)) outcome = thread;
    else {
      const graded = await grading.gradeByKey(grant.project, grant.grader, [thread], { route: "grade" });
      refuseGroupOnly(graded.outcomes);
      outcome = graded.outcomes[0] as typeof outcome;
      version = graded.version;
    }
    const reward = "score" in outcome && Number.isFinite(outcome.score) ? outcome.score : options.fallback;
    const text = appendMembers(raw, value, {
      reward,
      reward_components: rewardComponents(outcome, reward, grant.grader),
      gradebox: resultNote(outcome, { grader: grant.grader, version }),
    });
    return reply.type("application/json").send(text);
  });

  fastify.post("/gym/:token/aggregate_metrics", { schema: { hide: true } }, async (req) => {
    const { value } = objectBody(req.body, "/aggregate_metrics");
    const list = value.verify_responses;
    if (!Array.isArray(list) || !list.every((v) => typeof v === "object" && v !== null && !Array.isArray(v))) {
      throw new AppError("INVALID_REQUEST", '/aggregate_metrics takes {"verify_responses": [<verify answer>, ...]}');
    }
    return aggregateMetrics(list as Array<Record<string, unknown>>);
  });
}
