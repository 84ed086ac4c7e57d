// What a node keeps of the registry so that grading a warm grader costs no database query: the
// graders read per (project, key), their stored versions, and live API keys. Every committed
// change is heard (db.subscribe: this node's at once, other nodes' through PostgreSQL's
// LISTEN) and drops what it touches: a project's graders, or every key. While changes could be
// missed (the listening connection is down) nothing is cached.

import type { Db } from "./db/db.ts";
import { hashKey } from "./keys.ts";
import type { GraderRow, GraderVersion, Store } from "./store.ts";

/** Stored versions kept per project (they never change, so only memory bounds them). */
const MAX_VERSIONS_PER_PROJECT = 256;
/** Keys kept: past it the oldest go first. */
const MAX_KEYS = 10_000;

interface ProjectEntries {
  graders: Map<string, Promise<GraderRow>>;
  versions: Map<string, Promise<GraderVersion>>;
}

export class RegistryCache {
  private readonly projects = new Map<string, ProjectEntries>();
  private readonly keys = new Map<string, { project: string; until: number }>();
  /** bumped when keys change: a lookup that began before a revocation must not store its answer */
  private keysGeneration = 0;
  private readonly db: Db;

  /**
   * `keyTtlMs`: how long a verified key is trusted without asking again; 0 asks every time (SQLite:
   * `gradebox keys revoke` writes the file from another process, which this one cannot hear).
   */
  constructor(
    private readonly store: Store,
    private readonly keyTtlMs: number,
  ) {
    this.db = store.db;
    this.db.subscribe((change) => {
      if (change.kind === "graders") this.projects.delete(change.project);
      else if (change.kind === "keys") this.forgetKeys();
      else {
        this.projects.clear();
        this.forgetKeys();
      }
    });
  }

  private forgetKeys(): void {
    this.keys.clear();
    this.keysGeneration++;
  }

  private entries(project: string): ProjectEntries {
    let e = this.projects.get(project);
    if (!e) {
      e = { graders: new Map(), versions: new Map() };
      this.projects.set(project, e);
    }
    return e;
  }

  /** Memoizes `load` under `key` while changes are heard; a failure is not kept. */
  private remember<T>(map: Map<string, Promise<T>>, key: string, load: () => Promise<T>, max = Number.POSITIVE_INFINITY): Promise<T> {
    if (!this.db.listening) return load();
    const known = map.get(key);
    if (known) return known;
    const loading = load();
    if (map.size >= max) map.delete(map.keys().next().value as string);
    map.set(key, loading);
    loading.catch(() => {
      if (map.get(key) === loading) map.delete(key);
    });
    return loading;
  }

  /** The grader, as `store.mustGet` reads it (GRADER_NOT_FOUND is not remembered). */
  grader(project: string, key: string): Promise<GraderRow> {
    return this.remember(this.entries(project).graders, key, () => this.store.mustGet(project, key));
  }

  /** One stored version of a grader (VERSION_NOT_FOUND is not remembered). */
  version(row: GraderRow, version: number): Promise<GraderVersion> {
    return this.remember(
      this.entries(row.project).versions,
      `${row.id}@${version}`,
      () => this.store.versionOf(row, version),
      MAX_VERSIONS_PER_PROJECT,
    );
  }

  /** The project of a live API key, or undefined (an unknown key is not remembered). */
  async verifyKey(key: string): Promise<string | undefined> {
    const hash = hashKey(key);
    const now = Date.now();
    const known = this.keys.get(hash);
    if (known && known.until > now && this.db.listening) return known.project;
    const generation = this.keysGeneration;
    const project = await this.store.keys.verifyHash(hash);
    if (project && this.keyTtlMs > 0 && generation === this.keysGeneration) {
      if (this.keys.size >= MAX_KEYS) this.keys.delete(this.keys.keys().next().value as string);
      this.keys.set(hash, { project, until: now + this.keyTtlMs });
    }
    return project;
  }
}
