// `gradebox secrets …`: the project's secrets, values its models (--api-key-secret) and endpoints
// (--header-secret) send. A value is read from stdin (a hidden prompt on a terminal) or a file,
// never from the command line: arguments are visible to every user of the machine (ps, /proc)
// and stay in shell history.

import { createInterface } from "node:readline";
import { Writable } from "node:stream";
import type { Command } from "commander";
import type { Secret } from "../sdk/index.ts";
import { type ApiOptions, client, printJson, readInput, run, usageError, withApiOptions } from "./api.ts";

/** One secret on one line: its name, the host it is bound to and when its value was set. */
function describeSecret(s: Secret): string {
  return `${s.name.padEnd(28)} ${(s.host ?? "(unbound)").padEnd(28)} set ${s.updatedAt}`;
}

/** A value as a file or a pipe gives it: the line break that ends it is not part of it (echo, editors). */
const withoutFinalNewline = (text: string) => text.replace(/\r?\n$/, "");

async function readStdin(): Promise<string> {
  let text = "";
  process.stdin.setEncoding("utf8");
  for await (const chunk of process.stdin) text += chunk;
  return text;
}

/** One line typed at the terminal, not echoed; Ctrl-C or Ctrl-D ends the command. */
async function promptHidden(question: string): Promise<string> {
  const muted = new Writable({ write: (_chunk, _encoding, done) => done() });
  // the terminal stops echoing (raw mode) before the prompt invites typing
  const rl = createInterface({ input: process.stdin, output: muted, terminal: true });
  process.stderr.write(question);
  try {
    return await new Promise<string>((resolve) => {
      rl.once("line", resolve);
      rl.once("SIGINT", () => {
        process.stderr.write("\n");
        process.exit(130);
      });
      rl.once("close", () => resolve(""));
    });
  } finally {
    rl.close();
    process.stderr.write("\n");
  }
}

async function readValue(name: string, valueFile: string | undefined): Promise<string> {
  if (valueFile !== undefined) return withoutFinalNewline(await readInput(valueFile));
  if (process.stdin.isTTY) return promptHidden(`value of secret ${name} (not shown): `);
  return withoutFinalNewline(await readStdin());
}

export function addSecretCommands(program: Command): void {
  const secrets = program
    .command("secrets")
    .description("the project's secrets: API keys and header values its models and endpoints send (values are never shown)");

  withApiOptions(secrets.command("set").description("create a secret or replace its value (read from stdin or --value-file)"))
    .argument("<name>", "the secret's name: letters, digits, '.', '_' or '-'")
    .option("--value-file <path>", "read the value from this file instead of stdin")
    .addHelpText(
      "after",
      `
The value comes from stdin (on a terminal, a prompt that does not echo it) or
--value-file, never from the command line, where other users of the machine
could read it (ps) and the shell would keep it in its history. One final line
break is dropped. Setting a value unbinds the secret from its host: the next
model or endpoint that uses it binds it to theirs.

Examples:
  gradebox secrets set openai-key                       # prompts for it
  printf %s "$OPENAI_API_KEY" | gradebox secrets set openai-key
  gradebox secrets set openai-key --value-file ~/.config/openai-key`,
    )
    .action(async (name: string, opts: ApiOptions & { valueFile?: string }) => {
      const value = await readValue(name, opts.valueFile);
      if (value === "") {
        usageError(
          `no value for secret ${name}: pipe it on stdin (printf %s "$VALUE" | gradebox secrets set ${name}) or pass --value-file FILE`,
        );
      }
      await run(opts, async () => {
        const s = await client(opts).secrets.set({ name, value });
        if (opts.json) return printJson(s);
        // a new secret's two dates are one instant; a replaced one keeps its createdAt
        if (s.createdAt === s.updatedAt) console.log(`✓ created secret ${s.name}`);
        else console.log(`✓ replaced the value of secret ${s.name} (the next model or endpoint that uses it binds it to its host)`);
      });
    });

  withApiOptions(secrets.command("ls").alias("list").description("list the project's secrets: name, bound host, when set")).action(
    (opts: ApiOptions) =>
      run(opts, async () => {
        const list = await client(opts).secrets.list();
        if (opts.json) return printJson(list);
        if (list.length === 0) return console.log("no secrets");
        for (const s of list) console.log(describeSecret(s));
      }),
  );

  withApiOptions(secrets.command("get").description("show one secret (never its value)"))
    .argument("<name>", "the secret's name")
    .action((name: string, opts: ApiOptions) =>
      run(opts, async () => {
        const s = await client(opts).secrets.get({ name });
        if (opts.json) return printJson(s);
        console.log(describeSecret(s));
      }),
    );

  withApiOptions(secrets.command("rm").alias("delete").description("delete a secret (refused while a model or endpoint uses it)"))
    .argument("<name>", "the secret's name")
    .action((name: string, opts: ApiOptions) =>
      run(opts, async () => {
        await client(opts).secrets.delete({ name });
        if (opts.json) return printJson({ deleted: name });
        console.log(`✓ deleted secret ${name}`);
      }),
    );
}
