// A grader's faults and its quarantine: a run that took its worker down, a judge's template or
// an endpoint's schema check over its budget. Faults are rows shared by every node, so the third
// one in the window quarantines the grader everywhere.

import type { Db } from "../db/db.ts";
import type { GraderRow, GraderStore } from "./graders.ts";

/** Faults within this window count towards quarantine. */
export const FAULT_WINDOW_MS = 10 * 60 * 1000;
export const FAULTS_TO_QUARANTINE = 3;

/** Where the window of faults that count begins now (ISO 8601, as the rows store it). */
export const faultWindowStart = () => new Date(Date.now() - FAULT_WINDOW_MS).toISOString();

const SQL = {
  add: "INSERT INTO grader_faults (grader_id, at, reason) VALUES (?, ?, ?)",
  count: "SELECT CAST(count(*) AS INTEGER) AS n FROM grader_faults WHERE grader_id = ? AND at > ?",
  quarantine: "UPDATE graders SET quarantined_at = ? WHERE id = ? AND quarantined_at IS NULL",
  projectOf: "SELECT project FROM graders WHERE id = ?",
  release: "UPDATE graders SET quarantined_at = NULL WHERE id = ?",
  clear: "DELETE FROM grader_faults WHERE grader_id = ?",
};

export class FaultStore {
  private readonly db: Db;
  private readonly graders: GraderStore;

  constructor(db: Db, graders: GraderStore) {
    this.db = db;
    this.graders = graders;
  }

  /** Records a grader's fault (it took its worker down, or its judge template or endpoint schema check went over budget); the third time in the window quarantines it (on every node). */
  record(graderId: string, reason: string): Promise<boolean> {
    return this.db.tx(async (q, publish) => {
      const now = new Date();
      const owner = await q.get<{ project: string }>(SQL.projectOf, [graderId]);
      if (!owner) return false; // deleted meanwhile
      await q.run(SQL.add, [graderId, now.toISOString(), reason]);
      const n = (await q.get<{ n: number }>(SQL.count, [graderId, faultWindowStart()]))?.n ?? 0;
      const quarantined = n >= FAULTS_TO_QUARANTINE && (await q.run(SQL.quarantine, [now.toISOString(), graderId])) > 0;
      // what nodes cache for grading changes only with the quarantine (they do not read the count)
      if (quarantined) publish({ kind: "graders", project: owner.project });
      return quarantined;
    });
  }

  /** Lifts a quarantine and forgets the faults that led to it. */
  async release(project: string, key: string): Promise<GraderRow> {
    await this.db.tx(async (q, publish) => {
      const row = await this.graders.mustGet(project, key, q);
      await q.run(SQL.release, [row.id]);
      await q.run(SQL.clear, [row.id]);
      publish({ kind: "graders", project });
    });
    return this.graders.mustGet(project, key);
  }
}
