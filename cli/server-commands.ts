// The commands that come with the server, not with the client: `serve` starts it; `keys` (cli/keys.ts)
// manages API keys directly in its database without --server (it needs no running server, and no
// key to make the first one). They import the server (better-sqlite3, the config), so the client
// package leaves them out: its `keys` works over HTTP only.

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { loadConfig } from "../server/config.ts";
import { isPostgresUrl } from "../server/db/db.ts";
import { NAME } from "../server/schemas.ts";
import { Store } from "../server/store.ts";
import { EXIT_FAILED, usageError } from "./api.ts";
import { addKeyCommands } from "./keys.ts";

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

  const keys = addKeyCommands(program, {
    create: (opts, command) => {
      if (!NAME.test(opts.project)) {
        command.error(`error: project must match [a-z0-9][a-z0-9._-]{0,127}, got "${opts.project}"`);
      }
      return withStore(opts, (s) => s.keys.create(opts.project, opts.label, opts.role));
    },
    list: (opts) => withStore(opts, (s) => s.keys.list(opts.project)),
    revoke: async (id, opts) => {
      try {
        await withStore(opts, (s) => s.keys.revoke(id));
      } catch (error) {
        console.error(`error: ${(error as Error).message}`);
        process.exit(EXIT_FAILED);
      }
    },
  });

  // listed first in the help, as they always were
  const commands = program.commands as Command[];
  commands.unshift(...commands.splice(commands.indexOf(serve), 1), ...commands.splice(commands.indexOf(keys), 1));
}
