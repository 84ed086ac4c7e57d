// Graders of every kind as stored: a function grader's current source and script, a combined
// grader's parts, a judge's or an endpoint's definition; created, read, locked and deleted here.
// A function grader's versions are versions.ts's, its faults faults.ts's.

import { createHash, randomUUID } from "node:crypto";
import type { z } from "zod";
import type { CodeSpec } from "../../sandbox/code/spec.ts";
import type { Language } from "../../sandbox/validate/checks.ts";
import { type Db, isUniqueViolation, type Queryable } from "../db/db.ts";
import type { EndpointSpec } from "../endpoints/spec.ts";
import { AppError } from "../errors.ts";
import type { JudgeSpec } from "../judges/spec.ts";
import type { CombineMode as CombineModeSchema, Grader, PartOut } from "../schemas.ts";
import { faultWindowStart } from "./faults.ts";
import type { ModelStore } from "./models.ts";
import { byteSize, type ProjectQuotas } from "./quotas.ts";
import { graderExists, lockedError } from "./rules.ts";
import { insertVersion, type Sample, versionBytes, versionExists } from "./versions.ts";

export type CombineMode = z.infer<typeof CombineModeSchema>;
export interface Part extends Pick<z.infer<typeof PartOut>, "graderKey" | "name" | "weight"> {
  /** pin the part to this version; absent: follow the part's current version */
  version?: number;
}
/** A part with what grading it needs. */
export interface ResolvedPart extends Part {
  id: string;
  kind: "function" | "judge" | "endpoint" | "code";
  /** the version it grades with: pinned, or the part's current one */
  version: number;
  /** set when the part is pinned to `version` */
  pinned: boolean;
  /** function parts: the language of `compiled` (the pinned version's, or the current one's) */
  language?: Language;
  compiled: string;
  /** SHA-256 of the graded version's source (a function part) or of the part's definition */
  sourceSha256: string;
  quarantinedAt: string | null;
  /** judge parts */
  judge?: JudgeSpec;
  modelId?: string;
  /** endpoint parts */
  endpoint?: EndpointSpec;
  /** code parts */
  code?: CodeSpec;
}

/** A grader as stored: the API's view of it (version 1 for a combined or judge grader), and what grading it needs. */
export interface GraderRow extends z.infer<typeof Grader> {
  id: string;
  /** combined graders only */
  parts?: ResolvedPart[];
  /** judge graders only */
  judge?: JudgeSpec;
  modelId?: string;
  /** external endpoint graders only */
  endpoint?: EndpointSpec;
  /** code-execution graders only */
  code?: CodeSpec;
  source: string;
  compiled: string;
}

/** A new function grader (or version); `language` absent: typescript. */
export type NewGrader = Pick<
  GraderRow,
  "project" | "key" | "description" | "source" | "language" | "compiled" | "sourceSha256" | "warnings"
> & {
  samples?: Sample[];
};

/**
 * The sandbox's name for one version of one grader: isolates are never shared across versions,
 * and a grader's fault is its own whatever version ran.
 */
export const sandboxId = (graderId: string, version: number) => `${graderId}@${version}`;
export const graderIdOf = (id: string) => id.split("@")[0];

interface Raw {
  id: string;
  project: string;
  key: string;
  kind: string;
  description: string;
  source: string;
  compiled: string;
  source_sha256: string;
  locked: number;
  warnings: string;
  created_at: string;
  updated_at: string;
  mode: CombineMode | null;
  version: number;
  quarantined_at: string | null;
  recent_faults: number;
  config: string | null;
  model_id: string | null;
  language: Language;
}

type RawPart = Omit<ResolvedPart, "pinned" | "judge" | "modelId" | "endpoint" | "code" | "language"> & {
  language: Language;
  pinned: number;
  config: string | null;
  modelId: string | null;
};

function fromRaw(r: Raw): GraderRow {
  return {
    id: r.id,
    project: r.project,
    key: r.key,
    kind: r.kind as GraderRow["kind"],
    version: r.version,
    // the column's default fills it for every kind: only a function grader has a language
    ...(r.kind === "function" ? { language: r.language } : {}),
    ...(r.mode ? { mode: r.mode } : {}),
    description: r.description,
    source: r.source,
    compiled: r.compiled,
    sourceSha256: r.source_sha256,
    locked: r.locked === 1,
    warnings: JSON.parse(r.warnings) as string[],
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    quarantinedAt: r.quarantined_at,
    recentFaults: r.recent_faults,
    ...configOf(r.kind, r.config, r.model_id),
  };
}

/** A judge's, an endpoint's or a code grader's stored definition: written from a validated spec, read as it is (every grade reads it). */
function configOf(kind: string, config: string | null, modelId: string | null): Pick<GraderRow, "judge" | "modelId" | "endpoint" | "code"> {
  if (!config) return {};
  if (kind === "judge") return { judge: JSON.parse(config) as JudgeSpec, modelId: modelId ?? undefined };
  // stored before `transport` existed: those were all called over HTTP
  if (kind === "endpoint") return { endpoint: { transport: "http", ...(JSON.parse(config) as Partial<EndpointSpec>) } as EndpointSpec };
  if (kind === "code") return { code: JSON.parse(config) as CodeSpec };
  return {};
}

const SELECT = `SELECT g.*, (SELECT CAST(count(*) AS INTEGER) FROM grader_faults f WHERE f.grader_id = g.id AND f.at > ?) AS recent_faults FROM graders g`;

const SQL = {
  insert: `INSERT INTO graders (id, project, key, kind, description, source, language, compiled, source_sha256, locked, warnings, created_at, updated_at, version)
           VALUES (?, ?, ?, 'function', ?, ?, ?, ?, ?, 0, ?, ?, ?, 1)`,
  get: `${SELECT} WHERE g.project = ? AND g.key = ?`,
  list: `${SELECT} WHERE g.project = ? AND g.key > ? ORDER BY g.key LIMIT ?`,
  lock: "UPDATE graders SET locked = ?, updated_at = ? WHERE project = ? AND key = ?",
  delete: "DELETE FROM graders WHERE project = ? AND key = ? AND locked = 0",
  insertCombined: `INSERT INTO graders (id, project, key, kind, mode, description, source, compiled, source_sha256, locked, warnings, created_at, updated_at, bytes)
                   VALUES (?, ?, ?, 'combined', ?, ?, '', '', '', 0, '[]', ?, ?, ?)`,
  insertPart: "INSERT INTO grader_parts (combined_id, position, part_id, name, weight, part_version) VALUES (?, ?, ?, ?, ?, ?)",
  parts: `SELECT g.id, g.key AS "graderKey", g.kind, g.config, g.model_id AS "modelId", coalesce(p.part_version, g.version) AS version,
                 CASE WHEN p.part_version IS NULL THEN 0 ELSE 1 END AS pinned,
                 coalesce(v.compiled, g.compiled) AS compiled, coalesce(v.language, g.language) AS language,
                 coalesce(v.source_sha256, g.source_sha256) AS "sourceSha256", g.quarantined_at AS "quarantinedAt", p.name, p.weight
          FROM grader_parts p JOIN graders g ON g.id = p.part_id
          LEFT JOIN grader_versions v ON v.grader_id = p.part_id AND v.version = p.part_version
          WHERE p.combined_id = ? ORDER BY p.position`,
  insertConfigured: `INSERT INTO graders (id, project, key, kind, description, source, compiled, source_sha256, locked, warnings, created_at, updated_at, config, model_id, bytes)
                     VALUES (?, ?, ?, ?, ?, '', '', ?, 0, '[]', ?, ?, ?, ?, ?)`,
  taken: "SELECT 1 AS taken FROM graders WHERE project = ? AND key = ?",
  usedBy: "SELECT c.key FROM grader_parts p JOIN graders c ON c.id = p.combined_id WHERE p.part_id = ? ORDER BY c.key",
};

export class GraderStore {
  private readonly db: Db;
  private readonly models: ModelStore;
  private readonly quotas: ProjectQuotas;

  constructor(db: Db, models: ModelStore, quotas: ProjectQuotas) {
    this.db = db;
    this.models = models;
    this.quotas = quotas;
  }

  /** Stores a function grader and its version 1. */
  async insert(g: NewGrader): Promise<GraderRow> {
    const id = randomUUID();
    const now = new Date().toISOString();
    const samples = JSON.stringify(g.samples ?? []);
    // the row's copy of its current version is not counted again: the version's row is
    return this.create(g.project, g.key, versionBytes(g, samples), async (q) => {
      await q.run(SQL.insert, [
        id,
        g.project,
        g.key,
        g.description,
        g.source,
        g.language ?? "typescript",
        g.compiled,
        g.sourceSha256,
        JSON.stringify(g.warnings),
        now,
        now,
      ]);
      await insertVersion(q, id, 1, g, samples, now);
    });
  }

  /** Stores a combined grader; its parts must be function graders of the same project. */
  async insertCombined(g: { project: string; key: string; description: string; mode: CombineMode; parts: Part[] }): Promise<GraderRow> {
    const id = randomUUID();
    const bytes = byteSize(g.description);
    return this.create(g.project, g.key, bytes, async (q) => {
      if (await this.read(q, g.project, g.key)) throw graderExists(g.project, g.key);
      const now = new Date().toISOString();
      await q.run(SQL.insertCombined, [id, g.project, g.key, g.mode, g.description, now, now, bytes]);
      for (const [position, part] of g.parts.entries()) {
        const row = await this.read(q, g.project, part.graderKey);
        if (!row)
          throw new AppError("INVALID_COMPONENT", `part "${part.graderKey}" does not exist in project "${g.project}"; create it first`);
        if (row.kind === "combined") {
          throw new AppError(
            "INVALID_COMPONENT",
            `part "${part.graderKey}" is a combined grader; parts are function, judge or endpoint graders`,
          );
        }
        if (part.version !== undefined && row.kind !== "function") {
          throw new AppError(
            "INVALID_COMPONENT",
            `part "${part.graderKey}" is a ${row.kind} grader; only function graders have versions to pin`,
          );
        }
        if (part.version !== undefined && !(await versionExists(q, row.id, part.version))) {
          throw new AppError(
            "INVALID_COMPONENT",
            `part "${part.graderKey}" has no version ${part.version} (it is at version ${row.version})`,
          );
        }
        await q.run(SQL.insertPart, [id, position, row.id, part.name, part.weight, part.version ?? null]);
      }
    });
  }

  /** Stores a judge grader; its model must be one of the project's. */
  async insertJudge(g: { project: string; key: string; description: string; spec: JudgeSpec }): Promise<GraderRow> {
    return this.insertConfigured("judge", g, (await this.models.mustGet(g.project, g.spec.model)).id);
  }

  /** Stores an external endpoint grader. */
  insertEndpoint(g: { project: string; key: string; description: string; spec: EndpointSpec }): Promise<GraderRow> {
    return this.insertConfigured("endpoint", g, null);
  }

  /** Stores a code-execution grader (its definition is what the sandbox's runners grade with). */
  insertCode(g: { project: string; key: string; description: string; spec: CodeSpec }): Promise<GraderRow> {
    return this.insertConfigured("code", g, null);
  }

  /** A grader whose definition is its config (JSON); the row's UNIQUE (project, key) settles a race. */
  private async insertConfigured(
    kind: "judge" | "endpoint" | "code",
    g: { project: string; key: string; description: string; spec: unknown },
    modelId: string | null,
  ): Promise<GraderRow> {
    const now = new Date().toISOString();
    const config = JSON.stringify(g.spec);
    const bytes = byteSize(config, g.description);
    return this.create(g.project, g.key, bytes, async (q) => {
      await q.run(SQL.insertConfigured, [
        randomUUID(),
        g.project,
        g.key,
        kind,
        g.description,
        createHash("sha256").update(config).digest("hex"),
        now,
        now,
        config,
        modelId,
        bytes,
      ]);
    });
  }

  /**
   * Stores a new grader of `bytes`: `write` runs its statements in one transaction, once the
   * project's quotas have room (else QUOTA_EXCEEDED); a key already taken is GRADER_EXISTS, and the
   * stored row is returned. Nothing is published: no node caches a grader that does not exist yet
   * (GRADER_NOT_FOUND is not remembered), so none has anything to drop.
   */
  private async create(project: string, key: string, bytes: number, write: (q: Queryable) => Promise<void>): Promise<GraderRow> {
    try {
      await this.db.tx(async (q) => {
        await this.quotas.lock(q, project);
        // a taken key is answered as such, not as a quota a new grader would exceed
        if (await q.get(SQL.taken, [project, key])) throw graderExists(project, key);
        await this.quotas.check(q, project, { grader: true, bytes });
        await write(q);
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw graderExists(project, key);
      throw error;
    }
    return (await this.get(project, key)) as GraderRow;
  }

  get(project: string, key: string): Promise<GraderRow | undefined> {
    return this.read(this.db, project, key);
  }

  private async read(q: Queryable, project: string, key: string): Promise<GraderRow | undefined> {
    const raw = await q.get<Raw>(SQL.get, [faultWindowStart(), project, key]);
    if (!raw) return undefined;
    const row = fromRaw(raw);
    if (row.kind === "combined") {
      const raws = await q.all<RawPart>(SQL.parts, [row.id]);
      row.parts = raws.map(({ config, modelId, language, ...p }) => ({
        ...p,
        ...(p.kind === "function" ? { language } : {}),
        pinned: p.pinned === 1,
        ...configOf(p.kind, config, modelId),
      }));
    }
    return row;
  }

  async mustGet(project: string, key: string, q: Queryable = this.db): Promise<GraderRow> {
    const row = await this.read(q, project, key);
    if (!row) throw new AppError("GRADER_NOT_FOUND", `no grader "${key}" in project "${project}"`);
    return row;
  }

  /** Keys sort after `cursor` (exclusive); "" starts from the beginning. */
  async list(project: string, cursor: string, limit: number): Promise<GraderRow[]> {
    return (await this.db.all<Raw>(SQL.list, [faultWindowStart(), project, cursor, limit])).map(fromRaw);
  }

  async setLocked(project: string, key: string, locked: boolean): Promise<GraderRow> {
    await this.db.tx(async (q, publish) => {
      const changes = await q.run(SQL.lock, [locked ? 1 : 0, new Date().toISOString(), project, key]);
      if (changes === 0) await this.mustGet(project, key, q);
      publish({ kind: "graders", project });
    });
    return this.mustGet(project, key);
  }

  /** Deletes a grader; returns its id and the sandbox ids of its versions (their warm isolates are to be disposed). */
  delete(project: string, key: string): Promise<{ id: string; ids: string[] }> {
    return this.db.tx(async (q, publish) => {
      const row = await this.mustGet(project, key, q);
      if (row.locked) throw lockedError(key, "deleting");
      const users = (await q.all<{ key: string }>(SQL.usedBy, [row.id])).map((r) => r.key);
      if (users.length > 0) {
        throw new AppError("GRADER_IN_USE", `grader "${key}" is a part of ${users.map((u) => `"${u}"`).join(", ")}; delete those first`, {
          usedBy: users,
        });
      }
      await q.run(SQL.delete, [project, key]);
      publish({ kind: "graders", project });
      return { id: row.id, ids: Array.from({ length: row.version }, (_, i) => sandboxId(row.id, i + 1)) };
    });
  }
}
