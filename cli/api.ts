// What every command against a running server shares: its options, the client, and how an error
// is printed (with a caret under the line, when the source is at hand) before exiting 1.

import type { Command } from "commander";
import { Gradebox, GraderRuntimeError, GraderValidationError } from "../sdk/index.ts";

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
export function withApiOptions(command: Command): Command {
  return command
    .option("--url <url>", "server URL (env GRADEBOX_URL, default http://127.0.0.1:8787)")
    .option("--api-key <key>", "API key (env GRADEBOX_API_KEY)")
    .option("--project <name>", "project (env GRADEBOX_PROJECT, default: default)")
    .option("--json", "machine-readable output");
}

/** The source's line (1-based) with a caret under its column, as push and grade print them. */
export function caret(source: string, line: number, column = 1, indent = "  "): string {
  const text = source.split("\n")[line - 1] ?? "";
  return `${indent}${line} | ${text}\n${indent}${" ".repeat(String(line).length)} | ${" ".repeat(Math.max(0, column - 1))}^`;
}

export function fail(error: unknown, opts: ApiOptions, source?: string): never {
  if (opts.json) {
    const e = error as { code?: string; status?: number; check?: string; line?: number; column?: number; message: string };
    console.log(
      JSON.stringify({ error: { code: e.code, status: e.status, check: e.check, line: e.line, column: e.column, message: e.message } }),
    );
  } else if (error instanceof GraderValidationError) {
    const message = (error.body.message as string) ?? error.message;
    // a function grader's message names its position; a template's does not
    const at = error.line !== undefined && !/\(line \d+/.test(message) ? ` (line ${error.line}, column ${error.column ?? 1})` : "";
    console.error(`✗ ${error.check} check failed: ${message}${at}`);
    if (source && error.line) console.error(`\n${caret(source, error.line, error.column)}`);
  } else if (error instanceof GraderRuntimeError && error.line !== undefined) {
    // GRADER_ERROR: where the grader's code threw, in its source
    console.error(`✗ ${error.message} (line ${error.line}, column ${error.column})`);
    if (source) console.error(`\n${caret(source, error.line, error.column)}`);
  } else {
    console.error(`✗ ${(error as Error).message}`);
  }
  process.exit(1);
}

export const printJson = (value: unknown) => console.log(JSON.stringify(value, null, 2));

/** Runs a command's work; any error is reported by `fail` (with the source, for a caret). */
export const run = (opts: ApiOptions, work: () => Promise<unknown>, source?: string) =>
  work().then(
    () => undefined,
    (error) => fail(error, opts, source),
  );
