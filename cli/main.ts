// gradebox: the command line. `serve` starts the server; `keys` manages API keys directly in
// the database (it needs no running server, and no key to make the first one).

import { spawn } from "node:child_process";
import { Command } from "commander";
import { loadConfig } from "../server/config.ts";
import { Store } from "../server/store.ts";

const program = new Command()
  .name("gradebox")
  .description("Function graders: register, validate and run async grade(thread) functions in a sandbox.")
  .showHelpAfterError();

program
  .command("serve")
  .description("start the server (configured by GRADEBOX_* environment variables; see the README)")
  .action(() => {
    const child = spawn(
      process.execPath,
      ["--no-node-snapshot", "--import", import.meta.resolve("tsx"), new URL("../server/main.ts", import.meta.url).pathname],
      {
        stdio: "inherit",
      },
    );
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
    child.on("exit", (code) => process.exit(code ?? 1));
  });

const keys = program.command("keys").description("manage API keys (stored as hashes in GRADEBOX_DB)");

function withStore<T>(fn: (store: Store) => T): T {
  const store = new Store(loadConfig().dbPath);
  try {
    return fn(store);
  } finally {
    store.close();
  }
}

keys
  .command("create")
  .description("create a key for a project (and the project, if new); the key is printed once")
  .requiredOption("-p, --project <name>", "the project the key can access")
  .option("-l, --label <text>", "a note to recognise the key by", "")
  .option("--json", "print JSON")
  .action((opts: { project: string; label: string; json?: boolean }) => {
    if (!/^[a-z0-9][a-z0-9._-]{0,127}$/.test(opts.project)) {
      program.error(`error: project must match [a-z0-9][a-z0-9._-]{0,127}, got "${opts.project}"`);
    }
    const { key, info } = withStore((s) => s.keys.create(opts.project, opts.label));
    if (opts.json) console.log(JSON.stringify({ key, ...info }));
    else console.log(`${key}\n\n(${info.id} for project ${info.project}; it is not shown again)`);
  });

keys
  .command("list")
  .description("list keys (never the keys themselves)")
  .option("-p, --project <name>", "only this project")
  .option("--json", "print JSON")
  .action((opts: { project?: string; json?: boolean }) => {
    const rows = withStore((s) => s.keys.list(opts.project));
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
  .action((id: string) => {
    try {
      withStore((s) => s.keys.revoke(id));
    } catch (error) {
      program.error(`error: ${(error as Error).message}`);
    }
    console.log(`revoked ${id}`);
  });

await program.parseAsync();
