// Throwaway PostgreSQL clusters for tests: initdb into a fresh temp dir, start on a free loopback port,
// trust auth for the superuser "gradebox", no durability (fsync off: nothing here must survive a crash).
// The server binaries are Debian's (scripts/ensure-postgres.sh installs them): /usr/lib/postgresql/<ver>/bin,
// which is not on PATH. PostgreSQL refuses to run as root, so a root test process runs initdb/pg_ctl as the
// `postgres` system user the Debian package creates; any other user runs them as itself.

import { execFile, execFileSync } from "node:child_process";
import { accessSync, chownSync, constants, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import pg from "pg";
import { freePort } from "./ports.ts";

export interface Postgres {
  /** postgres://gradebox@127.0.0.1:<port>/gradebox */
  url: string;
  port: number;
  /** the temp dir: data/ (the cluster), postgres.log, and the unix socket */
  dir: string;
  /** the server log so far */
  logs(): string;
  /** pg_ctl -m immediate stop, then remove the dir. Idempotent. */
  stop(): Promise<void>;
}

const SERVER_BINARIES = ["initdb", "postgres", "pg_ctl"];

/** The directory holding initdb, postgres and pg_ctl: $GRADEBOX_PG_BIN, PATH, or Debian's newest /usr/lib/postgresql/<ver>/bin. */
export function pgBinDir(): string {
  const has = (dir: string) =>
    SERVER_BINARIES.every((b) => {
      try {
        accessSync(join(dir, b), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  const candidates: string[] = [];
  if (process.env.GRADEBOX_PG_BIN) candidates.push(process.env.GRADEBOX_PG_BIN);
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => /^\d+(\.\d+)?$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((v) => join(debian, v, "bin")));
  }
  candidates.push(...(process.env.PATH ?? "").split(delimiter).filter(Boolean));
  const dir = candidates.find(has);
  if (!dir) {
    throw new Error(
      "PostgreSQL server binaries (initdb, postgres, pg_ctl) not found in /usr/lib/postgresql/*/bin or PATH: run scripts/ensure-postgres.sh",
    );
  }
  return dir;
}

/** Who runs the cluster: the `postgres` system user when we are root, else ourselves (undefined = no switch). */
function clusterUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    if (Number.isInteger(uid) && Number.isInteger(gid) && uid !== 0) return { uid, gid };
  } catch {}
  throw new Error("running as root and there is no `postgres` user to run PostgreSQL as (Debian's postgresql package creates it)");
}

/** The environment for initdb/pg_ctl/postgres: ours without PG* variables, so nothing redirects the cluster. */
function clusterEnv(dir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PG")) env[k] = v;
  env.HOME = dir;
  env.LC_ALL = "C";
  delete env.LANG;
  delete env.LANGUAGE;
  return env;
}

function run(bin: string, args: string[], dir: string, user: { uid: number; gid: number } | undefined, timeoutMs = 60_000) {
  return new Promise<{ code: number | null; output: string }>((resolve) => {
    execFile(
      bin,
      args,
      { cwd: dir, env: clusterEnv(dir), timeout: timeoutMs, maxBuffer: 16 << 20, ...(user ?? {}) },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : null) : 0;
        const output = `${stdout}${stderr}${err && code === null ? `\n${err.message}` : ""}`;
        resolve({ code, output });
      },
    );
  });
}

// Clusters still running when the process exits (a test that threw before stop()) are stopped then.
const running = new Map<string, () => void>();
let exitHook = false;
function registerForExit(dir: string, stopSync: () => void) {
  running.set(dir, stopSync);
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const stop of running.values()) {
      try {
        stop();
      } catch {}
    }
  });
}

/** Start a throwaway cluster with database `gradebox` and superuser `gradebox` (trust auth, loopback only). */
export async function startPostgres(opts: { maxConnections?: number; sharedBuffers?: string } = {}): Promise<Postgres> {
  const bin = pgBinDir();
  const user = clusterUser();
  const dir = mkdtempSync(join(tmpdir(), "gradebox-pg-"));
  const data = join(dir, "data");
  const logFile = join(dir, "postgres.log");
  const logs = () => {
    try {
      return readFileSync(logFile, "utf8");
    } catch {
      return "";
    }
  };
  const fail = (what: string, detail: string): never => {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`PostgreSQL test cluster: ${what}\n${detail}`);
  };
  if (user) chownSync(dir, user.uid, user.gid);

  const init = await run(
    join(bin, "initdb"),
    ["-D", data, "-A", "trust", "-U", "gradebox", "-E", "UTF8", "--no-locale", "--no-sync"],
    dir,
    user,
  );
  if (init.code !== 0) fail(`initdb failed (exit ${init.code})`, init.output);

  const pgCtlStopSync = () => {
    try {
      execFileSync(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "-t", "10", "stop"], {
        cwd: dir,
        env: clusterEnv(dir),
        stdio: "ignore",
        timeout: 15_000,
        ...(user ?? {}),
      });
    } catch {}
  };

  let port = 0;
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    // postgresql.auto.conf is read last, so these win over postgresql.conf; rewritten on each attempt.
    const settings = {
      listen_addresses: "'127.0.0.1'",
      port: String(port),
      unix_socket_directories: `'${dir.replaceAll("'", "''")}'`,
      fsync: "off",
      full_page_writes: "off",
      synchronous_commit: "off",
      shared_buffers: `'${opts.sharedBuffers ?? "32MB"}'`,
      max_connections: String(opts.maxConnections ?? 200),
      logging_collector: "off",
      log_min_messages: "warning",
      log_line_prefix: "'%m [%p] '",
    };
    const autoConf = join(data, "postgresql.auto.conf");
    writeFileSync(
      autoConf,
      `${Object.entries(settings)
        .map(([k, v]) => `${k} = ${v}`)
        .join("\n")}\n`,
    );
    if (user) chownSync(autoConf, user.uid, user.gid);
    const start = await run(join(bin, "pg_ctl"), ["-D", data, "-l", logFile, "-w", "-t", "30", "start"], dir, user, 45_000);
    if (start.code === 0) break;
    pgCtlStopSync(); // in case it came up after pg_ctl gave up
    const log = logs();
    if (attempt < 3 && /could not bind|Address already in use|could not create any TCP\/IP sockets/i.test(log)) {
      writeFileSync(logFile, ""); // the next attempt's log only
      continue;
    }
    fail(`pg_ctl start failed (exit ${start.code}) on port ${port}`, `${start.output}\n--- server log ---\n${log}`);
  }

  let stopped = false;
  const stopSync = () => {
    if (stopped) return;
    stopped = true;
    running.delete(dir);
    pgCtlStopSync();
    rmSync(dir, { recursive: true, force: true });
  };
  registerForExit(dir, stopSync);

  const base = `postgres://gradebox@127.0.0.1:${port}`;
  try {
    const client = new pg.Client({ connectionString: `${base}/postgres` });
    await client.connect();
    try {
      await client.query("CREATE DATABASE gradebox");
    } finally {
      await client.end();
    }
  } catch (err) {
    const log = logs();
    stopSync();
    throw new Error(`PostgreSQL test cluster: CREATE DATABASE gradebox failed: ${(err as Error).message}\n--- server log ---\n${log}`);
  }

  return {
    url: `${base}/gradebox`,
    port,
    dir,
    logs,
    async stop() {
      if (stopped) return;
      stopped = true;
      running.delete(dir);
      await run(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "-t", "10", "stop"], dir, user, 15_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let dbCounter = 0;

/**
 * A new empty database on the cluster of `url`; returns its URL (the same user, host and port).
 * Without a name, a unique one (test_<pid>_<n>) is made up.
 */
export async function createDatabase(url: string, name = `test_${process.pid}_${++dbCounter}`): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`);
  } finally {
    await client.end();
  }
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(name)}`;
  return u.toString();
}
