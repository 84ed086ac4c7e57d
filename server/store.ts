// The grader repository over one better-sqlite3 connection. Migrations are numbered SQL files
// applied in order at start-up, each in its own transaction; statements are prepared once.

import { randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { AppError } from "./errors.ts";

const MIGRATIONS_DIR = new URL("../migrations/", import.meta.url);

export interface GraderRow {
  id: string;
  project: string;
  key: string;
  kind: "function";
  description: string;
  source: string;
  compiled: string;
  sourceSha256: string;
  locked: boolean;
  warnings: string[];
  createdAt: string;
  updatedAt: string;
}

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
}

function fromRaw(r: Raw): GraderRow {
  return {
    id: r.id,
    project: r.project,
    key: r.key,
    kind: r.kind as "function",
    description: r.description,
    source: r.source,
    compiled: r.compiled,
    sourceSha256: r.source_sha256,
    locked: r.locked === 1,
    warnings: JSON.parse(r.warnings) as string[],
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

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
  private readonly stmts;

  constructor(path: string) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("foreign_keys = ON");
    this.db.pragma("busy_timeout = 5000");
    this.db.pragma("synchronous = NORMAL");
    migrate(this.db);
    this.stmts = {
      insert: this.db.prepare(
        `INSERT INTO graders (id, project, key, kind, description, source, compiled, source_sha256, locked, warnings, created_at, updated_at)
         VALUES (@id, @project, @key, 'function', @description, @source, @compiled, @sourceSha256, 0, @warnings, @now, @now)`,
      ),
      get: this.db.prepare("SELECT * FROM graders WHERE project = ? AND key = ?"),
      list: this.db.prepare("SELECT * FROM graders WHERE project = ? AND key > ? ORDER BY key LIMIT ?"),
      lock: this.db.prepare("UPDATE graders SET locked = ?, updated_at = ? WHERE project = ? AND key = ?"),
      delete: this.db.prepare("DELETE FROM graders WHERE project = ? AND key = ? AND locked = 0"),
    };
  }

  insert(g: NewGrader): GraderRow {
    const id = randomUUID();
    try {
      this.stmts.insert.run({ ...g, id, warnings: JSON.stringify(g.warnings), now: new Date().toISOString() });
    } catch (error) {
      if ((error as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") {
        throw new AppError(
          "GRADER_EXISTS",
          `grader "${g.key}" already exists in project "${g.project}"; delete it first or pick another key`,
        );
      }
      throw error;
    }
    return this.get(g.project, g.key) as GraderRow;
  }

  get(project: string, key: string): GraderRow | undefined {
    const raw = this.stmts.get.get(project, key) as Raw | undefined;
    return raw && fromRaw(raw);
  }

  mustGet(project: string, key: string): GraderRow {
    const row = this.get(project, key);
    if (!row) throw new AppError("GRADER_NOT_FOUND", `no grader "${key}" in project "${project}"`);
    return row;
  }

  /** Keys sort after `cursor` (exclusive); "" starts from the beginning. */
  list(project: string, cursor: string, limit: number): GraderRow[] {
    return (this.stmts.list.all(project, cursor, limit) as Raw[]).map(fromRaw);
  }

  setLocked(project: string, key: string, locked: boolean): GraderRow {
    const { changes } = this.stmts.lock.run(locked ? 1 : 0, new Date().toISOString(), project, key);
    if (changes === 0) this.mustGet(project, key);
    return this.mustGet(project, key);
  }

  delete(project: string, key: string): void {
    this.db.transaction(() => {
      const row = this.mustGet(project, key);
      if (row.locked) {
        throw new AppError("GRADER_LOCKED", `grader "${key}" is locked; unlock it (PUT …/lock {"locked": false}) before deleting it`);
      }
      this.stmts.delete.run(project, key);
    })();
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
