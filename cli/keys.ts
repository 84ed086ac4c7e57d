// `gradebox keys create|list|revoke`: a project's API keys. With --server (and, in the package's
// command, always) over HTTP, as the project's admin (an admin key: --api-key or GRADEBOX_API_KEY)
// or the operator (--admin-token or GRADEBOX_ADMIN_TOKEN); in a checkout without --server, on the
// server's database directly (server-commands.ts gives that part: this file imports nothing of
// the server, so the package's bundled command can carry it).

import { type Command, InvalidArgumentError, Option } from "commander";
import { type ApiKey, Gradebox, type KeyRole } from "../sdk/index.ts";
import { EXIT_STATUS_HELP, run } from "./api.ts";

const ROLES: readonly KeyRole[] = ["admin", "grader"];

export interface KeyOptions {
  project?: string;
  label?: string;
  role?: KeyRole;
  json?: boolean;
  init?: boolean;
  server?: string;
  apiKey?: string;
  adminToken?: string;
}

/** The keys commands on the server's database (a checkout's `gradebox`, without --server). */
export interface LocalKeys {
  create(opts: KeyOptions & { project: string; label: string }, command: Command): Promise<{ key: string; info: ApiKey }>;
  list(opts: KeyOptions): Promise<ApiKey[]>;
  revoke(id: string, opts: KeyOptions): Promise<void>;
}

const role = (v: string): KeyRole => {
  if (!ROLES.includes(v as KeyRole)) throw new InvalidArgumentError("it must be admin or grader");
  return v as KeyRole;
};

/** Over HTTP: the operator's token when given, else the API key (an admin key of the project). */
function remote(opts: KeyOptions): Gradebox {
  const adminToken = opts.adminToken ?? process.env.GRADEBOX_ADMIN_TOKEN;
  return new Gradebox({ baseURL: opts.server, project: opts.project, apiKey: adminToken || opts.apiKey });
}

function printCreated(key: string, info: ApiKey, json?: boolean): void {
  if (json) console.log(JSON.stringify({ key, ...info }));
  else console.log(`${key}\n\n(${info.id} for project ${info.project}, role ${info.role}; it is not shown again)`);
}

function printList(rows: readonly ApiKey[], json?: boolean): void {
  if (json) console.log(JSON.stringify(rows));
  else if (rows.length === 0) console.log("no keys");
  else
    for (const k of rows) {
      const state = k.revokedAt ? `revoked ${k.revokedAt}` : "active";
      console.log(`${k.id}  ${k.project.padEnd(16)} ${k.prefix}…  ${state}  ${k.role.padEnd(6)}  ${k.label}`);
    }
}

/**
 * Adds `keys`. `local`: the checkout's commands on the database, used when --server is absent;
 * without it (the package's command) every keys command goes to a server.
 */
export function addKeyCommands(program: Command, local?: LocalKeys): Command {
  const where = local
    ? "on the server's database (GRADEBOX_DB, named on stderr), or with --server over HTTP as the project's admin"
    : "over HTTP as the project's admin (an admin key) or the operator (GRADEBOX_ADMIN_TOKEN)";
  const keys = program.command("keys").description(`manage API keys: ${where}`);
  const serverOptions = (command: Command) => {
    command
      .option(
        "--server <url>",
        local
          ? "manage the keys of this server over HTTP (without it: its database, from the server's host)"
          : "the Gradebox server (env GRADEBOX_URL, default http://127.0.0.1:8787)",
      )
      .option("--api-key <key>", "with --server: an admin key of the project (env GRADEBOX_API_KEY)")
      .option("--admin-token <token>", "with --server: the operator's token, for any project (env GRADEBOX_ADMIN_TOKEN)")
      .option("--json", "print JSON");
    if (local)
      command.option("--init", "without --server: create the database if it does not exist (without it, a missing database is an error)");
    return command.addHelpText("after", `\n${EXIT_STATUS_HELP}`);
  };
  const isRemote = (opts: KeyOptions) => !local || opts.server !== undefined;

  serverOptions(
    keys
      .command("create")
      .description(
        "create a key for a project (and, on the database or with the operator's token, the project if new); the key is printed once",
      )
      .option("-p, --project <name>", "the project the key can access (with --server: env GRADEBOX_PROJECT, default: default)")
      .option("-l, --label <text>", "a note to recognise the key by", "")
      .addOption(
        new Option("-r, --role <role>", "admin (may manage the project's keys) or grader; a project's first key is admin").argParser(role),
      ),
  ).action(async (opts: KeyOptions & { label: string }, command: Command) => {
    if (isRemote(opts)) {
      return run({ json: opts.json }, async () => {
        const { key, ...info } = await remote(opts).keys.create({ label: opts.label, ...(opts.role ? { role: opts.role } : {}) });
        printCreated(key, info, opts.json);
      });
    }
    if (opts.project === undefined) command.error("error: required option '-p, --project <name>' not specified");
    const { key, info } = await (local as LocalKeys).create({ ...opts, project: opts.project }, command);
    printCreated(key, info, opts.json);
  });

  serverOptions(
    keys
      .command("list")
      .description("list keys: ids, prefixes, state, roles and labels, never the keys themselves")
      .option(
        "-p, --project <name>",
        local ? "only this project (with --server: the project, env GRADEBOX_PROJECT)" : "the project (env GRADEBOX_PROJECT)",
      ),
  ).action(async (opts: KeyOptions) => {
    if (isRemote(opts)) return run({ json: opts.json }, async () => printList(await remote(opts).keys.list(), opts.json));
    printList(await (local as LocalKeys).list(opts), opts.json);
  });

  serverOptions(
    keys
      .command("revoke")
      .description("revoke a key by its id (from `keys list`); every server stops accepting it at once")
      .argument("<id>", "the key id, key_…")
      .option("-p, --project <name>", "with --server: the key's project (env GRADEBOX_PROJECT, default: default)"),
  ).action(async (id: string, opts: KeyOptions) => {
    if (isRemote(opts)) {
      return run({ json: opts.json }, async () => {
        await remote(opts).keys.revoke({ id });
        console.log(opts.json ? JSON.stringify({ revoked: id }) : `revoked ${id}`);
      });
    }
    await (local as LocalKeys).revoke(id, opts);
    console.log(opts.json ? JSON.stringify({ revoked: id }) : `revoked ${id}`);
  });
  return keys;
}
