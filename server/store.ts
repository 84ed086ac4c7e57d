// The registry, over either database (db/): SQLite embedded, or PostgreSQL shared by many nodes.
// Each domain is its own module in store/ (graders, versions, models, faults, keys, tokens); this is
// the one object the server, the CLI and the tests open, and the names they call. Every write is
// one transaction that publishes what it changed, so each node's caches (registry-cache.ts) drop
// what is stale.

import { type Db, isPostgresUrl } from "./db/db.ts";
import { PostgresDb } from "./db/postgres.ts";
import { SqliteDb } from "./db/sqlite.ts";
import { RegistryCache } from "./registry-cache.ts";
import { FaultStore } from "./store/faults.ts";
import { GraderStore } from "./store/graders.ts";
import { Keys } from "./store/keys.ts";
import { ModelStore } from "./store/models.ts";
import { type Adding, ProjectQuotas, type Quotas } from "./store/quotas.ts";
import { GradeTokens } from "./store/tokens.ts";
import { VersionStore } from "./store/versions.ts";

// what the tests import from here
export { graderIdOf, type NewGrader } from "./store/graders.ts";

export interface StoreOptions {
  /** a SQLite path (or ":memory:"), or a postgres:// URL */
  db: string;
  /** PostgreSQL: connections per node in the statement pool */
  pgPool?: number;
  /** bytes of grader scripts the node's cache keeps (default CACHE_SCRIPT_BYTES) */
  cacheBytes?: number;
  /** what one project may store (default DEFAULT_QUOTAS) */
  quotas?: Quotas;
}

export class Store {
  readonly db: Db;
  readonly keys: Keys;
  /** grade-only tokens that sit in a trainer's URL (store/tokens.ts) */
  readonly tokens: GradeTokens;
  /** what grading reads: graders, versions and keys kept by this node until a change drops them */
  readonly cache: RegistryCache;
  /** what one project may store, and what it uses (store/quotas.ts) */
  readonly quotas: ProjectQuotas;
  private readonly graderStore: GraderStore;
  private readonly versionStore: VersionStore;
  private readonly modelStore: ModelStore;
  private readonly faultStore: FaultStore;

  private constructor(db: Db, cacheBytes?: number, quotas?: Quotas) {
    this.db = db;
    this.quotas = new ProjectQuotas(quotas);
    this.keys = new Keys(db);
    this.tokens = new GradeTokens(db, this.quotas);
    this.modelStore = new ModelStore(db, this.quotas);
    this.graderStore = new GraderStore(db, this.modelStore, this.quotas);
    this.versionStore = new VersionStore(db, this.graderStore, this.quotas);
    this.faultStore = new FaultStore(db, this.graderStore);
    // PostgreSQL: a revocation is heard at once; the 10 s bound only backs that up. SQLite: `gradebox keys
    // revoke` changes the file from another process, unheard here: each lookup first asks whether the
    // file changed elsewhere (PRAGMA data_version), so no time bound is needed
    this.cache = new RegistryCache(this, db.dialect === "postgres" ? 10_000 : Number.POSITIVE_INFINITY, cacheBytes);
  }

  /** Opens the database named by `db` and brings its schema up to date. */
  static async open({ db, pgPool = 10, cacheBytes, quotas }: StoreOptions): Promise<Store> {
    return new Store(isPostgresUrl(db) ? await PostgresDb.open({ url: db, poolSize: pgPool }) : new SqliteDb(db), cacheBytes, quotas);
  }

  /**
   * A first answer before costly checks (a source's five, an endpoint's probe): QUOTA_EXCEEDED when
   * `adding` (its bytes a lower bound) would not fit. The write's own transaction checks again.
   */
  precheck(project: string, adding: Adding): Promise<void> {
    return this.quotas.check(this.db, project, adding);
  }

  /** What the project uses of its quotas, counted from its rows. */
  usage(project: string) {
    return this.quotas.usage(this.db, project);
  }

  // graders (store/graders.ts)
  insert(...a: Parameters<GraderStore["insert"]>) {
    return this.graderStore.insert(...a);
  }
  insertCombined(...a: Parameters<GraderStore["insertCombined"]>) {
    return this.graderStore.insertCombined(...a);
  }
  insertJudge(...a: Parameters<GraderStore["insertJudge"]>) {
    return this.graderStore.insertJudge(...a);
  }
  insertEndpoint(...a: Parameters<GraderStore["insertEndpoint"]>) {
    return this.graderStore.insertEndpoint(...a);
  }
  insertCode(...a: Parameters<GraderStore["insertCode"]>) {
    return this.graderStore.insertCode(...a);
  }
  get(...a: Parameters<GraderStore["get"]>) {
    return this.graderStore.get(...a);
  }
  mustGet(...a: Parameters<GraderStore["mustGet"]>) {
    return this.graderStore.mustGet(...a);
  }
  list(...a: Parameters<GraderStore["list"]>) {
    return this.graderStore.list(...a);
  }
  setLocked(...a: Parameters<GraderStore["setLocked"]>) {
    return this.graderStore.setLocked(...a);
  }
  delete(...a: Parameters<GraderStore["delete"]>) {
    return this.graderStore.delete(...a);
  }

  // a function grader's versions (store/versions.ts)
  update(...a: Parameters<VersionStore["update"]>) {
    return this.versionStore.update(...a);
  }
  samples(...a: Parameters<VersionStore["samples"]>) {
    return this.versionStore.samples(...a);
  }
  versions(...a: Parameters<VersionStore["list"]>) {
    return this.versionStore.list(...a);
  }
  mustGetVersion(...a: Parameters<VersionStore["mustGet"]>) {
    return this.versionStore.mustGet(...a);
  }
  versionOf(...a: Parameters<VersionStore["of"]>) {
    return this.versionStore.of(...a);
  }
  deleteVersion(...a: Parameters<VersionStore["delete"]>) {
    return this.versionStore.delete(...a);
  }

  // judge models (store/models.ts)
  insertModel(...a: Parameters<ModelStore["insert"]>) {
    return this.modelStore.insert(...a);
  }
  mustGetModel(...a: Parameters<ModelStore["mustGet"]>) {
    return this.modelStore.mustGet(...a);
  }
  modelById(...a: Parameters<ModelStore["byId"]>) {
    return this.modelStore.byId(...a);
  }
  listModels(...a: Parameters<ModelStore["list"]>) {
    return this.modelStore.list(...a);
  }
  deleteModel(...a: Parameters<ModelStore["delete"]>) {
    return this.modelStore.delete(...a);
  }

  // faults and quarantine (store/faults.ts)
  recordFault(...a: Parameters<FaultStore["record"]>) {
    return this.faultStore.record(...a);
  }
  release(...a: Parameters<FaultStore["release"]>) {
    return this.faultStore.release(...a);
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
