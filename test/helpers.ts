// Test helpers: the real app with a real sandbox pool and a real SQLite file in a temp dir.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { SandboxPool } from "../sandbox/pool.ts";
import { buildApp } from "../server/app.ts";
import { type Config, loadConfig } from "../server/config.ts";
import { Store } from "../server/store.ts";

export interface TestServer {
  app: FastifyInstance;
  store: Store;
  pool: SandboxPool;
  config: Config;
  dir: string;
  /** set once listen() was called */
  url: string;
  close(): Promise<void>;
}

export async function startServer(opts: { env?: Record<string, string>; listen?: boolean } = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "gradebox-test-"));
  const config = loadConfig({
    GRADEBOX_DB: join(dir, "gradebox.db"),
    GRADEBOX_LOG_LEVEL: "silent",
    GRADEBOX_WORKERS: "2",
    GRADEBOX_PORT: "0",
    ...opts.env,
  });
  const store = new Store(config.dbPath);
  const pool = new SandboxPool({
    size: config.workers,
    limits: { timeoutMs: config.timeoutMs, memoryMb: config.memoryMb, maxWarm: config.warmIsolates },
  });
  await pool.start();
  const app = await buildApp({ config, store, pool });
  let url = "";
  if (opts.listen) {
    await app.listen({ host: "127.0.0.1", port: 0 });
    const address = app.server.address();
    if (address && typeof address === "object") url = `http://127.0.0.1:${address.port}`;
  }
  return {
    app,
    store,
    pool,
    config,
    dir,
    get url() {
      return url;
    },
    async close() {
      await app.close();
      await pool.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const thread = (completion: string, metadata: Record<string, unknown> = {}) => ({
  turns: [
    { role: "user" as const, content: "question" },
    { role: "assistant" as const, content: completion },
  ],
  metadata,
});

/** POST/PUT/GET/DELETE through app.inject, returning status and parsed JSON. */
export async function call(app: FastifyInstance, method: "GET" | "POST" | "PUT" | "DELETE", url: string, body?: unknown) {
  const res = await app.inject({ method, url, ...(body === undefined ? {} : { payload: body as object }) });
  return { status: res.statusCode, headers: res.headers, body: res.body ? JSON.parse(res.body) : undefined };
}
