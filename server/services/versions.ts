// A function grader's next version: a new source (an update) or an old one stored again (a
// restore), checked as a create is, then stored with a report of the samples whose score changes.
// Nothing changes when a check fails, and a dry run reports without storing. A source and settings
// identical to the current version's store nothing either: CI pushing the same file on every run
// must not add a version each time.

import { createHash } from "node:crypto";
import type { Language } from "../../sandbox/validate/checks.ts";
import type { GraderRow } from "../store/graders.ts";
import { byteSize } from "../store/quotas.ts";
import { assertUpdatable } from "../store/rules.ts";
import type { Sample } from "../store/versions.ts";
import type { Store } from "../store.ts";
import type { SampleReport, Validation } from "./validation.ts";

export interface NextSource {
  source: string;
  /** absent: the current version's */
  language?: Language;
  /** absent: the current version's */
  description?: string;
  /** absent: the current version's samples carry over */
  samples?: Sample[];
  dryRun?: boolean;
}

/** The grader after the update (the current one, unchanged, for a dry run) and its samples report. */
export interface Updated {
  row: GraderRow;
  report: SampleReport;
  dryRun?: true;
  /** the source and settings were the current version's: nothing was checked or stored */
  unchanged?: true;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

export class Versions {
  private readonly store: Store;
  private readonly validation: Validation;

  constructor(store: Store, validation: Validation) {
    this.store = store;
    this.validation = validation;
  }

  /**
   * Checks a new source and stores it as the next version. With samples (given, or the current
   * version's), reports each sample's score under the current version and the candidate.
   */
  async update(project: string, key: string, next: NextSource): Promise<Updated> {
    const current = await this.store.mustGet(project, key);
    const sourceSha256 = sha256(next.source);
    // before the lock is checked: an identical push changes nothing, so a locked grader answers it too
    if (current.kind === "function" && (await this.sameAsCurrent(current, next, sourceSha256))) {
      return {
        row: current,
        report: { samples: 0, changed: [], scores: [] },
        unchanged: true,
        ...(next.dryRun ? { dryRun: true as const } : {}),
      };
    }
    assertUpdatable(current); // before the checks run; the store checks again in its transaction
    const samples = next.samples ?? (await this.store.samples(current));
    const description = next.description ?? current.description;
    if (!next.dryRun) {
      // refused before the checks run (they grade every sample twice): a lower bound, as the script is not compiled yet
      const bytes = byteSize(next.source, JSON.stringify(samples), description);
      await this.store.precheck(project, { version: { id: current.id, key }, bytes });
    }
    const language = next.language ?? current.language ?? "typescript";
    const { compiled, warnings, results } = await this.validation.validate(project, { source: next.source, language }, undefined, samples);
    const report = await this.validation.report(current, samples, results);
    if (next.dryRun) return { row: current, dryRun: true, report };
    const row = await this.store.update(
      project,
      key,
      {
        source: next.source,
        language,
        compiled,
        sourceSha256,
        warnings,
        description,
        samples: next.samples,
      },
      current.version,
    );
    return { row, report };
  }

  /**
   * Whether `next` would store the current version again: the same source (its sha256) and the same
   * settings a version records, a setting left out meaning the current one (language, description, samples).
   */
  private async sameAsCurrent(current: GraderRow, next: NextSource, sourceSha256: string): Promise<boolean> {
    if (sourceSha256 !== current.sourceSha256) return false;
    if (next.language !== undefined && next.language !== (current.language ?? "typescript")) return false;
    if (next.description !== undefined && next.description !== current.description) return false;
    if (next.samples === undefined) return true;
    return JSON.stringify(next.samples) === JSON.stringify(await this.store.samples(current));
  }

  /** Stores an old version's source, language and description as the next version, as an update would (the current samples must pass). */
  async restore(project: string, key: string, version: number): Promise<Updated> {
    const old = await this.store.mustGetVersion(project, key, version);
    return this.update(project, key, { source: old.source, language: old.language, description: old.description });
  }
}
