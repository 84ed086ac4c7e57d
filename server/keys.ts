// API keys: created once and shown once, stored as SHA-256 hashes, each bound to one project.

import { createHash, randomBytes } from "node:crypto";
import type Database from "better-sqlite3";
import { AppError } from "./errors.ts";

export interface KeyInfo {
  id: string;
  project: string;
  prefix: string;
  label: string;
  createdAt: string;
  revokedAt: string | null;
}

const hash = (key: string) => createHash("sha256").update(key).digest("hex");

export class Keys {
  private readonly stmts;

  constructor(private readonly db: Database.Database) {
    this.stmts = {
      addProject: db.prepare("INSERT INTO projects (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING"),
      insert: db.prepare(
        "INSERT INTO api_keys (id, project, prefix, hash, label, created_at) VALUES (@id, @project, @prefix, @hash, @label, @createdAt)",
      ),
      verify: db.prepare("SELECT project FROM api_keys WHERE hash = ? AND revoked_at IS NULL"),
      list: db.prepare(
        "SELECT id, project, prefix, label, created_at AS createdAt, revoked_at AS revokedAt FROM api_keys WHERE (? IS NULL OR project = ?) ORDER BY project, created_at",
      ),
      revoke: db.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"),
      count: db.prepare("SELECT count(*) AS n FROM api_keys"),
    };
  }

  /** Creates the project if needed and a key for it; the key itself is returned only here. */
  create(project: string, label = ""): { key: string; info: KeyInfo } {
    const key = `gbx_${randomBytes(24).toString("base64url")}`;
    const info: KeyInfo = {
      id: `key_${randomBytes(6).toString("hex")}`,
      project,
      prefix: key.slice(0, 10),
      label,
      createdAt: new Date().toISOString(),
      revokedAt: null,
    };
    this.db.transaction(() => {
      this.stmts.addProject.run(project, info.createdAt);
      this.stmts.insert.run({ ...info, hash: hash(key) });
    })();
    return { key, info };
  }

  /** The project of a live key, or undefined. */
  verify(key: string): string | undefined {
    return (this.stmts.verify.get(hash(key)) as { project: string } | undefined)?.project;
  }

  list(project?: string): KeyInfo[] {
    return this.stmts.list.all(project ?? null, project ?? null) as KeyInfo[];
  }

  revoke(id: string): void {
    const { changes } = this.stmts.revoke.run(new Date().toISOString(), id);
    if (changes === 0) {
      const known = this.list().some((k) => k.id === id);
      throw new AppError("INVALID_REQUEST", known ? `key ${id} is already revoked` : `no key ${id}; \`gradebox keys list\` shows the ids`);
    }
  }

  get empty(): boolean {
    return (this.stmts.count.get() as { n: number }).n === 0;
  }
}
