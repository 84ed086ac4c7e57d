// The entry point: config, store, sandbox pool, app; listens, and shuts down gracefully.

import { SandboxPool } from "../sandbox/host/pool.ts";
import { buildApp } from "./app.ts";
import { bootstrapDefaultKey, bootstrapMetricsToken } from "./bootstrap.ts";
import { loadConfig, poolOptions } from "./config.ts";
import { Store } from "./store.ts";

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (error) {
  console.error((error as Error).message);
  process.exit(2);
}

let store: Store;
try {
  store = await Store.open({ db: config.dbPath, pgPool: config.pgPool, quotas: config.quotas });
} catch (error) {
  console.error(`cannot open the database ${config.dbPath.replace(/\/\/([^:/@]+):[^@/]*@/, "//$1:***@")}: ${(error as Error).message}`);
  process.exit(2);
}
await bootstrapDefaultKey(store, config.dbPath);
const metricsToken = bootstrapMetricsToken(config);
const metricsTokenAt =
  typeof metricsToken.source === "object"
    ? `in ${metricsToken.source.path}`
    : metricsToken.source
      ? `set by ${metricsToken.source}`
      : "printed above (saved nowhere)";
if (metricsToken.created) {
  process.stdout.write(
    typeof metricsToken.source === "object"
      ? `Created the metrics token (GET /metrics needs it as a bearer token), saved to ${metricsToken.source.path}\n\n`
      : `The database is in memory: this run's metrics token (GET /metrics needs it as a bearer token) is\n\n  ${metricsToken.token}\n\n`,
  );
}
const pool = new SandboxPool(poolOptions(config));
await pool.start();
const app = await buildApp({ config, store, pool, metricsToken });

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
  await store.close();
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));

try {
  await app.listen({ host: config.host, port: config.port });
} catch (error) {
  // a second `make run` is the usual cause: one line that says what to do, not a stack
  const code = (error as NodeJS.ErrnoException).code;
  console.error(
    code === "EADDRINUSE"
      ? `port ${config.port} is in use: stop the other server or set GRADEBOX_PORT`
      : `cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`,
  );
  stopping = true;
  await app.close().catch(() => {});
  await pool.close();
  await store.close();
  process.exit(1);
}
app.log.info(`GET /metrics needs \`Authorization: Bearer <metrics token>\`; the metrics token is ${metricsTokenAt}`);
app.log.info(`gradebox listening on http://${config.host}:${config.port} (database ${store.db.label}, ${config.workers} sandbox workers)`);
