// The registry: graders, their versions, models, faults and keys, over either database (db/):
// SQLite embedded, or PostgreSQL shared by many nodes. Every write is one transaction that
// publishes what it changed, so each node's caches (registry-cache.ts) drop what is stale.

import { createHash, randomUUID } from "node:crypto";
import type { z } from "zod";
import type { WireThread } from "../sdk/thread.ts";
import { type Db, isPostgresUrl, isUniqueViolation, type Queryable } from "./db/db.ts";
import { PostgresDb } from "./db/postgres.ts";
import { SqliteDb } from "./db/sqlite.ts";
import type { EndpointSpec } from "./endpoints/spec.ts";
import { AppError } from "./errors.ts";
import type { JudgeSpec, ModelRow } from "./judges/spec.ts";
import { Keys } from "./keys.ts";
import { RegistryCache } from "./registry-cache.ts";
import type { CombineMode as CombineModeSchema, Grader, GraderVersionDetail, PartOut } from "./schemas.ts";

export type CombineMode = z.infer<typeof CombineModeSchema>;
export interface Part extends Pick<z.infer<typeof PartOut>, "graderKey" | "name" | "weight"> {
  /** pin the part to this version; absent: follow the part's current version */
  version?: number;
}
/** A part with what grading it needs. */
export interface ResolvedPart extends Part {
  id: string;
  kind: "function" | "judge" | "endpoint";
  /** the version it grades with: pinned, or the part's current one */
  version: number;
  /** set when the part is pinned to `version` */
  pinned: boolean;
  compiled: string;
  quarantinedAt: string | null;
  /** judge parts */
  judge?: JudgeSpec;
  modelId?: string;
  /** endpoint parts */
  endpoint?: EndpointSpec;
}

/** A sample thread a grader carries, with the score it should get. */
export interface Sample {
  thread: WireThread;
  expected?: number;
}

/** One stored version of a function grader: the API's view of it, and the script the sandbox runs. */
export type GraderVersion = z.infer<typeof GraderVersionDetail> & { compiled: string };

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
  source: string;
  compiled: string;
}

/** Faults within this window count towards quarantine. */
export const FAULT_WINDOW_MS = 10 * 60 * 1000;
export const FAULTS_TO_QUARANTINE = 3;

export type NewGrader = Pick<GraderRow, "project" | "key" | "description" | "source" | "compiled" | "sourceSha256" | "warnings"> & {
  samples?: Sample[];
};

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
}

interface RawModel {
  id: string;
  project: string;
  key: string;
  base_url: string;
  model: string;
  api_key_env: string | null;
  api_key_secret: string | null;
  max_concurrency: number;
  timeout_ms: number;
  created_at: string;
}

function modelFromRaw(r: RawModel): ModelRow {
  return {
    id: r.id,
    project: r.project,
    key: r.key,
    baseURL: r.base_url,
    model: r.model,
    ...(r.api_key_env ? { apiKeyEnv: r.api_key_env } : {}),
    ...(r.api_key_secret ? { apiKeySecret: r.api_key_secret } : {}),
    maxConcurrency: r.max_concurrency,
    timeoutMs: r.timeout_ms,
    createdAt: r.created_at,
  };
}

function fromRaw(r: Raw): GraderRow {
  return {
    id: r.id,
    project: r.project,
    key: r.key,
    kind: r.kind as GraderRow["kind"],
    version: r.version,
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

/** A judge's or an endpoint's stored definition: written from a validated spec, read as it is (every grade reads it). */
function configOf(kind: string, config: string | null, modelId: string | null): Pick<GraderRow, "judge" | "modelId" | "endpoint"> {
  if (!config) return {};
  if (kind === "judge") return { judge: JSON.parse(config) as JudgeSpec, modelId: modelId ?? undefined };
  if (kind === "endpoint") return { endpoint: JSON.parse(config) as EndpointSpec };
  return {};
}

const SELECT_GRADER = `SELECT g.*, (SELECT CAST(count(*) AS INTEGER) FROM grader_faults f WHERE f.grader_id = g.id AND f.at > ?) AS recent_faults FROM graders g`;
const since = () => new Date(Date.now() - FAULT_WINDOW_MS).toISOString();

/**
 * The sandbox's name for one version of one grader: isolates are never shared across versions,
 * and a grader's fault is its own whatever version ran.
 */
export const sandboxId = (graderId: string, version: number) => `${graderId}@${version}`;
export const graderIdOf = (id: string) => id.split("@")[0];

const lockedError = (key: string, doing: string) =>
  new AppError("GRADER_LOCKED", `grader "${key}" is locked; unlock it (PUT …/lock {"locked": false}) before ${doing} it`);

/** Only an unlocked function grader takes a new source. */
export function assertUpdatable(row: GraderRow): void {
  if (row.locked) throw lockedError(row.key, "updating");
  if (row.kind !== "function") {
    throw new AppError("INVALID_REQUEST", `grader "${row.key}" is a ${row.kind} grader; only function graders take a new source`);
  }
}

export const graderExists = (project: string, key: string) =>
  new AppError("GRADER_EXISTS", `grader "${key}" already exists in project "${project}"; delete it first or pick another key`);

const SQL = {
  insert: `INSERT INTO graders (id, project, key, kind, description, source, compiled, source_sha256, locked, warnings, created_at, updated_at, version)
           VALUES (?, ?, ?, 'function', ?, ?, ?, ?, 0, ?, ?, ?, 1)`,
  get: `${SELECT_GRADER} WHERE g.project = ? AND g.key = ?`,
  list: `${SELECT_GRADER} WHERE g.project = ? AND g.key > ? ORDER BY g.key LIMIT ?`,
  addFault: "INSERT INTO grader_faults (grader_id, at, reason) VALUES (?, ?, ?)",
  countFaults: "SELECT CAST(count(*) AS INTEGER) AS n FROM grader_faults WHERE grader_id = ? AND at > ?",
  quarantine: "UPDATE graders SET quarantined_at = ? WHERE id = ? AND quarantined_at IS NULL",
  projectOf: "SELECT project FROM graders WHERE id = ?",
  release: "UPDATE graders SET quarantined_at = NULL WHERE id = ?",
  clearFaults: "DELETE FROM grader_faults WHERE grader_id = ?",
  lock: "UPDATE graders SET locked = ?, updated_at = ? WHERE project = ? AND key = ?",
  delete: "DELETE FROM graders WHERE project = ? AND key = ? AND locked = 0",
  insertCombined: `INSERT INTO graders (id, project, key, kind, mode, description, source, compiled, source_sha256, locked, warnings, created_at, updated_at)
                   VALUES (?, ?, ?, 'combined', ?, ?, '', '', '', 0, '[]', ?, ?)`,
  insertPart: "INSERT INTO grader_parts (combined_id, position, part_id, name, weight, part_version) VALUES (?, ?, ?, ?, ?, ?)",
  parts: `SELECT g.id, g.key AS "graderKey", g.kind, g.config, g.model_id AS "modelId", coalesce(p.part_version, g.version) AS version,
                 CASE WHEN p.part_version IS NULL THEN 0 ELSE 1 END AS pinned,
                 coalesce(v.compiled, g.compiled) AS compiled, g.quarantined_at AS "quarantinedAt", p.name, p.weight
          FROM grader_parts p JOIN graders g ON g.id = p.part_id
          LEFT JOIN grader_versions v ON v.grader_id = p.part_id AND v.version = p.part_version
          WHERE p.combined_id = ? ORDER BY p.position`,
  insertVersion: `INSERT INTO grader_versions (grader_id, version, description, source, compiled, source_sha256, warnings, samples, created_at)
                  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  setCurrent: `UPDATE graders SET version = ?, description = ?, source = ?, compiled = ?, source_sha256 = ?, warnings = ?, updated_at = ? WHERE id = ?`,
  versions: "SELECT version, description, source_sha256, warnings, created_at FROM grader_versions WHERE grader_id = ? ORDER BY version",
  version: "SELECT * FROM grader_versions WHERE grader_id = ? AND version = ?",
  samples: "SELECT samples FROM grader_versions WHERE grader_id = ? AND version = ?",
  insertConfigured: `INSERT INTO graders (id, project, key, kind, description, source, compiled, source_sha256, locked, warnings, created_at, updated_at, config, model_id)
                     VALUES (?, ?, ?, ?, ?, '', '', ?, 0, '[]', ?, ?, ?, ?)`,
  insertModel: `INSERT INTO models (id, project, key, base_url, model, api_key_env, api_key_secret, max_concurrency, timeout_ms, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  getModel: "SELECT * FROM models WHERE project = ? AND key = ?",
  getModelById: "SELECT * FROM models WHERE id = ?",
  listModels: "SELECT * FROM models WHERE project = ? ORDER BY key",
  deleteModel: "DELETE FROM models WHERE id = ?",
  modelUsers: "SELECT key FROM graders WHERE model_id = ? ORDER BY key",
  usedBy: "SELECT c.key FROM grader_parts p JOIN graders c ON c.id = p.combined_id WHERE p.part_id = ? ORDER BY c.key",
};

type RawPart = Omit<ResolvedPart, "pinned" | "judge" | "modelId" | "endpoint"> & {
  pinned: number;
  config: string | null;
  modelId: string | null;
};
type RawVersion = {
  version: number;
  description: string;
  source: string;
  compiled: string;
  source_sha256: string;
  warnings: string;
  created_at: string;
};

export interface StoreOptions {
  /** a SQLite path (or ":memory:"), or a postgres:// URL */
  db: string;
  /** PostgreSQL: connections per node in the statement pool */
  pgPool?: number;
  /** bytes of grader scripts the node's cache keeps (default CACHE_SCRIPT_BYTES) */
  cacheBytes?: number;
}

export class Store {
  readonly keys: Keys;
  /** what grading reads: graders, versions and keys kept by this node until a change drops them */
  readonly cache: RegistryCache;

  private constructor(
    readonly db: Db,
    cacheBytes?: number,
  ) {
    this.keys = new Keys(db);
    // PostgreSQL: a revocation is heard at once; the 10 s bound only backs that up. SQLite: `gradebox keys
    // revoke` changes the file from another process, unheard here: each lookup first asks whether the
    // file changed elsewhere (PRAGMA data_version), so no time bound is needed
    this.cache = new RegistryCache(this, db.dialect === "postgres" ? 10_000 : Number.POSITIVE_INFINITY, cacheBytes);
  }

  /** Opens the database named by `db` and brings its schema up to date. */
  static async open({ db, pgPool = 10, cacheBytes }: StoreOptions): Promise<Store> {
    return new Store(isPostgresUrl(db) ? await PostgresDb.open({ url: db, poolSize: pgPool }) : new SqliteDb(db), cacheBytes);
  }

  private static changed(project: string) {
    return { kind: "graders", project } as const;
  }

  /** Stores a combined grader; its parts must be function graders of the same project. */
  async insertCombined(g: { project: string; key: string; description: string; mode: CombineMode; parts: Part[] }): Promise<GraderRow> {
    const id = randomUUID();
    return this.create(g.project, g.key, async (q) => {
      if (await this.read(q, g.project, g.key)) throw graderExists(g.project, g.key);
      const now = new Date().toISOString();
      await q.run(SQL.insertCombined, [id, g.project, g.key, g.mode, g.description, now, now]);
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
        if (part.version !== undefined && !(await q.get(SQL.version, [row.id, part.version]))) {
          throw new AppError(
            "INVALID_COMPONENT",
            `part "${part.graderKey}" has no version ${part.version} (it is at version ${row.version})`,
          );
        }
        await q.run(SQL.insertPart, [id, position, row.id, part.name, part.weight, part.version ?? null]);
      }
    });
  }

  /**
   * Stores a new grader: `write` runs its statements in one transaction, a key already taken is
   * GRADER_EXISTS, and the stored row is returned. Nothing is published: no node caches a grader
   * that does not exist yet (GRADER_NOT_FOUND is not remembered), so none has anything to drop.
   */
  private async create(project: string, key: string, write: (q: Queryable) => Promise<void>): Promise<GraderRow> {
    try {
      await this.db.tx((q) => write(q));
    } catch (error) {
      if (isUniqueViolation(error)) throw graderExists(project, key);
      throw error;
    }
    return (await this.get(project, key)) as GraderRow;
  }

  /** Stores a judge grader; its model must be one of the project's. */
  async insertJudge(g: { project: string; key: string; description: string; spec: JudgeSpec }): Promise<GraderRow> {
    return this.insertConfigured("judge", g, (await this.mustGetModel(g.project, g.spec.model)).id);
  }

  /** Stores an external endpoint grader. */
  insertEndpoint(g: { project: string; key: string; description: string; spec: EndpointSpec }): Promise<GraderRow> {
    return this.insertConfigured("endpoint", g, null);
  }

  /** A grader whose definition is its config (JSON); the row's UNIQUE (project, key) settles a race. */
  private async insertConfigured(
    kind: "judge" | "endpoint",
    g: { project: string; key: string; description: string; spec: unknown },
    modelId: string | null,
  ): Promise<GraderRow> {
    const now = new Date().toISOString();
    const config = JSON.stringify(g.spec);
    return this.create(g.project, g.key, async (q) => {
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
      ]);
    });
  }

  async insertModel(m: Omit<ModelRow, "id" | "createdAt">): Promise<ModelRow> {
    try {
      await this.db.tx(async (q, publish) => {
        await q.run(SQL.insertModel, [
          randomUUID(),
          m.project,
          m.key,
          m.baseURL,
          m.model,
          m.apiKeyEnv ?? null,
          m.apiKeySecret ?? null,
          m.maxConcurrency,
          m.timeoutMs,
          new Date().toISOString(),
        ]);
        publish(Store.changed(m.project));
      });
    } catch (error) {
      if (isUniqueViolation(error)) {
        throw new AppError(
          "MODEL_EXISTS",
          `model "${m.key}" already exists in project "${m.project}"; delete it first or pick another key`,
        );
      }
      throw error;
    }
    return this.mustGetModel(m.project, m.key);
  }

  async mustGetModel(project: string, key: string, q: Queryable = this.db): Promise<ModelRow> {
    const raw = await q.get<RawModel>(SQL.getModel, [project, key]);
    if (!raw)
      throw new AppError(
        "MODEL_NOT_FOUND",
        `no model "${key}" in project "${project}"; register it first (POST /v1/projects/${project}/models)`,
      );
    return modelFromRaw(raw);
  }

  async modelById(id: string): Promise<ModelRow> {
    const raw = await this.db.get<RawModel>(SQL.getModelById, [id]);
    if (!raw) throw new AppError("MODEL_NOT_FOUND", "the grader's model no longer exists");
    return modelFromRaw(raw);
  }

  async listModels(project: string): Promise<ModelRow[]> {
    return (await this.db.all<RawModel>(SQL.listModels, [project])).map(modelFromRaw);
  }

  /** Deletes a model no grader refers to; returns its id. */
  deleteModel(project: string, key: string): Promise<string> {
    return this.db.tx(async (q, publish) => {
      const model = await this.mustGetModel(project, key, q);
      const users = (await q.all<{ key: string }>(SQL.modelUsers, [model.id])).map((r) => r.key);
      if (users.length > 0) {
        throw new AppError(
          "MODEL_IN_USE",
          `model "${key}" is used by ${users.map((u) => `grader "${u}"`).join(", ")}; delete those first`,
          {
            usedBy: users,
          },
        );
      }
      await q.run(SQL.deleteModel, [model.id]);
      publish(Store.changed(project));
      return model.id;
    });
  }

  async insert(g: NewGrader): Promise<GraderRow> {
    const id = randomUUID();
    const now = new Date().toISOString();
    const warnings = JSON.stringify(g.warnings);
    return this.create(g.project, g.key, async (q) => {
      await q.run(SQL.insert, [id, g.project, g.key, g.description, g.source, g.compiled, g.sourceSha256, warnings, now, now]);
      await q.run(SQL.insertVersion, [
        id,
        1,
        g.description,
        g.source,
        g.compiled,
        g.sourceSha256,
        warnings,
        JSON.stringify(g.samples ?? []),
        now,
      ]);
    });
  }

  get(project: string, key: string): Promise<GraderRow | undefined> {
    return this.read(this.db, project, key);
  }

  private async read(q: Queryable, project: string, key: string): Promise<GraderRow | undefined> {
    const raw = await q.get<Raw>(SQL.get, [since(), project, key]);
    if (!raw) return undefined;
    const row = fromRaw(raw);
    if (row.kind === "combined") {
      const raws = await q.all<RawPart>(SQL.parts, [row.id]);
      row.parts = raws.map(({ config, modelId, ...p }) => ({ ...p, pinned: p.pinned === 1, ...configOf(p.kind, config, modelId) }));
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
    return (await this.db.all<Raw>(SQL.list, [since(), project, cursor, limit])).map(fromRaw);
  }

  async setLocked(project: string, key: string, locked: boolean): Promise<GraderRow> {
    await this.db.tx(async (q, publish) => {
      const changes = await q.run(SQL.lock, [locked ? 1 : 0, new Date().toISOString(), project, key]);
      if (changes === 0) await this.mustGet(project, key, q);
      publish(Store.changed(project));
    });
    return this.mustGet(project, key);
  }

  /**
   * Stores a new version of a function grader and makes it current, in one transaction; a
   * locked grader refuses. `expected` guards against a concurrent update: the version the
   * caller validated against must still be current.
   */
  async update(project: string, key: string, next: Omit<NewGrader, "project" | "key">, expected?: number): Promise<GraderRow> {
    await this.db.tx(async (q, publish) => {
      const row = await this.mustGet(project, key, q);
      assertUpdatable(row);
      if (expected !== undefined && row.version !== expected) {
        throw new AppError("GRADER_CONFLICT", `grader "${key}" changed to version ${row.version} while this update was checked; try again`);
      }
      // samples carry over to the new version unless new ones are given
      const samples =
        next.samples === undefined
          ? ((await q.get<{ samples: string }>(SQL.samples, [row.id, row.version]))?.samples ?? "[]")
          : JSON.stringify(next.samples);
      const version = row.version + 1;
      const warnings = JSON.stringify(next.warnings);
      const now = new Date().toISOString();
      await q.run(SQL.insertVersion, [
        row.id,
        version,
        next.description,
        next.source,
        next.compiled,
        next.sourceSha256,
        warnings,
        samples,
        now,
      ]);
      await q.run(SQL.setCurrent, [version, next.description, next.source, next.compiled, next.sourceSha256, warnings, now, row.id]);
      publish(Store.changed(project));
    });
    return this.mustGet(project, key);
  }

  /** The samples of a grader's version (its current one by default). */
  async samples(row: GraderRow, version = row.version): Promise<Sample[]> {
    const text = (await this.db.get<{ samples: string }>(SQL.samples, [row.id, version]))?.samples;
    return text ? (JSON.parse(text) as Sample[]) : [];
  }

  async versions(project: string, key: string): Promise<Array<Omit<GraderVersion, "source" | "compiled">>> {
    const row = await this.mustGet(project, key);
    const raws = await this.db.all<Omit<RawVersion, "source" | "compiled">>(SQL.versions, [row.id]);
    return raws.map((r) => ({
      version: r.version,
      description: r.description,
      sourceSha256: r.source_sha256,
      warnings: JSON.parse(r.warnings) as string[],
      createdAt: r.created_at,
    }));
  }

  async mustGetVersion(project: string, key: string, version: number): Promise<GraderVersion & { graderId: string }> {
    const row = await this.mustGet(project, key);
    return { graderId: row.id, ...(await this.versionOf(row, version)) };
  }

  /** One stored version of a grader (versions never change once stored). */
  async versionOf(row: Pick<GraderRow, "id" | "key" | "version">, version: number): Promise<GraderVersion> {
    const r = await this.db.get<RawVersion>(SQL.version, [row.id, version]);
    if (!r) {
      throw new AppError("VERSION_NOT_FOUND", `grader "${row.key}" has no version ${version}; its versions are 1 to ${row.version}`);
    }
    return {
      version: r.version,
      description: r.description,
      source: r.source,
      compiled: r.compiled,
      sourceSha256: r.source_sha256,
      warnings: JSON.parse(r.warnings) as string[],
      createdAt: r.created_at,
    };
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
      publish(Store.changed(project));
      return { id: row.id, ids: Array.from({ length: row.version }, (_, i) => sandboxId(row.id, i + 1)) };
    });
  }

  /** Records a grader's fault (it took its worker down, or its judge template went over budget); the third time in the window quarantines it (on every node). */
  recordFault(graderId: string, reason: string): Promise<boolean> {
    return this.db.tx(async (q, publish) => {
      const now = new Date();
      const owner = await q.get<{ project: string }>(SQL.projectOf, [graderId]);
      if (!owner) return false; // deleted meanwhile
      await q.run(SQL.addFault, [graderId, now.toISOString(), reason]);
      const n = (await q.get<{ n: number }>(SQL.countFaults, [graderId, since()]))?.n ?? 0;
      const quarantined = n >= FAULTS_TO_QUARANTINE && (await q.run(SQL.quarantine, [now.toISOString(), graderId])) > 0;
      // what nodes cache for grading changes only with the quarantine (they do not read the count)
      if (quarantined) publish(Store.changed(owner.project));
      return quarantined;
    });
  }

  /** Lifts a quarantine and forgets the faults that led to it. */
  async release(project: string, key: string): Promise<GraderRow> {
    await this.db.tx(async (q, publish) => {
      const row = await this.mustGet(project, key, q);
      await q.run(SQL.release, [row.id]);
      await q.run(SQL.clearFaults, [row.id]);
      publish(Store.changed(project));
    });
    return this.mustGet(project, key);
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
