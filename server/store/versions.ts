// A function grader's versions: every source it was given, with its script, warnings and
// samples, never changed once stored. The grader's row holds a copy of its current version,
// so grading reads one row; an update writes both in one transaction.

import type { z } from "zod";
import type { Language } from "../../sandbox/validate/checks.ts";
import type { WireThread } from "../../sdk/thread.ts";
import type { Db, Queryable } from "../db/db.ts";
import { AppError } from "../errors.ts";
import type { GraderVersionDetail } from "../schemas.ts";
import type { GraderRow, GraderStore, NewGrader } from "./graders.ts";
import { byteSize, type ProjectQuotas } from "./quotas.ts";
import { assertUpdatable, lockedError } from "./rules.ts";

/** A sample thread a grader carries, with the score it should get. */
export interface Sample {
  thread: WireThread;
  expected?: number;
}

/** One stored version of a function grader: the API's view of it, and the script the sandbox runs. */
export type StoredVersion = z.infer<typeof GraderVersionDetail> & { compiled: string };

type VersionFields = Pick<NewGrader, "description" | "source" | "language" | "compiled" | "sourceSha256" | "warnings">;

type RawVersion = {
  version: number;
  language: Language;
  description: string;
  source: string;
  compiled: string;
  source_sha256: string;
  warnings: string;
  created_at: string;
};

const SQL = {
  insert: `INSERT INTO grader_versions (grader_id, version, description, source, language, compiled, source_sha256, warnings, samples, created_at, bytes)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  setCurrent: `UPDATE graders SET version = ?, description = ?, source = ?, language = ?, compiled = ?, source_sha256 = ?, warnings = ?, updated_at = ? WHERE id = ?`,
  list: "SELECT version, language, description, source_sha256, warnings, created_at FROM grader_versions WHERE grader_id = ? ORDER BY version",
  get: "SELECT * FROM grader_versions WHERE grader_id = ? AND version = ?",
  samples: "SELECT samples FROM grader_versions WHERE grader_id = ? AND version = ?",
  pinnedBy:
    "SELECT c.key FROM grader_parts p JOIN graders c ON c.id = p.combined_id WHERE p.part_id = ? AND p.part_version = ? ORDER BY c.key",
  delete: "DELETE FROM grader_versions WHERE grader_id = ? AND version = ?",
};

/** The bytes a version's row stores, as its quota counts them (migration 0013 measures older rows the same). */
export const versionBytes = (v: VersionFields, samples: string) =>
  byteSize(v.source, v.compiled, samples, v.description, JSON.stringify(v.warnings));

/** Writes one version's row inside the caller's transaction (a new grader's first, or an update's next). */
export async function insertVersion(
  q: Queryable,
  graderId: string,
  version: number,
  v: VersionFields,
  samples: string,
  now: string,
): Promise<void> {
  await q.run(SQL.insert, [
    graderId,
    version,
    v.description,
    v.source,
    v.language ?? "typescript",
    v.compiled,
    v.sourceSha256,
    JSON.stringify(v.warnings),
    samples,
    now,
    versionBytes(v, samples),
  ]);
}

export async function versionExists(q: Queryable, graderId: string, version: number): Promise<boolean> {
  return (await q.get(SQL.get, [graderId, version])) !== undefined;
}

// deleted versions leave gaps: the range 1 to current is not the list
const notFound = (row: Pick<GraderRow, "key" | "version">, version: number) =>
  new AppError(
    "VERSION_NOT_FOUND",
    `grader "${row.key}" has no version ${version}; its current version is ${row.version} (GET …/graders/${row.key}/versions lists every stored one)`,
  );

export class VersionStore {
  private readonly db: Db;
  private readonly graders: GraderStore;
  private readonly quotas: ProjectQuotas;

  constructor(db: Db, graders: GraderStore, quotas: ProjectQuotas) {
    this.db = db;
    this.graders = graders;
    this.quotas = quotas;
  }

  /**
   * Stores a new version of a function grader and makes it current, in one transaction; a
   * locked grader refuses. `expected` guards against a concurrent update: the version the
   * caller validated against must still be current. A version past the project's quotas is refused.
   */
  async update(project: string, key: string, next: Omit<NewGrader, "project" | "key">, expected?: number): Promise<GraderRow> {
    await this.db.tx(async (q, publish) => {
      await this.quotas.lock(q, project);
      const row = await this.graders.mustGet(project, key, q);
      assertUpdatable(row);
      if (expected !== undefined && row.version !== expected) {
        throw new AppError("GRADER_CONFLICT", `grader "${key}" changed to version ${row.version} while this update was checked; try again`);
      }
      // samples carry over to the new version unless new ones are given
      const samples =
        next.samples === undefined
          ? ((await q.get<{ samples: string }>(SQL.samples, [row.id, row.version]))?.samples ?? "[]")
          : JSON.stringify(next.samples);
      await this.quotas.check(q, project, { version: { id: row.id, key }, bytes: versionBytes(next, samples) });
      const version = row.version + 1;
      const now = new Date().toISOString();
      await insertVersion(q, row.id, version, next, samples, now);
      await q.run(SQL.setCurrent, [
        version,
        next.description,
        next.source,
        next.language ?? "typescript",
        next.compiled,
        next.sourceSha256,
        JSON.stringify(next.warnings),
        now,
        row.id,
      ]);
      publish({ kind: "graders", project });
    });
    return this.graders.mustGet(project, key);
  }

  /**
   * Deletes one stored version, to free its grader's or its project's quota: never the current one
   * (it is what grades), nor one a combined grader pins, nor any of a locked grader. Version numbers
   * are not reused: the next update is still the current one plus one. Returns the grader's id.
   */
  delete(project: string, key: string, version: number): Promise<string> {
    return this.db.tx(async (q, publish) => {
      const row = await this.graders.mustGet(project, key, q);
      if (row.kind !== "function") {
        throw new AppError("INVALID_REQUEST", `grader "${key}" is a ${row.kind} grader; only function graders have versions`);
      }
      if (row.locked) throw lockedError(key, "deleting a version of");
      if (!(await versionExists(q, row.id, version))) throw notFound(row, version);
      if (version === row.version) {
        throw new AppError(
          "VERSION_IN_USE",
          `version ${version} is grader "${key}"'s current version; store another (PUT) or restore an older one first, or delete the grader`,
        );
      }
      const users = (await q.all<{ key: string }>(SQL.pinnedBy, [row.id, version])).map((r) => r.key);
      if (users.length > 0) {
        throw new AppError(
          "VERSION_IN_USE",
          `version ${version} of grader "${key}" is pinned by ${users.map((u) => `"${u}"`).join(", ")}; delete those first`,
          { usedBy: users },
        );
      }
      await q.run(SQL.delete, [row.id, version]);
      publish({ kind: "graders", project });
      return row.id;
    });
  }

  /** The samples of a grader's version (its current one by default). */
  async samples(row: GraderRow, version = row.version): Promise<Sample[]> {
    const text = (await this.db.get<{ samples: string }>(SQL.samples, [row.id, version]))?.samples;
    return text ? (JSON.parse(text) as Sample[]) : [];
  }

  async list(project: string, key: string): Promise<Array<Omit<StoredVersion, "source" | "compiled">>> {
    const row = await this.graders.mustGet(project, key);
    const raws = await this.db.all<Omit<RawVersion, "source" | "compiled">>(SQL.list, [row.id]);
    return raws.map((r) => ({
      version: r.version,
      language: r.language,
      description: r.description,
      sourceSha256: r.source_sha256,
      warnings: JSON.parse(r.warnings) as string[],
      createdAt: r.created_at,
    }));
  }

  async mustGet(project: string, key: string, version: number): Promise<StoredVersion & { graderId: string }> {
    const row = await this.graders.mustGet(project, key);
    return { graderId: row.id, ...(await this.of(row, version)) };
  }

  /** One stored version of a grader (versions never change once stored). */
  async of(row: Pick<GraderRow, "id" | "key" | "version">, version: number): Promise<StoredVersion> {
    const r = await this.db.get<RawVersion>(SQL.get, [row.id, version]);
    if (!r) throw notFound(row, version);
    return {
      version: r.version,
      language: r.language,
      description: r.description,
      source: r.source,
      compiled: r.compiled,
      sourceSha256: r.source_sha256,
      warnings: JSON.parse(r.warnings) as string[],
      createdAt: r.created_at,
    };
  }
}
