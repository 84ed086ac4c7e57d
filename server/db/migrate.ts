// Forward-only migrations: numbered SQL files, the same numbers for both dialects
// (migrations/ for SQLite, migrations/postgres/ for PostgreSQL), each applied in its own
// transaction with its row in schema_migrations.

import { readdirSync, readFileSync } from "node:fs";

const DIRS = { sqlite: new URL("../../migrations/", import.meta.url), postgres: new URL("../../migrations/postgres/", import.meta.url) };

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function migrations(dialect: "sqlite" | "postgres"): Migration[] {
  const dir = DIRS[dialect];
  return readdirSync(dir)
    .filter((f) => /^\d{4}_.+\.sql$/.test(f))
    .sort()
    .map((name) => ({ version: Number(name.slice(0, 4)), name, sql: readFileSync(new URL(name, dir), "utf8") }));
}
