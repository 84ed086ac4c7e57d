// The grader repository over one better-sqlite3 connection. Migrations are numbered SQL files
// applied in order at start-up, each in its own transaction; statements are prepared once.

import { randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import type { z } from "zod";
import type { WireThread } from "../sdk/thread.ts";
import type { EndpointSpec } from "./endpoints/spec.ts";
import { AppError } from "./errors.ts";
import type { JudgeSpec, ModelRow } from "./judges/spec.ts";
import { Keys } from "./keys.ts";
import type { GraderVersionDetail } from "./schemas.ts";

const MIGRATIONS_DIR = new URL("../migrations/", import.meta.url);

export type CombineMode = "weighted" | "any" | "all";
export interface Part {
  graderKey: string;
  name: string;
  weight: number;
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

export interface GraderRow {
  id: string;
  project: string;
  key: string;
  kind: "function" | "combined" | "judge" | "endpoint";
  /** the current version (1 for a combined or judge grader) */
  version: number;
  /** combined graders only */
  mode?: CombineMode;
  parts?: ResolvedPart[];
  /** judge graders only */
  judge?: JudgeSpec;
  modelId?: string;
  /** external endpoint graders only */
  endpoint?: EndpointSpec;
  description: string;
  source: string;
  compiled: string;
  sourceSha256: string;
  locked: boolean;
  warnings: string[];
  createdAt: string;
  updatedAt: string;
  quarantinedAt: string | null;
  /** worker-killing faults in the last ten minutes */
  recentFaults: number;
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

const SELECT_GRADER = `SELECT g.*, (SELECT count(*) FROM grader_faults f WHERE f.grader_id = g.id AND f.at > @since) AS recent_faults FROM graders g`;
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

export function migrate(db: Database.Database): string[] {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT",
  );
  const applied = new Set((db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map((r) => r.version));
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((f) => /^\d{4}_.+\.sql$/.test(f))
    .sort();
  const ran: string[] = [];
  for (const file of files) {
    const version = Number(file.slice(0, 4));
    if (applied.has(version)) continue;
    const sql = readFileSync(new URL(file, MIGRATIONS_DIR), "utf8");
    db.transaction(() => {
      db.exec(sql);
      db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(version, file, new Date().toISOString());
    })();
    ran.push(file);
  }
  return ran;
}

export class Store {
  readonly db: Database.Database;
  readonly keys: Keys;
  private readonly stmts;

  constructor(path: string) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("foreign_keys = ON");
    this.db.pragma("busy_timeout = 5000");
    this.db.pragma("synchronous = NORMAL");
    migrate(this.db);
    this.keys = new Keys(this.db);
    this.stmts = {
      insert: this.db.prepare(
        `INSERT INTO graders (id, project, key, kind, description, source, compiled, source_sha256, locked, warnings, created_at, updated_at, version)
         VALUES (@id, @project, @key, 'function', @description, @source, @compiled, @sourceSha256, 0, @warnings, @now, @now, @version)`,
      ),
      get: this.db.prepare(`${SELECT_GRADER} WHERE g.project = @project AND g.key = @key`),
      list: this.db.prepare(`${SELECT_GRADER} WHERE g.project = @project AND g.key > @cursor ORDER BY g.key LIMIT @limit`),
      addFault: this.db.prepare("INSERT INTO grader_faults (grader_id, at, reason) VALUES (?, ?, ?)"),
      countFaults: this.db.prepare("SELECT count(*) AS n FROM grader_faults WHERE grader_id = ? AND at > ?"),
      quarantine: this.db.prepare("UPDATE graders SET quarantined_at = ? WHERE id = ? AND quarantined_at IS NULL"),
      release: this.db.prepare("UPDATE graders SET quarantined_at = NULL WHERE id = ?"),
      clearFaults: this.db.prepare("DELETE FROM grader_faults WHERE grader_id = ?"),
      lock: this.db.prepare("UPDATE graders SET locked = ?, updated_at = ? WHERE project = ? AND key = ?"),
      delete: this.db.prepare("DELETE FROM graders WHERE project = ? AND key = ? AND locked = 0"),
      insertCombined: this.db.prepare(
        `INSERT INTO graders (id, project, key, kind, mode, description, source, compiled, source_sha256, locked, warnings, created_at, updated_at)
         VALUES (@id, @project, @key, 'combined', @mode, @description, '', '', '', 0, '[]', @now, @now)`,
      ),
      insertPart: this.db.prepare(
        "INSERT INTO grader_parts (combined_id, position, part_id, name, weight, part_version) VALUES (?, ?, ?, ?, ?, ?)",
      ),
      parts: this.db.prepare(
        `SELECT g.id, g.key AS graderKey, g.kind, g.config, g.model_id AS modelId, coalesce(p.part_version, g.version) AS version, p.part_version IS NOT NULL AS pinned,
                coalesce(v.compiled, g.compiled) AS compiled, g.quarantined_at AS quarantinedAt, p.name, p.weight
         FROM grader_parts p JOIN graders g ON g.id = p.part_id
         LEFT JOIN grader_versions v ON v.grader_id = p.part_id AND v.version = p.part_version
         WHERE p.combined_id = ? ORDER BY p.position`,
      ),
      insertVersion: this.db.prepare(
        `INSERT INTO grader_versions (grader_id, version, description, source, compiled, source_sha256, warnings, samples, created_at)
         VALUES (@id, @version, @description, @source, @compiled, @sourceSha256, @warnings, @samples, @now)`,
      ),
      setCurrent: this.db.prepare(
        `UPDATE graders SET version = @version, description = @description, source = @source, compiled = @compiled,
                source_sha256 = @sourceSha256, warnings = @warnings, updated_at = @now WHERE id = @id`,
      ),
      versions: this.db.prepare(
        "SELECT version, description, source_sha256, warnings, created_at FROM grader_versions WHERE grader_id = ? ORDER BY version",
      ),
      version: this.db.prepare("SELECT * FROM grader_versions WHERE grader_id = ? AND version = ?"),
      samples: this.db.prepare("SELECT samples FROM grader_versions WHERE grader_id = ? AND version = ?").pluck(),
      insertConfigured: this.db.prepare(
        `INSERT INTO graders (id, project, key, kind, description, source, compiled, source_sha256, locked, warnings, created_at, updated_at, config, model_id)
         VALUES (@id, @project, @key, @kind, @description, '', '', @sha256, 0, '[]', @now, @now, @config, @modelId)`,
      ),
      insertModel: this.db.prepare(
        `INSERT INTO models (id, project, key, base_url, model, api_key_env, max_concurrency, timeout_ms, created_at)
         VALUES (@id, @project, @key, @baseURL, @model, @apiKeyEnv, @maxConcurrency, @timeoutMs, @now)`,
      ),
      getModel: this.db.prepare("SELECT * FROM models WHERE project = ? AND key = ?"),
      getModelById: this.db.prepare("SELECT * FROM models WHERE id = ?"),
      listModels: this.db.prepare("SELECT * FROM models WHERE project = ? ORDER BY key"),
      deleteModel: this.db.prepare("DELETE FROM models WHERE id = ?"),
      modelUsers: this.db.prepare("SELECT key FROM graders WHERE model_id = ? ORDER BY key"),
      usedBy: this.db.prepare("SELECT c.key FROM grader_parts p JOIN graders c ON c.id = p.combined_id WHERE p.part_id = ? ORDER BY c.key"),
    };
  }

  /** Stores a combined grader; its parts must be function graders of the same project. */
  insertCombined(g: { project: string; key: string; description: string; mode: CombineMode; parts: Part[] }): GraderRow {
    const id = randomUUID();
    this.db.transaction(() => {
      if (this.get(g.project, g.key)) {
        throw graderExists(g.project, g.key);
      }
      const now = new Date().toISOString();
      this.stmts.insertCombined.run({ id, project: g.project, key: g.key, mode: g.mode, description: g.description, now });
      g.parts.forEach((part, position) => {
        const row = this.get(g.project, part.graderKey);
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
        if (part.version !== undefined && !this.stmts.version.get(row.id, part.version)) {
          throw new AppError(
            "INVALID_COMPONENT",
            `part "${part.graderKey}" has no version ${part.version} (it is at version ${row.version})`,
          );
        }
        this.stmts.insertPart.run(id, position, row.id, part.name, part.weight, part.version ?? null);
      });
    })();
    return this.get(g.project, g.key) as GraderRow;
  }

  /** Stores a judge grader; its model must be one of the project's. */
  insertJudge(g: { project: string; key: string; description: string; spec: JudgeSpec; sha256: string }): GraderRow {
    return this.insertConfigured("judge", g, this.mustGetModel(g.project, g.spec.model).id);
  }

  /** Stores an external endpoint grader. */
  insertEndpoint(g: { project: string; key: string; description: string; spec: EndpointSpec; sha256: string }): GraderRow {
    return this.insertConfigured("endpoint", g, null);
  }

  /** A grader whose definition is its config (JSON); the row's UNIQUE (project, key) settles a race. */
  private insertConfigured(
    kind: "judge" | "endpoint",
    g: { project: string; key: string; description: string; spec: unknown; sha256: string },
    modelId: string | null,
  ): GraderRow {
    try {
      this.stmts.insertConfigured.run({
        kind,
        id: randomUUID(),
        project: g.project,
        key: g.key,
        description: g.description,
        sha256: g.sha256,
        config: JSON.stringify(g.spec),
        modelId,
        now: new Date().toISOString(),
      });
    } catch (error) {
      if ((error as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") throw graderExists(g.project, g.key);
      throw error;
    }
    return this.get(g.project, g.key) as GraderRow;
  }

  insertModel(m: Omit<ModelRow, "id" | "createdAt">): ModelRow {
    try {
      this.stmts.insertModel.run({ ...m, apiKeyEnv: m.apiKeyEnv ?? null, id: randomUUID(), now: new Date().toISOString() });
    } catch (error) {
      if ((error as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") {
        throw new AppError(
          "MODEL_EXISTS",
          `model "${m.key}" already exists in project "${m.project}"; delete it first or pick another key`,
        );
      }
      throw error;
    }
    return this.mustGetModel(m.project, m.key);
  }

  mustGetModel(project: string, key: string): ModelRow {
    const raw = this.stmts.getModel.get(project, key) as RawModel | undefined;
    if (!raw)
      throw new AppError(
        "MODEL_NOT_FOUND",
        `no model "${key}" in project "${project}"; register it first (POST /v1/projects/${project}/models)`,
      );
    return modelFromRaw(raw);
  }

  modelById(id: string): ModelRow {
    const raw = this.stmts.getModelById.get(id) as RawModel | undefined;
    if (!raw) throw new AppError("MODEL_NOT_FOUND", "the grader's model no longer exists");
    return modelFromRaw(raw);
  }

  listModels(project: string): ModelRow[] {
    return (this.stmts.listModels.all(project) as RawModel[]).map(modelFromRaw);
  }

  /** Deletes a model no grader refers to; returns its id. */
  deleteModel(project: string, key: string): string {
    return this.db.transaction(() => {
      const model = this.mustGetModel(project, key);
      const users = (this.stmts.modelUsers.all(model.id) as { key: string }[]).map((r) => r.key);
      if (users.length > 0) {
        throw new AppError(
          "MODEL_IN_USE",
          `model "${key}" is used by ${users.map((u) => `grader "${u}"`).join(", ")}; delete those first`,
          {
            usedBy: users,
          },
        );
      }
      this.stmts.deleteModel.run(model.id);
      return model.id;
    })();
  }

  insert(g: NewGrader): GraderRow {
    const id = randomUUID();
    try {
      this.db.transaction(() => {
        const values = {
          ...g,
          id,
          version: 1,
          warnings: JSON.stringify(g.warnings),
          samples: JSON.stringify(g.samples ?? []),
          now: new Date().toISOString(),
        };
        this.stmts.insert.run(values);
        this.stmts.insertVersion.run(values);
      })();
    } catch (error) {
      if ((error as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") {
        throw graderExists(g.project, g.key);
      }
      throw error;
    }
    return this.get(g.project, g.key) as GraderRow;
  }

  get(project: string, key: string): GraderRow | undefined {
    const raw = this.stmts.get.get({ project, key, since: since() }) as Raw | undefined;
    if (!raw) return undefined;
    const row = fromRaw(raw);
    if (row.kind === "combined") {
      const raws = this.stmts.parts.all(row.id) as Array<
        Omit<ResolvedPart, "pinned" | "judge" | "modelId" | "endpoint"> & { pinned: number; config: string | null; modelId: string | null }
      >;
      row.parts = raws.map(({ config, modelId, ...p }) => ({ ...p, pinned: p.pinned === 1, ...configOf(p.kind, config, modelId) }));
    }
    return row;
  }

  mustGet(project: string, key: string): GraderRow {
    const row = this.get(project, key);
    if (!row) throw new AppError("GRADER_NOT_FOUND", `no grader "${key}" in project "${project}"`);
    return row;
  }

  /** Keys sort after `cursor` (exclusive); "" starts from the beginning. */
  list(project: string, cursor: string, limit: number): GraderRow[] {
    return (this.stmts.list.all({ project, cursor, limit, since: since() }) as Raw[]).map(fromRaw);
  }

  setLocked(project: string, key: string, locked: boolean): GraderRow {
    const { changes } = this.stmts.lock.run(locked ? 1 : 0, new Date().toISOString(), project, key);
    if (changes === 0) this.mustGet(project, key);
    return this.mustGet(project, key);
  }

  /**
   * Stores a new version of a function grader and makes it current, in one transaction; a
   * locked grader refuses. `expected` guards against a concurrent update: the version the
   * caller validated against must still be current.
   */
  update(project: string, key: string, next: Omit<NewGrader, "project" | "key">, expected?: number): GraderRow {
    this.db.transaction(() => {
      const row = this.mustGet(project, key);
      assertUpdatable(row);
      if (expected !== undefined && row.version !== expected) {
        throw new AppError("GRADER_CONFLICT", `grader "${key}" changed to version ${row.version} while this update was checked; try again`);
      }
      // samples carry over to the new version unless new ones are given
      const samples =
        next.samples === undefined
          ? ((this.stmts.samples.get(row.id, row.version) as string | undefined) ?? "[]")
          : JSON.stringify(next.samples);
      const values = {
        ...next,
        id: row.id,
        version: row.version + 1,
        warnings: JSON.stringify(next.warnings),
        samples,
        now: new Date().toISOString(),
      };
      this.stmts.insertVersion.run(values);
      this.stmts.setCurrent.run(values);
    })();
    return this.mustGet(project, key);
  }

  /** The samples of a grader's version (its current one by default). */
  samples(row: GraderRow, version = row.version): Sample[] {
    const text = this.stmts.samples.get(row.id, version) as string | undefined;
    return text ? (JSON.parse(text) as Sample[]) : [];
  }

  versions(project: string, key: string): Array<Omit<GraderVersion, "source" | "compiled">> {
    const row = this.mustGet(project, key);
    const raws = this.stmts.versions.all(row.id) as Array<{
      version: number;
      description: string;
      source_sha256: string;
      warnings: string;
      created_at: string;
    }>;
    return raws.map((r) => ({
      version: r.version,
      description: r.description,
      sourceSha256: r.source_sha256,
      warnings: JSON.parse(r.warnings) as string[],
      createdAt: r.created_at,
    }));
  }

  mustGetVersion(project: string, key: string, version: number): GraderVersion & { graderId: string } {
    const row = this.mustGet(project, key);
    const r = this.stmts.version.get(row.id, version) as
      | {
          version: number;
          description: string;
          source: string;
          compiled: string;
          source_sha256: string;
          warnings: string;
          created_at: string;
        }
      | undefined;
    if (!r) {
      throw new AppError("VERSION_NOT_FOUND", `grader "${key}" has no version ${version}; its versions are 1 to ${row.version}`);
    }
    return {
      graderId: row.id,
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
  delete(project: string, key: string): { id: string; ids: string[] } {
    return this.db.transaction(() => {
      const row = this.mustGet(project, key);
      if (row.locked) throw lockedError(key, "deleting");
      const users = (this.stmts.usedBy.all(row.id) as { key: string }[]).map((r) => r.key);
      if (users.length > 0) {
        throw new AppError("GRADER_IN_USE", `grader "${key}" is a part of ${users.map((u) => `"${u}"`).join(", ")}; delete those first`, {
          usedBy: users,
        });
      }
      this.stmts.delete.run(project, key);
      return { id: row.id, ids: Array.from({ length: row.version }, (_, i) => sandboxId(row.id, i + 1)) };
    })();
  }

  /** Records that a grader took its worker down; the third time in the window quarantines it. */
  recordFault(graderId: string, reason: string): boolean {
    return this.db.transaction(() => {
      const now = new Date();
      this.stmts.addFault.run(graderId, now.toISOString(), reason);
      const { n } = this.stmts.countFaults.get(graderId, since()) as { n: number };
      return n >= FAULTS_TO_QUARANTINE && this.stmts.quarantine.run(now.toISOString(), graderId).changes > 0;
    })();
  }

  /** Lifts a quarantine and forgets the faults that led to it. */
  release(project: string, key: string): GraderRow {
    const row = this.mustGet(project, key);
    this.db.transaction(() => {
      this.stmts.release.run(row.id);
      this.stmts.clearFaults.run(row.id);
    })();
    return this.mustGet(project, key);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
