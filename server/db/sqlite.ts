// SQLite over one better-sqlite3 connection (the embedded default). Statements are prepared
// once. The connection is shared by every request, so a transaction holds it: statements from
// outside wait until it ends, or they would run inside it.

import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import type { Change, Db, Params, Queryable } from "./db.ts";
import { migrations } from "./migrate.ts";

export class SqliteDb implements Db {
  readonly dialect = "sqlite";
  readonly label: string;
  /** one process owns the file: every change is heard where it is made */
  readonly listening = true;
  queries = 0;
  readonly raw: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  private readonly listeners: Array<(change: Change) => void> = [];
  /** the open transaction's end, while one is open */
  private busy: Promise<void> | undefined;
  /** PRAGMA data_version changes when another connection commits (not this one): one call, no table read */
  private readonly dataVersion: Database.Statement;
  private lastDataVersion: number;

  constructor(path: string) {
    this.label = path;
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.raw = new Database(path);
    this.raw.pragma("journal_mode = WAL");
    this.raw.pragma("foreign_keys = ON");
    this.raw.pragma("busy_timeout = 5000");
    this.raw.pragma("synchronous = NORMAL");
    this.migrate();
    this.dataVersion = this.raw.prepare("PRAGMA data_version").pluck();
    this.lastDataVersion = this.dataVersion.get() as number;
  }

  changedElsewhere(): boolean {
    const version = this.dataVersion.get() as number;
    if (version === this.lastDataVersion) return false;
    this.lastDataVersion = version;
    return true;
  }

  private migrate(): void {
    this.raw.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT",
    );
    const applied = new Set(this.raw.prepare("SELECT version FROM schema_migrations").pluck().all() as number[]);
    for (const m of migrations("sqlite")) {
      if (applied.has(m.version)) continue;
      this.raw.transaction(() => {
        this.raw.exec(m.sql);
        this.raw
          .prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)")
          .run(m.version, m.name, new Date().toISOString());
      })();
    }
  }

  private statement(sql: string): Database.Statement {
    this.queries++;
    let s = this.statements.get(sql);
    if (!s) {
      s = this.raw.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  private readonly direct: Queryable = {
    all: async <T>(sql: string, params: Params = []) => this.statement(sql).all(...params) as T[],
    get: async <T>(sql: string, params: Params = []) => this.statement(sql).get(...params) as T | undefined,
    run: async (sql: string, params: Params = []) => this.statement(sql).run(...params).changes,
  };

  async all<T>(sql: string, params?: Params): Promise<T[]> {
    while (this.busy) await this.busy;
    return this.direct.all<T>(sql, params);
  }

  async get<T>(sql: string, params?: Params): Promise<T | undefined> {
    while (this.busy) await this.busy;
    return this.direct.get<T>(sql, params);
  }

  async run(sql: string, params?: Params): Promise<number> {
    while (this.busy) await this.busy;
    return this.direct.run(sql, params);
  }

  async tx<T>(fn: (q: Queryable, publish: (change: Change) => void) => Promise<T>): Promise<T> {
    while (this.busy) await this.busy;
    let end: () => void = () => {};
    this.busy = new Promise<void>((resolve) => (end = resolve));
    const changes: Change[] = [];
    try {
      this.raw.exec("BEGIN IMMEDIATE");
      let result: T;
      try {
        result = await fn(this.direct, (c) => changes.push(c));
        this.raw.exec("COMMIT");
      } catch (error) {
        if (this.raw.inTransaction) this.raw.exec("ROLLBACK");
        throw error;
      }
      for (const change of changes) for (const listener of this.listeners) listener(change);
      return result;
    } finally {
      this.busy = undefined;
      end();
    }
  }

  subscribe(listener: (change: Change) => void): void {
    this.listeners.push(listener);
  }

  async ping(): Promise<boolean> {
    return this.raw.open && this.raw.prepare("SELECT 1").pluck().get() === 1;
  }

  async close(): Promise<void> {
    if (this.raw.open) this.raw.close();
  }
}
