// The grader repository over one better-sqlite3 connection. Migrations are numbered SQL files
// applied in order at start-up, each in its own transaction; statements are prepared once.

import { randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { AppError } from "./errors.ts";
import { Keys } from "./keys.ts";

const MIGRATIONS_DIR = new URL("../migrations/", import.meta.url);

export type CombineMode = "weighted" | "any" | "all";
export interface Part {
  graderKey: string;
  name: string;
  weight: number;
}
/** A part with what grading it needs. */
export interface ResolvedPart extends Part {
  id: string;
  compiled: string;
  quarantinedAt: string | null;
}

export interface GraderRow {
  id: string;
  project: string;
  key: string;
  kind: "function" | "combined";
  /** combined graders only */
  mode?: CombineMode;
  parts?: ResolvedPart[];
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

export type NewGrader = Pick<GraderRow, "project" | "key" | "description" | "source" | "compiled" | "sourceSha256" | "warnings">;

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
  quarantined_at: string | null;
  recent_faults: number;
}

function fromRaw(r: Raw): GraderRow {
  return {
    id: r.id,
    project: r.project,
    key: r.key,
    kind: r.kind as GraderRow["kind"],
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
  };
}

const SELECT_GRADER = `SELECT g.*, (SELECT count(*) FROM grader_faults f WHERE f.grader_id = g.id AND f.at > @since) AS recent_faults FROM graders g`;
const since = () => new Date(Date.now() - FAULT_WINDOW_MS).toISOString();

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
        `INSERT INTO graders (id, project, key, kind, description, source, compiled, source_sha256, locked, warnings, created_at, updated_at)
         VALUES (@id, @project, @key, 'function', @description, @source, @compiled, @sourceSha256, 0, @warnings, @now, @now)`,
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
      insertPart: this.db.prepare("INSERT INTO grader_parts (combined_id, position, part_id, name, weight) VALUES (?, ?, ?, ?, ?)"),
      parts: this.db.prepare(
        `SELECT g.id, g.key AS graderKey, g.compiled, g.quarantined_at AS quarantinedAt, p.name, p.weight FROM grader_parts p JOIN graders g ON g.id = p.part_id
         WHERE p.combined_id = ? ORDER BY p.position`,
      ),
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
        if (row.kind !== "function") {
          throw new AppError("INVALID_COMPONENT", `part "${part.graderKey}" is a ${row.kind} grader; parts must be function graders`);
        }
        this.stmts.insertPart.run(id, position, row.id, part.name, part.weight);
      });
    })();
    return this.get(g.project, g.key) as GraderRow;
  }

  insert(g: NewGrader): GraderRow {
    const id = randomUUID();
    try {
      this.stmts.insert.run({ ...g, id, warnings: JSON.stringify(g.warnings), now: new Date().toISOString() });
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
    if (row.kind === "combined") row.parts = this.stmts.parts.all(row.id) as ResolvedPart[];
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

  /** Deletes a grader; returns its id (its warm isolates are to be disposed). */
  delete(project: string, key: string): { id: string } {
    return this.db.transaction(() => {
      const row = this.mustGet(project, key);
      if (row.locked) {
        throw new AppError("GRADER_LOCKED", `grader "${key}" is locked; unlock it (PUT …/lock {"locked": false}) before deleting it`);
      }
      const users = (this.stmts.usedBy.all(row.id) as { key: string }[]).map((r) => r.key);
      if (users.length > 0) {
        throw new AppError("GRADER_IN_USE", `grader "${key}" is a part of ${users.map((u) => `"${u}"`).join(", ")}; delete those first`, {
          usedBy: users,
        });
      }
      this.stmts.delete.run(project, key);
      return { id: row.id };
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
