// PostgreSQL, the registry several nodes share (GRADEBOX_DB=postgres://…): a pool of
// connections for statements, and one connection that LISTENs on the `gradebox` channel.
// A transaction's changes are sent with pg_notify inside it, so every node hears them exactly
// when they commit (and never when they roll back).

import { randomUUID } from "node:crypto";
import pg from "pg";
import { z } from "zod";
import { type Change, type Db, numbered, type Params, type Queryable } from "./db.ts";
import { migrations } from "./migrate.ts";

const CHANNEL = "gradebox";
/** any number, the same on every node: migrations take this lock so that nodes starting together apply each once */
const MIGRATION_LOCK = 7_726_017;
const RECONNECT_MS = 500;
/** how long a write waits to hear its own notice before it answers anyway */
const SETTLE_MS = 1000;

// what another node sent: read strictly, as anything that arrives over the wire
const Notice = z.strictObject({
  node: z.string().max(64),
  seq: z.number().int().nonnegative(),
  change: z.union([
    z.strictObject({ kind: z.literal("graders"), project: z.string().max(128) }),
    z.strictObject({ kind: z.literal("keys") }),
  ]),
});

export interface PostgresOptions {
  url: string;
  /** connections in the statement pool (GRADEBOX_PG_POOL) */
  poolSize: number;
  /** told when listening stops or resumes (changes may have been missed in between) */
  onListening?: (listening: boolean) => void;
}

export class PostgresDb implements Db {
  readonly dialect = "postgres";
  readonly label: string;
  queries = 0;
  listening = false;
  private readonly pool: pg.Pool;
  private listener: pg.Client | undefined;
  private readonly listeners: Array<(change: Change) => void> = [];
  private readonly node = randomUUID();
  private seq = 0;
  private heard = 0;
  private waiters: Array<{ seq: number; done: () => void }> = [];
  private closed = false;

  private constructor(private readonly options: PostgresOptions) {
    const url = new URL(options.url);
    url.password = url.password ? "***" : "";
    this.label = url.toString();
    this.pool = new pg.Pool({ connectionString: options.url, max: options.poolSize });
    // an idle client's error (the server restarted) must not take the process down; the next query reconnects
    this.pool.on("error", () => {});
  }

  static async open(options: PostgresOptions): Promise<PostgresDb> {
    const db = new PostgresDb(options);
    try {
      await db.migrate();
      await db.listen();
    } catch (error) {
      await db.close();
      throw error;
    }
    return db;
  }

  private async migrate(): Promise<void> {
    for (const m of migrations("postgres")) {
      await this.withClient(async (c) => {
        await c.query("BEGIN");
        try {
          await c.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
          await c.query(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
          );
          const done = await c.query("SELECT 1 FROM schema_migrations WHERE version = $1", [m.version]);
          if (done.rowCount === 0) {
            await c.query(m.sql);
            await c.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
              m.version,
              m.name,
              new Date().toISOString(),
            ]);
          }
          await c.query("COMMIT");
        } catch (error) {
          await c.query("ROLLBACK").catch(() => {});
          throw error;
        }
      });
    }
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.options.url });
    client.on("notification", (msg) => this.hear(msg.payload));
    const lost = () => {
      if (this.listener !== client) return;
      this.listener = undefined;
      this.setListening(false);
      client.end().catch(() => {});
      if (!this.closed) setTimeout(() => this.listen().catch(lost), RECONNECT_MS).unref();
    };
    client.on("error", lost);
    client.on("end", lost);
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    this.listener = client;
    this.setListening(true);
  }

  private setListening(listening: boolean): void {
    if (this.listening === listening) return;
    this.listening = listening;
    this.options.onListening?.(listening);
    for (const listener of this.listeners) listener({ kind: "reset" });
  }

  private hear(payload: string | undefined): void {
    let notice: z.infer<typeof Notice>;
    try {
      notice = Notice.parse(JSON.parse(payload ?? ""));
    } catch {
      return; // not ours: nothing to evict
    }
    if (notice.node === this.node) {
      this.heard = Math.max(this.heard, notice.seq);
      // after the other sockets read in this same turn (another node's listener in this process, in tests) have been handled
      const done = this.waiters.filter((w) => w.seq <= this.heard);
      this.waiters = this.waiters.filter((w) => w.seq > this.heard);
      if (done.length > 0)
        setImmediate(() => {
          for (const w of done) w.done();
        });
      return; // this node heard it when it committed
    }
    for (const listener of this.listeners) listener(notice.change);
  }

  private async withClient<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      return await fn(client);
    } finally {
      client.release();
    }
  }

  private queryable(run: (sql: string, params: Params) => Promise<pg.QueryResult>): Queryable {
    return {
      all: async <T>(sql: string, params: Params = []) => (await run(sql, params)).rows as T[],
      get: async <T>(sql: string, params: Params = []) => (await run(sql, params)).rows[0] as T | undefined,
      run: async (sql: string, params: Params = []) => (await run(sql, params)).rowCount ?? 0,
    };
  }

  private readonly direct = this.queryable((sql, params) => {
    this.queries++;
    return this.pool.query(numbered(sql), params as unknown[]);
  });

  all<T>(sql: string, params?: Params): Promise<T[]> {
    return this.direct.all<T>(sql, params);
  }

  get<T>(sql: string, params?: Params): Promise<T | undefined> {
    return this.direct.get<T>(sql, params);
  }

  run(sql: string, params?: Params): Promise<number> {
    return this.direct.run(sql, params);
  }

  async tx<T>(fn: (q: Queryable, publish: (change: Change) => void) => Promise<T>): Promise<T> {
    return this.withClient(async (client) => {
      const q = this.queryable((sql, params) => {
        this.queries++;
        return client.query(numbered(sql), params as unknown[]);
      });
      const changes: Change[] = [];
      await client.query("BEGIN");
      let result: T;
      try {
        result = await fn(q, (c) => changes.push(c));
        for (const change of changes) {
          this.seq++;
          await client.query("SELECT pg_notify($1, $2)", [CHANNEL, JSON.stringify({ node: this.node, seq: this.seq, change })]);
        }
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
      for (const change of changes) for (const listener of this.listeners) listener(change);
      // acknowledged only once the notice is out: a client told "deleted" must not then be graded by another node's cache
      if (changes.length > 0) await this.settled(SETTLE_MS);
      return result;
    });
  }

  subscribe(listener: (change: Change) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Resolves when this node's listening connection has heard its own latest notice: PostgreSQL
   * sends a notice to every listening connection at once, so the other nodes have it too.
   */
  settled(ms: number): Promise<void> {
    const seq = this.seq;
    if (seq <= this.heard || !this.listening) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.waiters.push({
        seq,
        done: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.pool.query("SELECT 1 AS ok")).rows[0]?.ok === 1 && this.listening;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => {});
    await this.pool.end().catch(() => {});
  }
}
