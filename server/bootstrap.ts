// First start on a fresh database: project "default" with one API key, printed once and
// written next to the database (mode 0600) so the README quickstart works without a step; and
// the metrics token, unless GRADEBOX_METRICS_TOKEN sets it, saved next to the database too.

import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Config } from "./config.ts";
import { isPostgresUrl } from "./db/db.ts";
import { newSecretsKey, parseSecretsKey } from "./secrets/box.ts";
import type { Store } from "./store.ts";

/** Where the server keeps its files: next to a SQLite database, or ./data with PostgreSQL. */
function stateDir(dbPath: string): string {
  return isPostgresUrl(dbPath) ? "data" : dirname(dbPath);
}

export function defaultKeyPath(dbPath: string): string {
  return join(stateDir(dbPath), "default.key");
}

export async function bootstrapDefaultKey(store: Store, dbPath: string): Promise<void> {
  if (dbPath === ":memory:" || !(await store.keys.isEmpty())) return;
  if (isPostgresUrl(dbPath)) {
    // a shared registry: nodes starting together would each make one, into files on their own disks; an operator makes the first
    process.stdout.write(
      "\nThe registry has no API keys yet: make one with\n\n  GRADEBOX_DB=<this database's URL> npx gradebox keys create --project default\n\n",
    );
    return;
  }
  const { key } = await store.keys.create("default", "created at first start");
  const path = defaultKeyPath(dbPath);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${key}\n`, { mode: 0o600 });
  process.stdout.write(
    `\nCreated project "default" and its API key (shown once, also saved to ${path}):\n\n  ${key}\n\n` +
      `  export GRADEBOX_API_KEY=$(cat ${path})\n\n`,
  );
}

export function metricsTokenPath(dbPath: string): string {
  return join(stateDir(dbPath), "metrics.token");
}

/** The bearer token GET /metrics needs, and where an operator finds it. */
export interface MetricsToken {
  token: string;
  /** `GRADEBOX_METRICS_TOKEN`, the file it is saved in, or undefined if it is kept nowhere */
  source: "GRADEBOX_METRICS_TOKEN" | { path: string } | undefined;
  /** made by this call (first start) */
  created: boolean;
}

const newMetricsToken = () => `gbm_${randomBytes(32).toString("base64url")}`;

/**
 * GRADEBOX_METRICS_TOKEN if set; else the token saved next to the database, made and saved (mode
 * 0600) at first start. A database in memory gets a token for this run only.
 */
export function bootstrapMetricsToken(config: Pick<Config, "dbPath" | "metricsToken">): MetricsToken {
  if (config.metricsToken) return { token: config.metricsToken, source: "GRADEBOX_METRICS_TOKEN", created: false };
  if (config.dbPath === ":memory:") return { token: newMetricsToken(), source: undefined, created: true };
  const path = metricsTokenPath(config.dbPath);
  /** the saved token; "" for an empty file, undefined for none */
  const saved = (): string | undefined => {
    try {
      return readFileSync(path, "utf8").trim();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  };
  const existing = saved();
  if (existing) return { token: existing, source: { path }, created: false };
  const token = newMetricsToken();
  try {
    mkdirSync(dirname(path), { recursive: true });
    // "wx": of two servers starting at once on one database, one writes and both use its token
    writeFileSync(path, `${token}\n`, { mode: 0o600, flag: existing === undefined ? "wx" : "w" });
    if (existing === "") chmodSync(path, 0o600);
  } catch (error) {
    const other = (error as NodeJS.ErrnoException).code === "EEXIST" ? saved() : undefined;
    if (!other) throw error;
    return { token: other, source: { path }, created: false };
  }
  return { token, source: { path }, created: true };
}

export function secretsKeyPath(dbPath: string): string {
  return join(stateDir(dbPath), "secrets.key");
}

/**
 * The key project secrets are sealed under: GRADEBOX_SECRETS_KEY; else, on SQLite, the key saved
 * next to the database (made, mode 0600, at first start). PostgreSQL's nodes must share one, so
 * there only the operator can give it: undefined, and storing a secret answers SECRETS_NOT_CONFIGURED.
 */
export function bootstrapSecretsKey(config: Pick<Config, "dbPath" | "secretsKey">): Buffer | undefined {
  if (config.secretsKey) return parseSecretsKey(config.secretsKey);
  if (config.dbPath === ":memory:") return randomBytes(32);
  if (isPostgresUrl(config.dbPath)) return undefined;
  const path = secretsKeyPath(config.dbPath);
  const read = () => {
    try {
      return parseSecretsKey(readFileSync(path, "utf8"));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  };
  const existing = read();
  if (existing) return existing;
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${newSecretsKey()}\n`, { mode: 0o600, flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  const made = read();
  if (!made) throw new Error(`${path} does not hold a secrets key (32 bytes, hex or base64); remove it or set GRADEBOX_SECRETS_KEY`);
  return made;
}
