// What one project may store, so that no tenant can fill the registry's disk for every other:
// graders, versions per grader, the bytes of all its graders' versions and definitions, models,
// secrets and live grade tokens. Use is counted from the stored rows (a row's `bytes` is its size
// as written, migration 0013), so it is right after any delete. A write over a quota stores
// nothing: it is refused with QUOTA_EXCEEDED, saying what to delete; nothing old is pruned, as a
// pinned or locked version must never disappear unasked.
//
// A check runs in the write's own transaction after `lock`, which takes the project's row: on
// PostgreSQL two writes of one project then count one after the other (each statement of a READ
// COMMITTED transaction sees what committed before it), and on SQLite every write is serial anyway.

import type { Queryable } from "../db/db.ts";
import { AppError } from "../errors.ts";

export interface Quotas {
  /** graders of every kind */
  graders: number;
  /** stored versions of one function grader */
  versions: number;
  /** UTF-8 bytes of every version (source, compiled script, samples, description, warnings) and definition */
  bytes: number;
  models: number;
  secrets: number;
  /** grade tokens not revoked */
  gradeTokens: number;
}

export const DEFAULT_QUOTAS: Quotas = {
  graders: 1000,
  versions: 500,
  bytes: 256 * 1024 * 1024,
  models: 100,
  secrets: 100,
  gradeTokens: 1000,
};

/** The setting that raises each quota. */
export const QUOTA_ENV: Record<keyof Quotas, string> = {
  graders: "GRADEBOX_QUOTA_GRADERS",
  versions: "GRADEBOX_QUOTA_VERSIONS",
  bytes: "GRADEBOX_QUOTA_BYTES",
  models: "GRADEBOX_QUOTA_MODELS",
  secrets: "GRADEBOX_QUOTA_SECRETS",
  gradeTokens: "GRADEBOX_QUOTA_GRADE_TOKENS",
};

/** What a project uses of each quota but `versions` (which is per grader). */
export type Usage = Record<Exclude<keyof Quotas, "versions">, number>;

const count = (from: string) => `SELECT CAST(count(*) AS INTEGER) AS n FROM ${from}`;

const SQL = {
  claim: "INSERT INTO projects (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
  lock: "UPDATE projects SET created_at = created_at WHERE name = ?",
  graders: count("graders WHERE project = ?"),
  versions: count("grader_versions WHERE grader_id = ?"),
  oldest: "SELECT min(version) AS n FROM grader_versions WHERE grader_id = ?",
  bytes: `SELECT (SELECT coalesce(sum(v.bytes), 0) FROM grader_versions v JOIN graders g ON g.id = v.grader_id WHERE g.project = ?)
               + (SELECT coalesce(sum(bytes), 0) FROM graders WHERE project = ?) AS n`,
  largest: `SELECT g.key, g.bytes + coalesce(sum(v.bytes), 0) AS bytes, count(v.version) AS versions
            FROM graders g LEFT JOIN grader_versions v ON v.grader_id = g.id
            WHERE g.project = ? GROUP BY g.id, g.key, g.bytes ORDER BY 2 DESC, g.key LIMIT 3`,
  models: count("models WHERE project = ?"),
  secrets: count("secrets WHERE project = ?"),
  gradeTokens: count("grade_tokens WHERE project = ? AND revoked_at IS NULL"),
};

/** `n` bytes as a person reads them. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

const utf8 = (text: string) => Buffer.byteLength(text, "utf8");
/** The bytes a stored row's text columns take, as migration 0013 measures them. */
export const byteSize = (...texts: string[]) => texts.reduce((sum, t) => sum + utf8(t), 0);

/** What a write would add: a grader, and/or a version of `grader`, of `bytes`. */
export interface Adding {
  grader?: true;
  version?: { id: string; key: string };
  bytes: number;
}

export class ProjectQuotas {
  constructor(readonly limits: Quotas = DEFAULT_QUOTAS) {}

  /** Takes the project's row for the rest of the transaction, so that its quota checks run one at a time. */
  async lock(q: Queryable, project: string): Promise<void> {
    await q.run(SQL.claim, [project, new Date().toISOString()]);
    await q.run(SQL.lock, [project]);
  }

  private async n(q: Queryable, sql: string, params: unknown[]): Promise<number> {
    return Number((await q.get<{ n: number | string | null }>(sql, params))?.n ?? 0);
  }

  async usage(q: Queryable, project: string): Promise<Usage> {
    return {
      graders: await this.n(q, SQL.graders, [project]),
      bytes: await this.n(q, SQL.bytes, [project, project]),
      models: await this.n(q, SQL.models, [project]),
      secrets: await this.n(q, SQL.secrets, [project]),
      gradeTokens: await this.n(q, SQL.gradeTokens, [project]),
    };
  }

  /**
   * Refuses a grader or version that would take the project past a quota. Inside the write's
   * transaction (after `lock`) it is the check; before the costly checks of a source it is only a
   * first answer (`bytes` then a lower bound), so a project over its quota costs no sandbox time.
   */
  async check(q: Queryable, project: string, adding: Adding): Promise<void> {
    const { graders, versions, bytes } = this.limits;
    if (adding.grader) {
      const used = await this.n(q, SQL.graders, [project]);
      if (used + 1 > graders) {
        throw exceeded("graders", graders, used, `project "${project}" has ${used} graders, its quota`, [
          `delete graders it no longer needs (DELETE /v1/projects/${project}/graders/{key}) before creating another`,
        ]);
      }
    }
    if (adding.version) {
      const { id, key } = adding.version;
      const used = await this.n(q, SQL.versions, [id]);
      if (used + 1 > versions) {
        const oldest = await this.n(q, SQL.oldest, [id]);
        throw exceeded("versions", versions, used, `grader "${key}" stores ${used} versions, its quota`, [
          `delete old versions it no longer needs (DELETE /v1/projects/${project}/graders/${key}/versions/{version}; the oldest is ${oldest}) before storing another`,
        ]);
      }
    }
    const used = await this.n(q, SQL.bytes, [project, project]);
    if (used + adding.bytes > bytes) {
      const largest = await q.all<{ key: string; bytes: number | string; versions: number | string }>(SQL.largest, [project]);
      const named = largest.map((g) => {
        const n = Number(g.versions) || 1; // a judge, endpoint, code or combined grader is its one definition
        return `"${g.key}" (${formatBytes(Number(g.bytes))} in ${n} version${n === 1 ? "" : "s"})`;
      });
      throw exceeded(
        "bytes",
        bytes,
        used,
        `project "${project}" stores ${formatBytes(used)} of graders and this would add ${formatBytes(adding.bytes)}, over its quota of ${formatBytes(bytes)}`,
        [
          ...(named.length ? [`its largest graders are ${named.join(", ")}; every version keeps its own copy of its samples`] : []),
          `delete old versions (DELETE /v1/projects/${project}/graders/{key}/versions/{version}) or graders it no longer needs`,
        ],
        { requested: adding.bytes },
      );
    }
  }

  /** Refuses one more model, secret or live grade token past the project's quota. */
  async checkOne(q: Queryable, project: string, quota: "models" | "secrets" | "gradeTokens"): Promise<void> {
    const used = await this.n(q, SQL[quota], [project]);
    const limit = this.limits[quota];
    if (used + 1 <= limit) return;
    const what = { models: "models", secrets: "secrets", gradeTokens: "live grade tokens" }[quota];
    const free = {
      models: `delete models no judge uses (DELETE /v1/projects/${project}/models/{key})`,
      secrets: `delete secrets nothing uses (DELETE /v1/projects/${project}/secrets/{name})`,
      gradeTokens: `revoke tokens no trainer uses (DELETE /v1/projects/${project}/graders/{grader}/tokens/{id})`,
    }[quota];
    throw exceeded(quota, limit, used, `project "${project}" has ${used} ${what}, its quota`, [`${free} before adding another`]);
  }
}

function exceeded(quota: keyof Quotas, limit: number, used: number, said: string, todo: string[], extra: Record<string, unknown> = {}) {
  return new AppError("QUOTA_EXCEEDED", `${said} (${QUOTA_ENV[quota]}=${limit}); ${todo.join("; ")}; or ask the operator to raise it`, {
    quota,
    limit,
    used,
    ...extra,
  });
}
