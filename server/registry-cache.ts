// What a node keeps of the registry so that grading a warm grader costs no database query: the
// graders read per (project, key), their stored versions, and live API keys and grade tokens. Every committed
// change is heard (db.subscribe: this node's at once, other nodes' through PostgreSQL's
// LISTEN) and drops what it touches: a project's graders, or every key. While changes could be
// missed (the listening connection is down) nothing is cached. Memory is bounded by the bytes of
// the scripts kept: past the budget the entries loaded longest ago go first.

import type { Db } from "./db/db.ts";
import type { GraderRow } from "./store/graders.ts";
import { hashKey, type KeyGrant } from "./store/keys.ts";
import { hashToken, type TokenGrant } from "./store/tokens.ts";
import type { StoredVersion } from "./store/versions.ts";
import type { Store } from "./store.ts";

/** Source and compiled script bytes (UTF-16) kept of graders and versions, unless told otherwise. */
export const CACHE_SCRIPT_BYTES = 64 * 1024 * 1024;
/** Keys kept: past it the oldest go first. */
const MAX_KEYS = 10_000;

interface Entry {
  project: string;
  value: Promise<unknown>;
  /** counted once the value has loaded */
  bytes: number;
}

const scriptBytes = (...texts: string[]) => texts.reduce((n, t) => n + t.length * 2, 0);

export class RegistryCache {
  /** graders (`g␀project␀key`) and versions (`v␀project␀id@n`), oldest first */
  private readonly entries = new Map<string, Entry>();
  /** each project's entry names, so that a change drops them without a scan */
  private readonly byProject = new Map<string, Set<string>>();
  private bytes = 0;
  private readonly keys = new Map<string, { grant: KeyGrant; until: number }>();
  /** grade tokens' grants by hash, dropped with the keys (a revocation publishes {kind: "keys"}) */
  private readonly tokens = new Map<string, { grant: TokenGrant; until: number }>();
  /** bumped when keys change: a lookup that began before a revocation must not store its answer */
  private keysGeneration = 0;
  private readonly db: Db;

  /**
   * `keyTtlMs`: how long a verified key is trusted without asking again. On SQLite it is kept until a
   * change: `gradebox keys revoke` writes the file from another process, which every lookup checks
   * for first (Db.changedElsewhere).
   */
  constructor(
    private readonly store: Store,
    private readonly keyTtlMs: number,
    private readonly maxScriptBytes = CACHE_SCRIPT_BYTES,
  ) {
    this.db = store.db;
    this.db.subscribe((change) => {
      if (change.kind === "graders") this.forgetProject(change.project);
      else if (change.kind === "keys") this.forgetKeys();
      else this.forgetAll();
    });
  }

  private forgetAll(): void {
    for (const project of [...this.byProject.keys()]) this.forgetProject(project);
    this.forgetKeys();
  }

  private forgetKeys(): void {
    this.keys.clear();
    this.tokens.clear();
    this.keysGeneration++;
  }

  private forget(name: string): void {
    const entry = this.entries.get(name);
    if (!entry) return;
    this.entries.delete(name);
    this.bytes -= entry.bytes;
    const names = this.byProject.get(entry.project);
    names?.delete(name);
    if (names?.size === 0) this.byProject.delete(entry.project);
  }

  private forgetProject(project: string): void {
    for (const name of this.byProject.get(project) ?? []) this.forget(name);
  }

  /** Memoizes `load` under `name` while changes are heard; a failure is not kept. */
  private remember<T>(project: string, name: string, load: () => Promise<T>, size: (value: T) => number): Promise<T> {
    if (!this.db.listening) return load();
    const known = this.entries.get(name);
    if (known) return known.value as Promise<T>;
    const loading = load();
    const entry: Entry = { project, value: loading, bytes: 0 };
    this.entries.set(name, entry);
    const names = this.byProject.get(project) ?? new Set<string>();
    this.byProject.set(project, names.add(name));
    loading.then(
      (value) => {
        if (this.entries.get(name) !== entry) return; // dropped meanwhile
        entry.bytes = size(value);
        this.bytes += entry.bytes;
        for (const oldest of this.entries.keys()) {
          if (this.bytes <= this.maxScriptBytes || oldest === name) break;
          this.forget(oldest);
        }
      },
      () => {
        if (this.entries.get(name) === entry) this.forget(name);
      },
    );
    return loading;
  }

  /** The grader, as `store.mustGet` reads it (GRADER_NOT_FOUND is not remembered). */
  grader(project: string, key: string): Promise<GraderRow> {
    return this.remember(
      project,
      `g\0${project}\0${key}`,
      () => this.store.mustGet(project, key),
      (row) => scriptBytes(row.source, row.compiled, ...(row.parts ?? []).map((p) => p.compiled)),
    );
  }

  /** One stored version of a grader (VERSION_NOT_FOUND is not remembered). */
  version(row: GraderRow, version: number): Promise<StoredVersion> {
    return this.remember(
      row.project,
      `v\0${row.project}\0${row.id}@${version}`,
      () => this.store.versionOf(row, version),
      (v) => scriptBytes(v.source, v.compiled),
    );
  }

  /** The project of a live API key, or undefined (an unknown key is not remembered). */
  async verifyKey(key: string): Promise<string | undefined> {
    return (await this.grantOf(key))?.project;
  }

  /** The project and role of a live API key, or undefined (an unknown key is not remembered). */
  async grantOf(key: string): Promise<KeyGrant | undefined> {
    // another process wrote the SQLite file (a key revoked or created from the CLI): ask again
    if (this.db.changedElsewhere?.()) this.forgetAll();
    const hash = hashKey(key);
    const now = Date.now();
    const known = this.keys.get(hash);
    if (known && known.until > now && this.db.listening) return known.grant;
    const generation = this.keysGeneration;
    const grant = await this.store.keys.grantOf(hash);
    if (grant && this.keyTtlMs > 0 && generation === this.keysGeneration) {
      if (this.keys.size >= MAX_KEYS) this.keys.delete(this.keys.keys().next().value as string);
      this.keys.set(hash, { grant, until: now + this.keyTtlMs });
    }
    return grant;
  }

  /**
   * The grant of a live grade token, or undefined (an unknown token is not remembered): a trainer
   * sends one request per sample, so a warm token costs no query, as a warm key costs none.
   */
  async tokenGrant(token: string): Promise<TokenGrant | undefined> {
    if (this.db.changedElsewhere?.()) this.forgetAll();
    const hash = hashToken(token);
    const now = Date.now();
    const known = this.tokens.get(hash);
    if (known && known.until > now && this.db.listening) return known.grant;
    const generation = this.keysGeneration;
    const grant = await this.store.tokens.grantOf(token);
    if (grant && this.keyTtlMs > 0 && generation === this.keysGeneration) {
      if (this.tokens.size >= MAX_KEYS) this.tokens.delete(this.tokens.keys().next().value as string);
      this.tokens.set(hash, { grant, until: now + this.keyTtlMs });
    }
    return grant;
  }

  /** Bytes of scripts kept now (for tests and metrics). */
  get scriptBytes(): number {
    return this.bytes;
  }
}
