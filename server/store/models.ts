// The judge models of a project: where its judges send their prompts. A change publishes the
// project's graders as changed, as its judge graders are cached with what they call.

import { randomUUID } from "node:crypto";
import { type Db, isUniqueViolation, type Queryable } from "../db/db.ts";
import { AppError } from "../errors.ts";
import type { ModelRow } from "../judges/spec.ts";
import type { ProjectQuotas } from "./quotas.ts";

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

function fromRaw(r: RawModel): ModelRow {
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

const SQL = {
  insert: `INSERT INTO models (id, project, key, base_url, model, api_key_env, api_key_secret, max_concurrency, timeout_ms, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  get: "SELECT * FROM models WHERE project = ? AND key = ?",
  getById: "SELECT * FROM models WHERE id = ?",
  list: "SELECT * FROM models WHERE project = ? ORDER BY key",
  delete: "DELETE FROM models WHERE id = ?",
  users: "SELECT key FROM graders WHERE model_id = ? ORDER BY key",
};

export class ModelStore {
  private readonly db: Db;
  private readonly quotas: ProjectQuotas;

  constructor(db: Db, quotas: ProjectQuotas) {
    this.db = db;
    this.quotas = quotas;
  }

  async insert(m: Omit<ModelRow, "id" | "createdAt">): Promise<ModelRow> {
    try {
      await this.db.tx(async (q, publish) => {
        await this.quotas.lock(q, m.project);
        // a taken key is MODEL_EXISTS (the insert's unique violation), not a quota
        if (!(await q.get(SQL.get, [m.project, m.key]))) await this.quotas.checkOne(q, m.project, "models");
        await q.run(SQL.insert, [
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
        publish({ kind: "graders", project: m.project });
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
    return this.mustGet(m.project, m.key);
  }

  async mustGet(project: string, key: string, q: Queryable = this.db): Promise<ModelRow> {
    const raw = await q.get<RawModel>(SQL.get, [project, key]);
    if (!raw)
      throw new AppError(
        "MODEL_NOT_FOUND",
        `no model "${key}" in project "${project}"; register it first (POST /v1/projects/${project}/models)`,
      );
    return fromRaw(raw);
  }

  async byId(id: string): Promise<ModelRow> {
    const raw = await this.db.get<RawModel>(SQL.getById, [id]);
    if (!raw) throw new AppError("MODEL_NOT_FOUND", "the grader's model no longer exists");
    return fromRaw(raw);
  }

  async list(project: string): Promise<ModelRow[]> {
    return (await this.db.all<RawModel>(SQL.list, [project])).map(fromRaw);
  }

  /** Deletes a model no grader refers to; returns its id. */
  delete(project: string, key: string): Promise<string> {
    return this.db.tx(async (q, publish) => {
      const model = await this.mustGet(project, key, q);
      const users = (await q.all<{ key: string }>(SQL.users, [model.id])).map((r) => r.key);
      if (users.length > 0) {
        throw new AppError(
          "MODEL_IN_USE",
          `model "${key}" is used by ${users.map((u) => `grader "${u}"`).join(", ")}; delete those first`,
          {
            usedBy: users,
          },
        );
      }
      await q.run(SQL.delete, [model.id]);
      publish({ kind: "graders", project });
      return model.id;
    });
  }
}
