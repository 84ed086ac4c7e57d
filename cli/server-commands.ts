// The commands that come with the server, not with the client: `serve` starts it; `keys` manages
// API keys directly in its database (it needs no running server, and no key to make the first
// one). They import the server (better-sqlite3, the config), so the client package leaves them out.

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { loadConfig } from "../server/config.ts";
import { isPostgresUrl } from "../server/db/db.ts";
import { NAME } from "../server/schemas.ts";
import { Store } from "../server/store.ts";
import { EXIT_FAILED, usageError } from "./api.ts";

interface KeysOptions {
  init?: boolean;
  json?: boolean;
}

/**
 * Opens the server's database (GRADEBOX_DB, default ./data/gradebox.db, relative to the current
 * directory as the server resolves it), saying on stderr which file it is. A database that does not
 * exist is created only with --init: a key made in a stray new database would be refused by the
 * server, which reads another.
 */
async function withStore<T>(opts: KeysOptions, fn: (store: Store) => Promise<T>): Promise<T> {
  const { dbPath, pgPool } = loadConfig();
  // a PostgreSQL registry (GRADEBOX_DB=postgres://…) is the servers' own: it exists or the connection fails
  const postgres = isPostgresUrl(dbPath);
  const path = dbPath === ":memory:" || postgres ? dbPath : resolve(dbPath);
  const exists = path === ":memory:" || postgres || existsSync(path);
  if (!exists && !opts.init) {
    usageError(
      `no database at ${path}: run gradebox keys from the server's directory, set GRADEBOX_DB to the server's database, or pass --init to create a new one there`,
    );
  }
  const store = await Store.open({ db: path, pgPool: Math.min(pgPool, 2) });
  console.error(`database ${store.db.label}${exists ? "" : " (created)"}`);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

const INIT_HELP = "create the database if it does not exist (without it, a missing database is an error)";

export function addServerCommands(program: Command): void {
  const serve = program
    .command("serve")
    .description("start the server (configured by GRADEBOX_* environment variables; see docs/configuration.md)")
    .action(() => {
      // compiled by `make build`, the command and the server are JavaScript and need no loader
      const argv = import.meta.url.endsWith(".js")
        ? [new URL("../server/main.js", import.meta.url).pathname]
        : ["--import", import.meta.resolve("tsx"), new URL("../server/main.ts", import.meta.url).pathname];
      // glibc gives large freed buffers back to the OS only with a fixed mmap threshold (docs/security.md)
      const env = { MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "131072", ...process.env };
      const child = spawn(process.execPath, ["--no-node-snapshot", ...argv], { stdio: "inherit", env });
      for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
      child.on("exit", (code) => process.exit(code ?? 1));
    });

  const keys = program
    .command("keys")
    .description("manage API keys (stored as hashes in GRADEBOX_DB; the database it opens is named on stderr)");

  keys
    .command("create")
    .description("create a key for a project (and the project, if new); the key is printed once")
    .requiredOption("-p, --project <name>", "the project the key can access")
    .option("-l, --label <text>", "a note to recognise the key by", "")
    .option("--json", "print JSON")
    .option("--init", INIT_HELP)
    .action(async (opts: KeysOptions & { project: string; label: string }, command: Command) => {
      if (!NAME.test(opts.project)) {
        command.error(`error: project must match [a-z0-9][a-z0-9._-]{0,127}, got "${opts.project}"`);
      }
      const { key, info } = await withStore(opts, (s) => s.keys.create(opts.project, opts.label));
      if (opts.json) console.log(JSON.stringify({ key, ...info }));
      else console.log(`${key}\n\n(${info.id} for project ${info.project}; it is not shown again)`);
    });

  keys
    .command("list")
    .description("list keys (never the keys themselves)")
    .option("-p, --project <name>", "only this project")
    .option("--json", "print JSON")
    .option("--init", INIT_HELP)
    .action(async (opts: KeysOptions & { project?: string }) => {
      const rows = await withStore(opts, (s) => s.keys.list(opts.project));
      if (opts.json) return console.log(JSON.stringify(rows));
      if (rows.length === 0) return console.log("no keys");
      for (const k of rows) {
        console.log(`${k.id}  ${k.project.padEnd(16)} ${k.prefix}…  ${k.revokedAt ? `revoked ${k.revokedAt}` : "active"}  ${k.label}`);
      }
    });

  keys
    .command("revoke")
    .description("revoke a key by its id (from `keys list`); it stops working at once")
    .argument("<id>", "the key id, key_…")
    .option("--json", "print JSON")
    .option("--init", INIT_HELP)
    .action(async (id: string, opts: KeysOptions) => {
      try {
        await withStore(opts, (s) => s.keys.revoke(id));
      } catch (error) {
        console.error(`error: ${(error as Error).message}`);
        process.exit(EXIT_FAILED);
      }
      console.log(opts.json ? JSON.stringify({ revoked: id }) : `revoked ${id}`);
    });

  // listed first in the help, as they always were
  const commands = program.commands as Command[];
  commands.unshift(...commands.splice(commands.indexOf(serve), 1), ...commands.splice(commands.indexOf(keys), 1));
}
