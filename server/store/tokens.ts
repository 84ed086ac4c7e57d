// Grade tokens: credentials that can sit in a URL, for trainers that send no Authorization
// header. One grants grading with one grader of one project and nothing else (never a project's
// key in a URL). Created once and shown once, stored as SHA-256 like API keys; revoking publishes
// {kind: "keys"}, so every node's cached grants go at once.

import { createHash, randomBytes } from "node:crypto";
import type { Db } from "../db/db.ts";
import { GradeTokenOptions } from "../trainers/token-options.ts";
import type { ProjectQuotas } from "./quotas.ts";

/**
 * `gbr-` and 40 lower-case hex digits (160 bits): one DNS label (NeMo Gym's host-based address is
 * `<token>.gym.<host>`, and host names are case-insensitive), no comma (OpenRLHF splits its URL
 * list on commas), nothing a URL escapes.
 */
export const TOKEN_FORMAT = /^gbr-[0-9a-f]{40}$/;

export interface GradeTokenInfo {
  id: string;
  project: string;
  grader: string;
  prefix: string;
  label: string;
  options: GradeTokenOptions;
  createdAt: string;
  revokedAt: string | null;
}

/** What a live token allows: grading with this grader, these options. */
export interface TokenGrant {
  tokenId: string;
  project: string;
  grader: string;
  options: GradeTokenOptions;
}

export const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

interface Row extends Omit<GradeTokenInfo, "options"> {
  options: string;
}

const COLUMNS = `id, project, grader_key AS "grader", prefix, label, options, created_at AS "createdAt", revoked_at AS "revokedAt"`;
const SQL = {
  insert: "INSERT INTO grade_tokens (id, project, grader_key, prefix, hash, label, options, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  verify: `SELECT ${COLUMNS} FROM grade_tokens WHERE hash = ? AND revoked_at IS NULL`,
  list: `SELECT ${COLUMNS} FROM grade_tokens WHERE project = ? AND grader_key = ? ORDER BY created_at, id`,
  get: `SELECT ${COLUMNS} FROM grade_tokens WHERE id = ?`,
  revoke: "UPDATE grade_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
};

/** A stored row's options, read strictly: a row written by an older server gets today's defaults for what it lacks. */
function fromRow(row: Row): GradeTokenInfo {
  let options: unknown;
  try {
    options = JSON.parse(row.options);
  } catch {
    options = {};
  }
  const parsed = GradeTokenOptions.safeParse(options);
  return { ...row, options: parsed.success ? parsed.data : GradeTokenOptions.parse({}) };
}

export class GradeTokens {
  constructor(
    private readonly db: Db,
    private readonly quotas: ProjectQuotas,
  ) {}

  /** A new token for the grader; the token itself is returned only here. */
  async create(
    project: string,
    grader: string,
    label: string,
    options: GradeTokenOptions,
  ): Promise<{ token: string; info: GradeTokenInfo }> {
    const token = `gbr-${randomBytes(20).toString("hex")}`;
    const info: GradeTokenInfo = {
      id: `tok_${randomBytes(6).toString("hex")}`,
      project,
      grader,
      prefix: token.slice(0, 10),
      label,
      options,
      createdAt: new Date().toISOString(),
      revokedAt: null,
    };
    // nothing to publish: an unknown token is never cached, so a new one is found at its first use
    await this.db.tx(async (q) => {
      await this.quotas.lock(q, project);
      await this.quotas.checkOne(q, project, "gradeTokens");
      await q.run(SQL.insert, [info.id, project, grader, info.prefix, hashToken(token), label, JSON.stringify(options), info.createdAt]);
    });
    return { token, info };
  }

  /** The grant of a live token, or undefined; a string not shaped like a token costs no query. */
  async grantOf(token: string): Promise<TokenGrant | undefined> {
    if (!TOKEN_FORMAT.test(token)) return undefined;
    const row = await this.db.get<Row>(SQL.verify, [hashToken(token)]);
    if (!row) return undefined;
    const info = fromRow(row);
    return { tokenId: info.id, project: info.project, grader: info.grader, options: info.options };
  }

  async list(project: string, grader: string): Promise<GradeTokenInfo[]> {
    return (await this.db.all<Row>(SQL.list, [project, grader])).map(fromRow);
  }

  async get(id: string): Promise<GradeTokenInfo | undefined> {
    const row = await this.db.get<Row>(SQL.get, [id]);
    return row && fromRow(row);
  }

  /** Revokes a token; every node stops accepting it once this returns. Revoking a revoked token changes nothing. */
  async revoke(id: string): Promise<void> {
    await this.db.tx(async (q, publish) => {
      if ((await q.run(SQL.revoke, [new Date().toISOString(), id])) > 0) publish({ kind: "keys" });
    });
  }
}

/** Why a token is refused, in words a user can act on (what a trainer logs when it gives up). */
export function tokenRefusal(token: string): string {
  return TOKEN_FORMAT.test(token)
    ? "this grade token is not valid or has been revoked: an admin of the project makes a new one with POST /v1/projects/{project}/graders/{grader}/tokens"
    : "the URL holds no grade token (gbr- and 40 hex digits): an admin of the project makes one with POST /v1/projects/{project}/graders/{grader}/tokens";
}
