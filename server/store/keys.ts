// API keys: created once and shown once, stored as SHA-256 hashes, each bound to one project with
// a role: `admin` may also manage the project's keys, `grader` everything else. A project's first
// key is its admin.

import { createHash, randomBytes } from "node:crypto";
import type { Db } from "../db/db.ts";
import { AppError } from "../errors.ts";

export const KEY_ROLES = ["admin", "grader"] as const;
export type KeyRole = (typeof KEY_ROLES)[number];

export interface KeyInfo {
  id: string;
  project: string;
  prefix: string;
  label: string;
  role: KeyRole;
  createdAt: string;
  revokedAt: string | null;
}

/** What a live key is allowed: its project, and its role there. */
export interface KeyGrant {
  project: string;
  role: KeyRole;
}

export const hashKey = (key: string) => createHash("sha256").update(key).digest("hex");

const COLUMNS = `id, project, prefix, label, role, created_at AS "createdAt", revoked_at AS "revokedAt"`;
const SQL = {
  addProject: "INSERT INTO projects (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
  insert: "INSERT INTO api_keys (id, project, prefix, hash, label, role, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
  anyInProject: "SELECT 1 AS one FROM api_keys WHERE project = ? LIMIT 1",
  verify: "SELECT project, role FROM api_keys WHERE hash = ? AND revoked_at IS NULL",
  list: `SELECT ${COLUMNS} FROM api_keys WHERE (CAST(? AS TEXT) IS NULL OR project = ?) ORDER BY project, created_at`,
  get: `SELECT ${COLUMNS} FROM api_keys WHERE id = ?`,
  revoke: "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
  liveAdmins: "SELECT COUNT(*) AS n FROM api_keys WHERE project = ? AND role = 'admin' AND revoked_at IS NULL",
  any: "SELECT 1 AS one FROM api_keys LIMIT 1",
};

export class Keys {
  constructor(private readonly db: Db) {}

  /**
   * Creates the project if needed and a key for it; the key itself is returned only here. The
   * project's first key is its admin whatever `role` says (someone must be able to manage the
   * rest); later keys are `grader` unless `role` says otherwise.
   */
  async create(project: string, label = "", role?: KeyRole): Promise<{ key: string; info: KeyInfo }> {
    const key = `gbx_${randomBytes(24).toString("base64url")}`;
    const info: KeyInfo = {
      id: `key_${randomBytes(6).toString("hex")}`,
      project,
      prefix: key.slice(0, 10),
      label,
      role: role ?? "grader",
      createdAt: new Date().toISOString(),
      revokedAt: null,
    };
    // nothing to publish: an unknown key is never cached, so a new one is found at its first use
    await this.db.tx(async (q) => {
      await q.run(SQL.addProject, [project, info.createdAt]);
      if ((await q.get(SQL.anyInProject, [project])) === undefined) info.role = "admin";
      await q.run(SQL.insert, [info.id, project, info.prefix, hashKey(key), label, info.role, info.createdAt]);
    });
    return { key, info };
  }

  /** The project and role of a live key (by its hash), or undefined. */
  async grantOf(hash: string): Promise<KeyGrant | undefined> {
    const row = await this.db.get<KeyGrant>(SQL.verify, [hash]);
    return row && { project: row.project, role: row.role === "admin" ? "admin" : "grader" };
  }

  /** The project of a live key (by its hash), or undefined. */
  async verifyHash(hash: string): Promise<string | undefined> {
    return (await this.grantOf(hash))?.project;
  }

  verify(key: string): Promise<string | undefined> {
    return this.verifyHash(hashKey(key));
  }

  list(project?: string): Promise<KeyInfo[]> {
    return this.db.all<KeyInfo>(SQL.list, [project ?? null, project ?? null]);
  }

  /** A key by id (revoked or not), or undefined. */
  get(id: string): Promise<KeyInfo | undefined> {
    return this.db.get<KeyInfo>(SQL.get, [id]);
  }

  /** The project's live admin keys. */
  async liveAdmins(project: string): Promise<number> {
    return Number((await this.db.get<{ n: number | string }>(SQL.liveAdmins, [project]))?.n ?? 0);
  }

  /** Revokes a key; every node stops accepting it once this returns (their caches hear of it). */
  async revoke(id: string): Promise<void> {
    const changes = await this.db.tx(async (q, publish) => {
      const n = await q.run(SQL.revoke, [new Date().toISOString(), id]);
      if (n > 0) publish({ kind: "keys" });
      return n;
    });
    if (changes === 0) {
      const known = (await this.get(id)) !== undefined;
      throw new AppError("INVALID_REQUEST", known ? `key ${id} is already revoked` : `no key ${id}; \`gradebox keys list\` shows the ids`);
    }
  }

  async isEmpty(): Promise<boolean> {
    return (await this.db.get(SQL.any)) === undefined;
  }
}
