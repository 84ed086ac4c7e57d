// `gradebox grade K --threads in.jsonl`: streams a JSONL file of threads of any size through
// gradeBatch in chunks (never holding the file in memory), with progress on stderr, results
// as JSONL in the order of the input's lines, bad lines reported by number without stopping the
// run, and a summary at the end.

import { once } from "node:events";
import { createReadStream, createWriteStream } from "node:fs";
import { createInterface } from "node:readline";
import type { Gradebox } from "../sdk/client.ts";
import { ROLES, type WireThread } from "../sdk/thread.ts";
import type { GradeResult } from "../sdk/types.ts";
import { cannotWrite, checkReadable, usageError } from "./api.ts";
import { Progress } from "./progress.ts";

/** A graded line, or a line that is not a thread (BAD_LINE, never sent). */
type LineResult = GradeResult | { error: { code: "BAD_LINE"; message: string } };

export interface Summary {
  count: number;
  scored: number;
  mean: number | null;
  min: number | null;
  max: number | null;
  errors: Record<string, number>;
}

/** Why a line is not a thread, or undefined when it is one. */
export function threadProblem(value: unknown): string | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return "not a JSON object";
  const { turns, metadata } = value as { turns?: unknown; metadata?: unknown };
  if (!Array.isArray(turns) || turns.length === 0) return "turns must be a non-empty array";
  for (const [i, t] of turns.entries()) {
    const turn = t as { role?: unknown; content?: unknown } | null;
    if (!turn || !ROLES.includes(turn.role as (typeof ROLES)[number])) return `turns[${i}].role must be one of ${ROLES.join(", ")}`;
    if (typeof turn.content !== "string") return `turns[${i}].content must be a string`;
  }
  if (metadata !== undefined && (metadata === null || typeof metadata !== "object" || Array.isArray(metadata)))
    return "metadata must be an object";
  return undefined;
}

async function countLines(path: string): Promise<number> {
  let n = 0;
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY })) if (line.trim()) n++;
  return n;
}

/** A line of the input waiting for its chunk's request: a thread to send, or why it is not one. */
type Pending = { line: number; thread: WireThread } | { line: number; problem: string };

/**
 * Grades the file, writing one result per non-blank line in the input's order (a BAD_LINE record
 * where its line was). A file that cannot be read or written is a usage error (exit 2).
 */
export async function gradeFile(
  client: Gradebox,
  graderKey: string,
  opts: { threads: string; out?: string; batch: number; quiet: boolean; version?: number },
): Promise<Summary> {
  await checkReadable(opts.threads);
  const out = opts.out ? createWriteStream(opts.out) : undefined;
  if (out) await once(out, "open").catch((error: NodeJS.ErrnoException) => usageError(cannotWrite(opts.out as string, error)));
  const total = await countLines(opts.threads);
  const progress = new Progress(total, opts.quiet);
  const summary: Summary = { count: 0, scored: 0, mean: null, min: null, max: null, errors: {} };
  let sum = 0;
  const write = (line: number, result: LineResult) => {
    summary.count++;
    if ("score" in result) {
      summary.scored++;
      sum += result.score;
      summary.min = summary.min === null ? result.score : Math.min(summary.min, result.score);
      summary.max = summary.max === null ? result.score : Math.max(summary.max, result.score);
    } else {
      summary.errors[result.error.code] = (summary.errors[result.error.code] ?? 0) + 1;
    }
    const text = `${JSON.stringify({ line, ...result })}\n`;
    if (out) {
      if (!out.write(text)) return new Promise<void>((resolve) => out.once("drain", resolve));
    } else process.stdout.write(text);
    return undefined;
  };

  // a chunk holds up to `batch` lines; bad lines wait in it so that every result is written in order
  let chunk: Pending[] = [];
  const flush = async () => {
    if (chunk.length === 0) return;
    const sent = chunk;
    chunk = [];
    const threads = sent.flatMap((p) => ("thread" in p ? [p.thread] : []));
    const { results } =
      threads.length > 0 ? await client.graders.gradeBatch({ graderKey, threads, version: opts.version }) : { results: [] };
    let next = 0;
    for (const p of sent) await write(p.line, "thread" in p ? results[next++] : { error: { code: "BAD_LINE", message: p.problem } });
    progress.tick(sent.length);
  };

  let lineNo = 0;
  for await (const raw of createInterface({ input: createReadStream(opts.threads), crlfDelay: Number.POSITIVE_INFINITY })) {
    lineNo++;
    if (!raw.trim()) continue;
    let value: unknown;
    let problem: string | undefined;
    try {
      value = JSON.parse(raw);
      problem = threadProblem(value);
    } catch (error) {
      problem = `not JSON (${(error as Error).message})`;
    }
    if (problem) {
      progress.note(`line ${lineNo}: ${problem}; skipped`);
      chunk.push({ line: lineNo, problem });
    } else chunk.push({ line: lineNo, thread: value as WireThread });
    if (chunk.length >= opts.batch) await flush();
  }
  await flush();
  progress.done();
  if (out) await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  summary.mean = summary.scored > 0 ? sum / summary.scored : null;
  return summary;
}
