// API keys: created once and shown once, stored as SHA-256 hashes, each bound to one project.

import { createHash, randomBytes } from "node:crypto";
import type { Db } from "../db/db.ts";
import { AppError } from "../errors.ts";

export interface KeyInfo {
  id: string;
  project: string;
  prefix: string;
  label: string;
  createdAt: string;
  revokedAt: string | null;
}

export const hashKey = (key: string) => createHash("sha256").update(key).digest("hex");

const SQL = {
  addProject: "INSERT INTO projects (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
  insert: "INSERT INTO api_keys (id, project, prefix, hash, label, created_at) VALUES (?, ?, ?, ?, ?, ?)",
  verify: "SELECT project FROM api_keys WHERE hash = ? AND revoked_at IS NULL",
  list: `SELECT id, project, prefix, label, created_at AS "createdAt", revoked_at AS "revokedAt" FROM api_keys
         WHERE (CAST(? AS TEXT) IS NULL OR project = ?) ORDER BY project, created_at`,
  revoke: "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
  any: "SELECT 1 AS one FROM api_keys LIMIT 1",
  exists: "SELECT 1 AS one FROM api_keys WHERE id = ?",
};

export class Keys {
  constructor(private readonly db: Db) {}

  /** Creates the project if needed and a key for it; the key itself is returned only here. */
  async create(project: string, label = ""): Promise<{ key: string; info: KeyInfo }> {
    const key = `gbx_${randomBytes(24).toString("base64url")}`;
    const info: KeyInfo = {
      id: `key_${randomBytes(6).toString("hex")}`,
      project,
      prefix: key.slice(0, 10),
      label,
      createdAt: new Date().toISOString(),
      revokedAt: null,
    };
    await this.db.tx(async (q) => {
      await q.run(SQL.addProject, [project, info.createdAt]);
      await q.run(SQL.insert, [info.id, project, info.prefix, hashKey(key), label, info.createdAt]);
    });
    return { key, info };
  }

  /** The project of a live key (by its hash), or undefined. */
  async verifyHash(hash: string): Promise<string | undefined> {
    return (await this.db.get<{ project: string }>(SQL.verify, [hash]))?.project;
  }

  verify(key: string): Promise<string | undefined> {
    return this.verifyHash(hashKey(key));
  }

  list(project?: string): Promise<KeyInfo[]> {
    return this.db.all<KeyInfo>(SQL.list, [project ?? null, project ?? null]);
  }

  /** Revokes a key; every node stops accepting it once this returns (their caches hear of it). */
  async revoke(id: string): Promise<void> {
    const changes = await this.db.tx(async (q, publish) => {
      const n = await q.run(SQL.revoke, [new Date().toISOString(), id]);
      if (n > 0) publish({ kind: "keys" });
      return n;
    });
    if (changes === 0) {
      const known = (await this.db.get(SQL.exists, [id])) !== undefined;
      throw new AppError("INVALID_REQUEST", known ? `key ${id} is already revoked` : `no key ${id}; \`gradebox keys list\` shows the ids`);
    }
  }

  async isEmpty(): Promise<boolean> {
    return (await this.db.get(SQL.any)) === undefined;
  }
}
