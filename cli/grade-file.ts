// `gradebox grade K --threads in.jsonl` and `gradebox test FILE --threads in.jsonl`: stream a JSONL
// file of threads of any size to the server in chunks (never holding the file in memory), with
// progress on stderr, results in the order of the input's lines, bad lines reported by number
// without stopping the run, and a summary at the end. A line may be a Gradebox thread, an OpenAI
// chat line or a TRL line (sdk/thread-formats.ts); stderr says which formats the file holds.

import { once } from "node:events";
import { createReadStream, createWriteStream } from "node:fs";
import { createInterface } from "node:readline";
import type { WireThread } from "../sdk/thread.ts";
import { FormatTracker, readThreadText } from "../sdk/thread-formats.ts";
import type { GradeResult } from "../sdk/types.ts";
import { cannotWrite, checkReadable, usageError } from "./api.ts";
import { Progress } from "./progress.ts";

/** A graded line, or a line that is not a thread (BAD_LINE, never sent). */
export type LineResult = GradeResult | { error: { code: "BAD_LINE"; message: string } };

export interface Summary {
  count: number;
  scored: number;
  mean: number | null;
  min: number | null;
  max: number | null;
  errors: Record<string, number>;
}

async function countLines(path: string): Promise<number> {
  let n = 0;
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY })) if (line.trim()) n++;
  return n;
}

/** A line of the input waiting for its chunk's request: a thread to send, or why it is not one. */
type Pending = { line: number; thread: WireThread } | { line: number; problem: string };

/** Grades one chunk of threads: one result each, in their order. */
export type SendChunk = (threads: WireThread[]) => Promise<GradeResult[]>;

export interface GradeFileOptions {
  threads: string;
  /** threads per request */
  batch: number;
  quiet: boolean;
  /** the columns of OpenAI and TRL lines that become metadata (default: all but the thread's own) */
  metadataColumns?: string[];
  /** where each result goes (default: one JSON per line to --out, else stdout) */
  out?: string;
  write?: (line: number, result: LineResult) => void;
}

/**
 * Grades the file, writing one result per non-blank line in the input's order (a BAD_LINE record
 * where its line was). A file that cannot be read or written is a usage error (exit 2).
 */
export async function gradeFile(send: SendChunk, opts: GradeFileOptions): Promise<Summary> {
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
      const code = "error" in result ? result.error.code : result.abstained.code;
      summary.errors[code] = (summary.errors[code] ?? 0) + 1;
    }
    if (opts.write) return opts.write(line, result);
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
    const results = threads.length > 0 ? await send(threads) : [];
    let next = 0;
    for (const p of sent) await write(p.line, "thread" in p ? results[next++] : { error: { code: "BAD_LINE", message: p.problem } });
    progress.tick(sent.length);
  };

  const formats = new FormatTracker();
  let lineNo = 0;
  for await (const raw of createInterface({ input: createReadStream(opts.threads), crlfDelay: Number.POSITIVE_INFINITY })) {
    lineNo++;
    if (!raw.trim()) continue;
    const read = readThreadText(raw, { metadataColumns: opts.metadataColumns });
    const said = formats.note(read.format, lineNo);
    if (said) progress.note(said);
    if ("problem" in read) {
      progress.note(`line ${lineNo}: ${read.problem}; skipped`);
      chunk.push({ line: lineNo, problem: read.problem });
    } else chunk.push({ line: lineNo, thread: read.thread });
    if (chunk.length >= opts.batch) await flush();
  }
  await flush();
  progress.done();
  if (out) await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  summary.mean = summary.scored > 0 ? sum / summary.scored : null;
  return summary;
}
