// What every command shares: the command class (how an argument error is printed, and the exit
// codes), the options of the commands against a running server, the client, how a failure is
// printed (with a caret under the line, when the source is at hand) before exiting 1, and how an
// input file is read (an unreadable one is a usage error: one line, exit 2).

import { open, readFile } from "node:fs/promises";
import { Command, type ErrorOptions, InvalidArgumentError } from "commander";
import { APIError, Gradebox, GraderAbstainedError, GraderRuntimeError, GraderValidationError } from "../sdk/index.ts";

/** The command ran and failed: the server refused or could not do it, or (grade --threads) a line failed. */
export const EXIT_FAILED = 1;
/** The command was called wrong: an argument, an option, an input file. */
export const EXIT_USAGE = 2;

export const EXIT_STATUS_HELP = `Exit status:
  0  done
  1  the command failed: the server refused or could not do it;
     for grade --threads, a line failed (BAD_LINE or a grade error; an
     abstention only with --fail-on-abstain); for grade --thread, the
     grader abstained
  2  a usage error: a bad argument or option (one error line, then the
     command's usage), an input file that cannot be read or is not JSON,
     no database for keys (one error line)`;

/**
 * The gradebox command and every subcommand (createCommand makes them of this class too, whatever
 * order they are added in): an argument or option error prints one line and the usage of the
 * command it belongs to, not its whole help, and every error commander reports exits 2.
 */
export class GradeboxCommand extends Command {
  constructor(name?: string) {
    super(name);
    // --help and --version exit 0; any other exit of commander's is a usage error
    this.exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : EXIT_USAGE));
  }

  override createCommand(name?: string): Command {
    return new GradeboxCommand(name);
  }

  override error(message: string, errorOptions?: ErrorOptions): never {
    const names: string[] = [];
    for (let c: Command | null = this; c; c = c.parent) names.unshift(c.name());
    this.showHelpAfterError(`Usage: ${this.createHelp().commandUsage(this)}\nRun '${names.join(" ")} --help' for its options.`);
    return super.error(message, errorOptions); // exitOverride makes any failure exit 2
  }
}

/** A usage error found by the command itself (an input file that cannot be read): one line on stderr, exit 2. */
export function usageError(message: string): never {
  process.stderr.write(`error: ${message}\n`);
  process.exit(EXIT_USAGE);
}

/** Option and argument parsers: commander reports a bad value as an argument error, naming the option. */
export const wholeNumber = (v: string) => {
  const n = Number(v);
  if (!/^\s*\d+\s*$/.test(v) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError("it must be a whole number from 1");
  return n;
};
export const fraction = (v: string) => {
  const n = Number(v);
  if (v.trim() === "" || !(n >= 0 && n <= 1)) throw new InvalidArgumentError("it must be a number from 0 to 1");
  return n;
};
/** A repeatable name=value option, collected into one record (default `{}`). */
export const nameValue = (what: string) => (v: string, all: Record<string, string>) => {
  const eq = v.indexOf("=");
  if (eq < 1) throw new InvalidArgumentError(`it must be ${what}`);
  return { ...all, [v.slice(0, eq)]: v.slice(eq + 1) };
};

/** What went wrong opening a file, in a few words. */
function fsReason(error: NodeJS.ErrnoException, writing = false): string {
  switch (error.code) {
    case "ENOENT":
      return writing ? "no such directory" : "no such file";
    case "ENOTDIR":
      return "a part of the path is not a directory";
    case "EISDIR":
      return "it is a directory";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    default:
      return error.message;
  }
}

/** An input file's text; one that cannot be read is a usage error. */
export async function readInput(path: string): Promise<string> {
  return readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => usageError(`cannot read ${path}: ${fsReason(error)}`));
}

/** Fails as readInput does unless the file can be opened for reading (for files that are streamed, not read whole). */
export async function checkReadable(path: string): Promise<void> {
  const handle = await open(path, "r").catch((error: NodeJS.ErrnoException) => usageError(`cannot read ${path}: ${fsReason(error)}`));
  const isDirectory = (await handle.stat()).isDirectory();
  await handle.close();
  if (isDirectory) usageError(`cannot read ${path}: ${fsReason({ code: "EISDIR" } as NodeJS.ErrnoException)}`);
}

/** The message of a file that cannot be written. */
export const cannotWrite = (path: string, error: NodeJS.ErrnoException) => `cannot write ${path}: ${fsReason(error, true)}`;

/** JSON text from `where` (a file, or an option given inline); text that is not JSON is a usage error. */
export function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    return usageError(`${where} is not JSON: ${(error as Error).message}`);
  }
}

/** A JSON input file. */
export async function readJsonFile(path: string): Promise<unknown> {
  return parseJson(await readInput(path), path);
}

/** A --thread value: the thread as inline JSON when it starts with `{`, else a file holding it. */
export async function readThreadOption(value: string, option = "--thread"): Promise<unknown> {
  return value.trimStart().startsWith("{") ? parseJson(value, option) : readJsonFile(value);
}

export interface ApiOptions {
  url?: string;
  apiKey?: string;
  project?: string;
  json?: boolean;
}

export function client(opts: ApiOptions): Gradebox {
  return new Gradebox({ baseURL: opts.url, apiKey: opts.apiKey, project: opts.project });
}

/** The options every API command takes; flags win over GRADEBOX_URL, GRADEBOX_API_KEY, GRADEBOX_PROJECT. */
export function withApiOptions(command: Command, urlFlag = "--url"): Command {
  return command
    .option(`${urlFlag} <url>`, "Gradebox server URL (env GRADEBOX_URL, default http://127.0.0.1:8787)")
    .option("--api-key <key>", "API key (env GRADEBOX_API_KEY)")
    .option("--project <name>", "project (env GRADEBOX_PROJECT, default: default)")
    .option("--json", "machine-readable output");
}

/** The source's line (1-based) with a caret under its column, as push and grade print them. */
export function caret(source: string, line: number, column = 1, indent = "  "): string {
  const text = source.split("\n")[line - 1] ?? "";
  return `${indent}${line} | ${text}\n${indent}${" ".repeat(String(line).length)} | ${" ".repeat(Math.max(0, column - 1))}^`;
}

/**
 * A server message in the command line's words: its hints name HTTP requests (`PUT …/lock
 * {"locked": false}`, `POST /v1/projects/p/models`, grade-batch's groupBy, the quotas' DELETEs), the command names
 * the command that does it; a sample's 0-based index in
 * the API is numbered from 1 here, as the lines of the --samples file.
 */
export function cliWords(message: string, body: Record<string, unknown> = {}): string {
  const key = /grader "([^"]+)"/.exec(message)?.[1] ?? "KEY";
  let text = message
    .replace(/\(PUT …\/lock \{"locked": false\}\)/g, `(gradebox unlock ${key})`)
    .replace(/\(POST …\/release\)/g, `(gradebox release ${key})`)
    .replace(/\(POST \/v1\/projects\/[^/\s)]+\/models\)/g, "(gradebox models create)")
    .replace(/\(grade-batch's groupBy or groups\)/g, "(gradebox grade --threads FILE --group-by FIELD)")
    // quota hints (server/store/quotas.ts)
    .replace(/\(DELETE \/v1\/projects\/[^/\s)]+\/graders\/([^/\s)]+)\/versions\/\{version\}/g, (_, k: string) =>
      k === "{key}" ? "(gradebox rm KEY@VERSION" : `(gradebox rm ${k}@VERSION`,
    )
    .replace(/\(DELETE \/v1\/projects\/[^/\s)]+\/graders\/\{key\}\)/g, "(gradebox rm KEY)")
    .replace(/\(DELETE \/v1\/projects\/[^/\s)]+\/models\/\{key\}\)/g, "(gradebox models delete KEY)")
    .replace(/\(DELETE \/v1\/projects\/[^/\s)]+\/secrets\/\{name\}\)/g, "(gradebox secrets rm NAME)");
  if (body.check === "test_run" && typeof body.index === "number") {
    const index = body.index;
    text = text.replace(new RegExp(`\\bsample ${index}\\b`, "g"), `sample ${index + 1}`);
  }
  return text;
}

export function fail(error: unknown, opts: ApiOptions, source?: string): never {
  if (opts.json) {
    const e = error as { code?: string; status?: number; check?: string; line?: number; column?: number; message: string };
    const abstained = error instanceof GraderAbstainedError ? { abstained: error.abstained } : {};
    console.log(
      JSON.stringify({
        error: { code: e.code, status: e.status, check: e.check, line: e.line, column: e.column, message: e.message, ...abstained },
      }),
    );
  } else if (error instanceof GraderAbstainedError) {
    // not a failure of the grader's code: no score is honest for this thread, and the reason says why
    console.error(`✗ abstained ${error.abstained.code}: ${error.abstained.reason} (no score for this thread)`);
  } else if (error instanceof GraderValidationError) {
    const message = cliWords((error.body.message as string) ?? error.message, error.body);
    // a function grader's message names its position; a template's does not
    const at = error.line !== undefined && !/\(line \d+/.test(message) ? ` (line ${error.line}, column ${error.column ?? 1})` : "";
    console.error(`✗ ${error.check} check failed: ${message}${at}`);
    if (source && error.line) console.error(`\n${caret(source, error.line, error.column)}`);
  } else if (error instanceof GraderRuntimeError && error.line !== undefined) {
    // GRADER_ERROR: where the grader's code threw, in its source
    console.error(`✗ ${error.message} (line ${error.line}, column ${error.column})`);
    if (source) console.error(`\n${caret(source, error.line, error.column)}`);
  } else {
    const body = error instanceof APIError ? error.body : {};
    console.error(`✗ ${cliWords((error as Error).message, body)}`);
  }
  process.exit(EXIT_FAILED);
}

export const printJson = (value: unknown) => console.log(JSON.stringify(value, null, 2));

/** Runs a command's work; any error is reported by `fail` (with the source, for a caret). */
export const run = <T>(opts: ApiOptions, work: () => Promise<T>, source?: string): Promise<T> =>
  work().catch((error) => fail(error, opts, source));
