// Configuration: one zod schema over process.env, parsed once at start-up.

import { availableParallelism } from "node:os";
import { z } from "zod";
import type { EngineLimits } from "../sandbox/protocol/requests.ts";
import { egressPolicy } from "./egress.ts";
import { parseSecretsKey } from "./secrets/box.ts";
import { parseGrants } from "./secrets/secrets.ts";
import { DEFAULT_QUOTAS, type Quotas } from "./store/quotas.ts";

const int = (fallback: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(fallback);

const EnvSchema = z.object({
  GRADEBOX_HOST: z.string().min(1).default("127.0.0.1"),
  GRADEBOX_PORT: int(8787, 0, 65535),
  GRADEBOX_DB: z.string().min(1).default("./data/gradebox.db"),
  GRADEBOX_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  GRADEBOX_WORKERS: int(availableParallelism(), 1, 64),
  GRADEBOX_TIMEOUT_MS: int(1000, 10, 60_000),
  GRADEBOX_MEMORY_MB: int(64, 8, 4096),
  GRADEBOX_WARM_ISOLATES: int(256, 1, 100_000),
  GRADEBOX_WARM_HEAP_MB: int(384, 16, 65_536),
  GRADEBOX_BODY_LIMIT: int(10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  // request body bytes held at once (body-budget.ts); unset: 64 MiB (at least 4 bodies of the limit), and half of that per project
  GRADEBOX_BODY_BYTES_IN_FLIGHT: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024 * 1024)
    .optional(),
  GRADEBOX_BODY_BYTES_PER_PROJECT: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024 * 1024)
    .optional(),
  // reward-protocol WebSockets (…/reward/ws) one project may have open at once, and the bytes one socket may queue to its client
  GRADEBOX_REWARD_SOCKETS_PER_PROJECT: int(8, 1, 10_000),
  GRADEBOX_REWARD_SOCKET_BUFFER_BYTES: int(64 * 1024 * 1024, 16 * 1024, 1024 * 1024 * 1024),
  GRADEBOX_MAX_BATCH: int(1000, 1, 100_000),
  GRADEBOX_MAX_TURNS: int(1000, 1, 100_000),
  GRADEBOX_MAX_CONTENT: int(1_000_000, 1, 100_000_000),
  // what one project may store (store/quotas.ts): past one, a write answers 409 QUOTA_EXCEEDED and stores nothing
  GRADEBOX_QUOTA_GRADERS: int(DEFAULT_QUOTAS.graders, 1, 10_000_000),
  GRADEBOX_QUOTA_VERSIONS: int(DEFAULT_QUOTAS.versions, 1, 10_000_000),
  GRADEBOX_QUOTA_BYTES: int(DEFAULT_QUOTAS.bytes, 1024, Number.MAX_SAFE_INTEGER),
  GRADEBOX_QUOTA_MODELS: int(DEFAULT_QUOTAS.models, 1, 1_000_000),
  GRADEBOX_QUOTA_SECRETS: int(DEFAULT_QUOTAS.secrets, 1, 1_000_000),
  GRADEBOX_QUOTA_GRADE_TOKENS: int(DEFAULT_QUOTAS.gradeTokens, 1, 10_000_000),
  // PostgreSQL (GRADEBOX_DB=postgres://…): statement connections per node, besides the one that listens for changes
  GRADEBOX_PG_POOL: int(10, 1, 1000),
  // outbound calls (judge models, endpoints) in flight at once: per project, and on the node
  GRADEBOX_OUTBOUND_PER_PROJECT: int(64, 1, 10_000),
  GRADEBOX_LOOP_WORK_PER_PROJECT: int(4, 1, 1_000),
  GRADEBOX_OUTBOUND_MAX: int(512, 1, 100_000),
  // host names and CIDRs outbound calls (judge models) may reach beyond public addresses
  GRADEBOX_EGRESS_ALLOW: z
    .string()
    .max(10_000)
    .default("")
    .superRefine((allow, ctx) => {
      try {
        egressPolicy(allow);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
      }
    }),
  // seals project secrets (32 bytes, hex or base64); unset: made at first start next to a SQLite database
  GRADEBOX_SECRETS_KEY: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z
      .string()
      .refine((k) => parseSecretsKey(k) !== undefined, "GRADEBOX_SECRETS_KEY is 32 bytes as 64 hex digits or base64")
      .optional(),
  ),
  // which projects may use which server environment secret: NAME=project,project;NAME=*
  GRADEBOX_SECRET_GRANTS: z
    .string()
    .max(100_000)
    .default("")
    .superRefine((grants, ctx) => {
      try {
        parseGrants(grants);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
      }
    }),
  // unset (or empty): the server makes one at first start and saves it next to the database
  GRADEBOX_METRICS_TOKEN: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z
      .string()
      .min(16, "the metrics token needs at least 16 characters")
      .max(512, "the metrics token has at most 512 characters")
      .regex(/^[\x21-\x7e]+$/, "the metrics token is printable ASCII without spaces")
      .optional(),
  ),
  // the operator's token for managing every project's API keys over HTTP; unset (or empty): none
  GRADEBOX_ADMIN_TOKEN: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z
      .string()
      .min(32, "the admin token needs at least 32 characters")
      .max(512, "the admin token has at most 512 characters")
      .regex(/^[\x21-\x7e]+$/, "the admin token is printable ASCII without spaces")
      .optional(),
  ),
});

export interface Config {
  host: string;
  port: number;
  dbPath: string;
  logLevel: z.infer<typeof EnvSchema>["GRADEBOX_LOG_LEVEL"];
  workers: number;
  timeoutMs: number;
  memoryMb: number;
  warmIsolates: number;
  /** heap (MB) all warm isolates of one worker may hold together */
  warmHeapMb: number;
  bodyLimit: number;
  /** request body bytes the process holds at once, all projects together (body-budget.ts) */
  bodyBytesInFlight: number;
  /** request body bytes one project holds at once */
  bodyBytesPerProject: number;
  /** reward sockets one project may have open at once (GRADEBOX_REWARD_SOCKETS_PER_PROJECT) */
  rewardSocketsPerProject: number;
  /** bytes one reward socket may queue to its client: an answer over them is refused (GRADEBOX_REWARD_SOCKET_BUFFER_BYTES) */
  rewardSocketBufferBytes: number;
  maxBatch: number;
  maxTurns: number;
  /** characters per turn content */
  maxContent: number;
  /** PostgreSQL: statement connections per node */
  pgPool: number;
  /** what one project may store (GRADEBOX_QUOTA_*) */
  quotas: Quotas;
  /** outbound calls of one project in flight at once (GRADEBOX_OUTBOUND_PER_PROJECT) */
  outboundPerProject: number;
  /** judge and endpoint gradings of one project doing their work on the event loop at once (GRADEBOX_LOOP_WORK_PER_PROJECT; loop-share.ts) */
  loopWorkPerProject: number;
  /** outbound calls of the node in flight at once (GRADEBOX_OUTBOUND_MAX) */
  outboundMax: number;
  /** GRADEBOX_EGRESS_ALLOW: host names and CIDRs outbound calls may reach beyond public addresses */
  egressAllow: string;
  /** GRADEBOX_SECRETS_KEY, when set (else bootstrapSecretsKey makes one beside a SQLite database) */
  secretsKey?: string;
  /** GRADEBOX_SECRET_GRANTS */
  secretGrants: string;
  /** the bearer token GET /metrics needs; unset: made at first start (bootstrapMetricsToken) */
  metricsToken?: string;
  /** GRADEBOX_ADMIN_TOKEN: the operator's bearer token for every project's keys routes; unset: none */
  adminToken?: string;
}

/** The source size limit of the function-grader contract (UTF-8 bytes); not configurable. */
export const MAX_SOURCE_BYTES = 64 * 1024;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`invalid configuration:\n${lines.join("\n")}`);
  }
  const e = parsed.data;
  const bodyBytesInFlight = e.GRADEBOX_BODY_BYTES_IN_FLIGHT ?? Math.max(64 * 1024 * 1024, 4 * e.GRADEBOX_BODY_LIMIT);
  const bodyBytesPerProject = e.GRADEBOX_BODY_BYTES_PER_PROJECT ?? Math.floor(bodyBytesInFlight / 2);
  // a share below the body limit would refuse the largest bodies the limit allows, every time
  if (bodyBytesPerProject < e.GRADEBOX_BODY_LIMIT || bodyBytesPerProject > bodyBytesInFlight) {
    throw new Error(
      "invalid configuration:\n  GRADEBOX_BODY_BYTES_PER_PROJECT: a project's share of request body bytes in flight " +
        `(${bodyBytesPerProject}${e.GRADEBOX_BODY_BYTES_PER_PROJECT === undefined ? ", half of GRADEBOX_BODY_BYTES_IN_FLIGHT" : ""}) ` +
        `must be at least GRADEBOX_BODY_LIMIT (${e.GRADEBOX_BODY_LIMIT}) and at most GRADEBOX_BODY_BYTES_IN_FLIGHT (${bodyBytesInFlight})`,
    );
  }
  return {
    host: e.GRADEBOX_HOST,
    port: e.GRADEBOX_PORT,
    dbPath: e.GRADEBOX_DB,
    logLevel: e.GRADEBOX_LOG_LEVEL,
    workers: e.GRADEBOX_WORKERS,
    timeoutMs: e.GRADEBOX_TIMEOUT_MS,
    memoryMb: e.GRADEBOX_MEMORY_MB,
    warmIsolates: e.GRADEBOX_WARM_ISOLATES,
    warmHeapMb: e.GRADEBOX_WARM_HEAP_MB,
    bodyLimit: e.GRADEBOX_BODY_LIMIT,
    bodyBytesInFlight,
    bodyBytesPerProject,
    rewardSocketsPerProject: e.GRADEBOX_REWARD_SOCKETS_PER_PROJECT,
    rewardSocketBufferBytes: e.GRADEBOX_REWARD_SOCKET_BUFFER_BYTES,
    maxBatch: e.GRADEBOX_MAX_BATCH,
    maxTurns: e.GRADEBOX_MAX_TURNS,
    maxContent: e.GRADEBOX_MAX_CONTENT,
    pgPool: e.GRADEBOX_PG_POOL,
    quotas: {
      graders: e.GRADEBOX_QUOTA_GRADERS,
      versions: e.GRADEBOX_QUOTA_VERSIONS,
      bytes: e.GRADEBOX_QUOTA_BYTES,
      models: e.GRADEBOX_QUOTA_MODELS,
      secrets: e.GRADEBOX_QUOTA_SECRETS,
      gradeTokens: e.GRADEBOX_QUOTA_GRADE_TOKENS,
    },
    egressAllow: e.GRADEBOX_EGRESS_ALLOW,
    outboundPerProject: e.GRADEBOX_OUTBOUND_PER_PROJECT,
    loopWorkPerProject: e.GRADEBOX_LOOP_WORK_PER_PROJECT,
    outboundMax: e.GRADEBOX_OUTBOUND_MAX,
    secretGrants: e.GRADEBOX_SECRET_GRANTS,
    ...(e.GRADEBOX_SECRETS_KEY ? { secretsKey: e.GRADEBOX_SECRETS_KEY } : {}),
    ...(e.GRADEBOX_METRICS_TOKEN ? { metricsToken: e.GRADEBOX_METRICS_TOKEN } : {}),
    ...(e.GRADEBOX_ADMIN_TOKEN ? { adminToken: e.GRADEBOX_ADMIN_TOKEN } : {}),
  };
}

/** The sandbox pool's options from the configuration. */
export function poolOptions(config: Config): { size: number; limits: EngineLimits } {
  return {
    size: config.workers,
    limits: { timeoutMs: config.timeoutMs, memoryMb: config.memoryMb, maxWarm: config.warmIsolates, maxWarmHeapMb: config.warmHeapMb },
  };
}
