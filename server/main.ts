// The entry point: config, store, sandbox pool, app; listens, and shuts down gracefully.

import { SandboxPool } from "../sandbox/pool.ts";
import { buildApp } from "./app.ts";
import { bootstrapDefaultKey } from "./bootstrap.ts";
import { loadConfig } from "./config.ts";
import { Store } from "./store.ts";

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (error) {
  console.error((error as Error).message);
  process.exit(2);
}

const store = new Store(config.dbPath);
bootstrapDefaultKey(store, config.dbPath);
const pool = new SandboxPool({
  size: config.workers,
  limits: { timeoutMs: config.timeoutMs, memoryMb: config.memoryMb, maxWarm: config.warmIsolates },
});
await pool.start();
const app = await buildApp({ config, store, pool });

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  app.log.info({ signal }, "shutting down");
  const force = setTimeout(() => process.exit(1), 15_000);
  force.unref();
  // Stop accepting and let in-flight requests finish. Keep-alive connections that go idle
  // after the close began would hold it open until their timeout: close them as they idle,
  // and cut whatever is left after 10 s.
  const idle = setInterval(() => app.server.closeIdleConnections(), 50);
  const cut = setTimeout(() => app.server.closeAllConnections(), 10_000);
  await app.close();
  clearInterval(idle);
  clearTimeout(cut);
  await pool.close();
  store.close();
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));

await app.listen({ host: config.host, port: config.port });
app.log.info(`gradebox listening on http://${config.host}:${config.port} (database ${config.dbPath}, ${config.workers} sandbox workers)`);
