// Test helpers: the real app with a real sandbox pool and a real SQLite file in a temp dir, or,
// when GRADEBOX_TEST_PG names a PostgreSQL cluster (`make test-postgres`), a new database on it.

import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { SandboxPool } from "../../sandbox/host/pool.ts";
import { buildApp } from "../../server/app.ts";
import { bootstrapMetricsToken } from "../../server/bootstrap.ts";
import { type Config, loadConfig, poolOptions } from "../../server/config.ts";
import { Store } from "../../server/store.ts";
import { createDatabase } from "./pg.ts";
import { freePort } from "./ports.ts";

export interface TestServer {
  app: FastifyInstance;
  store: Store;
  pool: SandboxPool;
  config: Config;
  dir: string;
  /** the bearer token GET /metrics needs (saved in dir/metrics.token, or GRADEBOX_METRICS_TOKEN) */
  metricsToken: string;
  /** set once listen() was called */
  url: string;
  /** an API key of the project (created on first use) */
  keyFor(project: string): Promise<string>;
  close(): Promise<void>;
}

const servers = new WeakMap<FastifyInstance, TestServer>();

/** Set when the suite runs against PostgreSQL: each server then gets a database of its own on this cluster. */
export const testPostgres = process.env.GRADEBOX_TEST_PG || undefined;

export async function startServer(opts: { env?: Record<string, string>; listen?: boolean } = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "gradebox-test-"));
  const config = loadConfig({
    GRADEBOX_DB: testPostgres ? await createDatabase(testPostgres) : join(dir, "gradebox.db"),
    // with PostgreSQL the token file would go to ./data: one set here keeps the checkout clean
    // and PostgreSQL's nodes share a secrets key only the operator can give
    ...(testPostgres
      ? { GRADEBOX_METRICS_TOKEN: `test-metrics-${randomBytes(12).toString("hex")}`, GRADEBOX_SECRETS_KEY: randomBytes(32).toString("hex") }
      : {}),
    GRADEBOX_LOG_LEVEL: "silent",
    GRADEBOX_WORKERS: "2",
    GRADEBOX_PORT: "0",
    ...opts.env,
  });
  const store = await Store.open({ db: config.dbPath, pgPool: config.pgPool, quotas: config.quotas });
  const pool = new SandboxPool(poolOptions(config));
  await pool.start();
  const metricsToken = bootstrapMetricsToken(config);
  const app = await buildApp({ config, store, pool, metricsToken });
  let url = "";
  if (opts.listen) {
    await app.listen({ host: "127.0.0.1", port: 0 });
    const address = app.server.address();
    if (address && typeof address === "object") url = `http://127.0.0.1:${address.port}`;
  }
  const keys = new Map<string, string>();
  const server: TestServer = {
    app,
    store,
    pool,
    config,
    dir,
    metricsToken: metricsToken.token,
    get url() {
      return url;
    },
    async keyFor(project) {
      let key = keys.get(project);
      if (!key) {
        key = (await store.keys.create(project)).key;
        keys.set(project, key);
      }
      return key;
    },
    async close() {
      await app.close();
      await pool.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  servers.set(app, server);
  return server;
}

export const thread = (completion: string, metadata: Record<string, unknown> = {}) => ({
  turns: [
    { role: "user" as const, content: "question" },
    { role: "assistant" as const, content: completion },
  ],
  metadata,
});

/**
 * POST/PUT/GET/DELETE through app.inject, returning status and parsed JSON. Requests to
 * /v1/projects/<p>/… carry a key of project p unless `headers` says otherwise.
 */
export async function call(
  app: FastifyInstance,
  method: "GET" | "POST" | "PUT" | "DELETE",
  url: string,
  body?: unknown,
  headers?: Record<string, string>,
) {
  const project = /^\/v1\/projects\/([^/?]+)/.exec(url)?.[1];
  const server = servers.get(app);
  const auth = project && server ? { authorization: `Bearer ${await server.keyFor(decodeURIComponent(project))}` } : {};
  const res = await app.inject({
    method,
    url,
    headers: { ...auth, ...headers },
    ...(body === undefined ? {} : { payload: body as object }),
  });
  return { status: res.statusCode, headers: res.headers, body: res.body ? JSON.parse(res.body) : undefined };
}

export const repoRoot = new URL("../..", import.meta.url).pathname;

export { freePort } from "./ports.ts";

export interface SpawnedServer {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
  logs(): string;
}

/**
 * The real entry point (server/main.ts) in its own process, as `make run` starts it. `detached`:
 * in a process group of its own, as a terminal's foreground job is (Ctrl-C signals the group).
 */
export async function spawnServer(env: Record<string, string>, { detached = false } = {}): Promise<SpawnedServer> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--no-node-snapshot", "--import", "tsx", "server/main.ts"], {
    cwd: repoRoot,
    detached,
    // as make run, the image and gradebox serve start it
    env: { MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "131072", ...process.env, GRADEBOX_PORT: String(port), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let logs = "";
  child.stdout?.on("data", (d) => (logs += d));
  child.stderr?.on("data", (d) => (logs += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const end = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {}
    if (Date.now() > end) throw new Error(`server did not start:\n${logs}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, url, exited, logs: () => logs };
}
