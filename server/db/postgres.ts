// PostgreSQL, the registry several nodes share (GRADEBOX_DB=postgres://…): a pool of
// connections for statements, and one connection that LISTENs on the `gradebox` channel.
// A transaction's changes are numbered (the registry_changes sequence) and sent with pg_notify
// inside it, so every node hears them exactly when they commit (and never when they roll back).
// Each node records in registry_nodes the last number it has heard (and acted on), and a write
// answers once every live node has heard it: a client told "deleted" is never then graded with
// the deleted grader by another node's cache.

import { randomUUID } from "node:crypto";
import pg from "pg";
import { z } from "zod";
import { type Change, type Db, numbered, type Params, type Queryable } from "./db.ts";
import { migrations } from "./migrate.ts";

const CHANNEL = "gradebox";
/** any number, the same on every node: migrations take this lock so that nodes starting together apply each once */
const MIGRATION_LOCK = 7_726_017;
const RECONNECT_MS = 500;
/** how long a write waits for every live node to hear it before it answers anyway */
const SETTLE_MS = 1000;
/** a node that has not said it is alive for this long is not waited for (it crashed, or cannot listen) */
const ALIVE_S = 5;
const HEARTBEAT_MS = 1000;
const POLL_MS = 10;

// what another node sent: read strictly, as anything that arrives over the wire
const Notice = z.strictObject({
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
  /** the highest change number this node has heard and acted on */
  private heard = 0;
  /** the last `heard` written to registry_nodes, and the write in flight */
  private recorded = 0;
  private recording: Promise<void> | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(private readonly options: PostgresOptions) {
    const url = new URL(options.url);
    url.password = url.password ? "***" : "";
    this.label = url.toString();
    // a statement that cannot get a connection in 10 s fails rather than waits for ever
    this.pool = new pg.Pool({ connectionString: options.url, max: options.poolSize, connectionTimeoutMillis: 10_000 });
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
      // deaf now (and its cache empty): other nodes' writes need not wait for it
      this.pool.query("DELETE FROM registry_nodes WHERE node = $1", [this.node]).catch(() => {});
      this.retry();
    };
    client.on("error", lost);
    client.on("end", lost);
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      // listening: every change numbered from here on will be heard; the cache is empty, so nothing before is stale
      const { rows } = await this.pool.query(
        `INSERT INTO registry_nodes (node, seen, alive_at) VALUES ($1, (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM registry_changes), now())
         ON CONFLICT (node) DO UPDATE SET seen = excluded.seen, alive_at = now() RETURNING seen`,
        [this.node],
      );
      this.recorded = Number(rows[0]?.seen ?? 0);
      this.heard = Math.max(this.heard, this.recorded);
    } catch (error) {
      client.end().catch(() => {});
      throw error;
    }
    this.listener = client;
    this.setListening(true);
    this.record(); // what was heard while the row was being written
    this.heartbeat ??= setInterval(() => {
      if (this.listening) this.pool.query("UPDATE registry_nodes SET alive_at = now() WHERE node = $1", [this.node]).catch(() => {});
    }, HEARTBEAT_MS).unref();
  }

  private retry(): void {
    if (this.closed) return;
    setTimeout(() => this.listen().catch(() => this.retry()), RECONNECT_MS).unref();
  }

  private setListening(listening: boolean): void {
    if (this.listening === listening) return;
    this.listening = listening;
    // changes may have been missed in between: the caches start again
    for (const listener of this.listeners) listener({ kind: "reset" });
  }

  private hear(payload: string | undefined): void {
    let notice: z.infer<typeof Notice>;
    try {
      notice = Notice.parse(JSON.parse(payload ?? ""));
    } catch {
      return; // not ours: nothing to evict
    }
    for (const listener of this.listeners) listener(notice.change);
    this.heard = Math.max(this.heard, notice.seq);
    this.record();
  }

  /** Writes `heard` to registry_nodes (one write at a time; the latest wins). */
  private record(): void {
    if (this.recording || this.heard <= this.recorded || !this.listening) return;
    const seen = this.heard;
    this.recording = this.pool
      .query("UPDATE registry_nodes SET seen = greatest(seen, $2), alive_at = now() WHERE node = $1", [this.node, seen])
      .then(
        () => {
          this.recorded = Math.max(this.recorded, seen);
        },
        () => {},
      )
      .finally(() => {
        this.recording = undefined;
        this.record();
      });
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
    let last = 0;
    const result = await this.withClient(async (client) => {
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
          const { rows } = await client.query("SELECT nextval('registry_changes') AS seq");
          last = Number(rows[0].seq);
          await client.query("SELECT pg_notify($1, $2)", [CHANNEL, JSON.stringify({ seq: last, change })]);
        }
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
      for (const change of changes) for (const listener of this.listeners) listener(change);
      return result;
    });
    // with the connection given back: waiting while holding it, with a pool as large as the writes
    // in flight, left every write waiting for a connection the others held
    if (last > 0) await this.heardEverywhere(last, SETTLE_MS);
    return result;
  }

  /** Resolves once every live node has heard change `seq` (or after `ms`, when one is too slow to say so). */
  private async heardEverywhere(seq: number, ms: number): Promise<void> {
    const until = performance.now() + ms;
    while (performance.now() < until) {
      const { rows } = await this.pool.query(
        `SELECT CAST(count(*) AS INTEGER) AS behind FROM registry_nodes WHERE seen < $1 AND alive_at > now() - make_interval(secs => $2)`,
        [seq, ALIVE_S],
      );
      if (rows[0]?.behind === 0) return;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  subscribe(listener: (change: Change) => void): void {
    this.listeners.push(listener);
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
    clearInterval(this.heartbeat);
    // no longer waited for by other nodes' writes
    await this.pool.query("DELETE FROM registry_nodes WHERE node = $1", [this.node]).catch(() => {});
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => {});
    await this.pool.end().catch(() => {});
  }
}
