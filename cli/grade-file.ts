// `gradebox grade K --threads in.jsonl` and `gradebox test FILE --threads in.jsonl`: stream a JSONL
// file of threads of any size to the server in chunks (never holding the file in memory), with
// progress on stderr, results in the order of the input's lines, bad lines reported by number
// without stopping the run, and a summary at the end (sdk/summary.ts, computed here from the
// results). A line may be a Gradebox thread, an OpenAI chat line or a TRL line
// (sdk/thread-formats.ts); stderr says which formats the file holds. With a group field, a
// group's lines must be next to each other: a request is cut only between groups. `-` reads the
// threads from stdin, spooled to a temporary file first (the file is read twice: counted, then sent).

import { once } from "node:events";
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pipeline } from "node:stream/promises";
import { type Outcomeish, summarize, textHistogram } from "../sdk/summary.ts";
import type { WireThread } from "../sdk/thread.ts";
import { FormatTracker, type ReadLine, readThreadText } from "../sdk/thread-formats.ts";
import type { BatchSummary, GradeResult } from "../sdk/types.ts";
import { cannotWrite, checkReadable, usageError } from "./api.ts";
import { Progress } from "./progress.ts";

/** A graded line, or a line that is not a thread (BAD_LINE, never sent). */
export type LineResult = GradeResult | { outcome: "error"; error: { code: "BAD_LINE"; message: string } };

/** The run's summary: the batch summary of every line's result, and the errors and abstentions by code. */
export interface Summary extends BatchSummary {
  errors: Record<string, number>;
  abstentions: Record<string, number>;
}

/** The equality key of a line's group (JSON, so 1 and "1" differ); undefined: a group of its own (no field, null, a bad line). */
function groupKey(read: ReadLine, field: string | undefined): string | undefined {
  if (field === undefined || !("thread" in read)) return undefined;
  const metadata = read.thread.metadata;
  const value = metadata && Object.hasOwn(metadata, field) ? metadata[field] : undefined;
  return value === undefined || value === null ? undefined : JSON.stringify(value);
}

const lines = (path: string) => createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY });

/**
 * The file's non-blank lines; with a group field, also checks that each group's lines are next
 * to each other (a request never holds part of a group), before anything is sent.
 */
async function countLines(path: string, groupBy: string | undefined, metadataColumns: string[] | undefined): Promise<number> {
  let n = 0;
  let lineNo = 0;
  let current: string | undefined;
  /** each group seen, and the line it started at */
  const started = new Map<string, number>();
  for await (const line of lines(path)) {
    lineNo++;
    if (!line.trim()) continue;
    n++;
    if (groupBy === undefined) continue;
    const key = groupKey(readThreadText(line, { metadataColumns }), groupBy);
    if (key === undefined || key === current) {
      current = key;
      continue;
    }
    const first = started.get(key);
    if (first !== undefined) {
      usageError(
        `--group-by ${groupBy}: line ${lineNo} is in the group ${groupBy}=${key} that began at line ${first} and was interrupted: ` +
          `a group's lines must be next to each other (sort the file by ${groupBy})`,
      );
    }
    started.set(key, lineNo);
    current = key;
  }
  return n;
}

/** A line's result as the summary needs it, without its reason, metadata or message. */
const compact = (result: LineResult): Outcomeish =>
  "score" in result ? { score: result.score } : "abstained" in result ? { abstained: true } : { error: true };

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
  /** the metadata field that groups threads: a request is cut only between groups, and the summary has group statistics */
  groupBy?: string;
  /** where each result goes (default: one JSON per line to --out, else stdout) */
  out?: string;
  write?: (line: number, result: LineResult) => void;
}

/**
 * Grades the file, writing one result per non-blank line in the input's order (a BAD_LINE record
 * where its line was). A file that cannot be read or written is a usage error (exit 2).
 */
export async function gradeFile(send: SendChunk, opts: GradeFileOptions): Promise<Summary> {
  if (opts.threads !== "-") return gradePath(send, opts);
  const dir = mkdtempSync(join(tmpdir(), "gradebox-stdin-"));
  try {
    const spooled = join(dir, "threads.jsonl");
    await pipeline(process.stdin, createWriteStream(spooled));
    return await gradePath(send, { ...opts, threads: spooled });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function gradePath(send: SendChunk, opts: GradeFileOptions): Promise<Summary> {
  await checkReadable(opts.threads);
  const out = opts.out ? createWriteStream(opts.out) : undefined;
  if (out) await once(out, "open").catch((error: NodeJS.ErrnoException) => usageError(cannotWrite(opts.out as string, error)));
  const total = await countLines(opts.threads, opts.groupBy, opts.metadataColumns);
  const progress = new Progress(total, opts.quiet);
  const seen: Outcomeish[] = [];
  const errors: Record<string, number> = {};
  const abstentions: Record<string, number> = {};
  const write = (line: number, result: LineResult) => {
    seen.push(compact(result));
    if ("error" in result) errors[result.error.code] = (errors[result.error.code] ?? 0) + 1;
    else if ("abstained" in result) abstentions[result.abstained.code] = (abstentions[result.abstained.code] ?? 0) + 1;
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
    for (const p of sent)
      await write(p.line, "thread" in p ? results[next++] : { outcome: "error", error: { code: "BAD_LINE", message: p.problem } });
    progress.tick(sent.length);
  };

  const formats = new FormatTracker();
  /** each line's group index, for the summary (with a group field) */
  const groups: number[] = [];
  let group = -1;
  let lastKey: string | undefined;
  let lineNo = 0;
  for await (const raw of lines(opts.threads)) {
    lineNo++;
    if (!raw.trim()) continue;
    const read = readThreadText(raw, { metadataColumns: opts.metadataColumns });
    const said = formats.note(read.format, lineNo);
    if (said) progress.note(said);
    const key = groupKey(read, opts.groupBy);
    const newGroup = key === undefined || key !== lastKey;
    lastKey = key;
    // a full chunk is sent where a group ends, so a group grows a chunk past --batch rather than being cut
    if (chunk.length >= opts.batch && newGroup) await flush();
    if (newGroup) group++;
    groups.push(group);
    if ("problem" in read) {
      progress.note(`line ${lineNo}: ${read.problem}; skipped`);
      chunk.push({ line: lineNo, problem: read.problem });
    } else chunk.push({ line: lineNo, thread: read.thread });
  }
  await flush();
  progress.done();
  if (out) await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  return { ...summarize(seen, opts.groupBy === undefined ? {} : { groups }), errors, abstentions };
}

const counts = (byCode: Record<string, number>) =>
  Object.entries(byCode)
    .map(([code, n]) => `${code} ${n}`)
    .join(", ");
/** At most 4 significant digits, no trailing zeros. */
const short = (x: number) => String(Number(x.toPrecision(4)));

/**
 * The run's summary as a person reads it: counts by outcome, mean ± standard error, min, max and
 * median, the codes of the errors and abstentions, the group statistics, and a text histogram.
 */
export function summaryText(s: Summary): string {
  const { scored, error, abstained } = s.outcomes;
  const out = [`graded ${s.count}: ${scored} scored, ${error} ${error === 1 ? "error" : "errors"}, ${abstained} abstained`];
  if (s.mean !== null) {
    const sem = s.sem === null ? "" : ` ± ${s.sem.toFixed(4)} (sem)`;
    out.push(
      `  mean ${s.mean.toFixed(4)}${sem}, min ${short(s.min as number)}, max ${short(s.max as number)}, p50 ${short(s.quantiles?.p50 as number)}`,
    );
  }
  if (error > 0) out.push(`  errors: ${counts(s.errors)}`);
  if (abstained > 0) out.push(`  abstained: ${counts(s.abstentions)}`);
  const g = s.groups;
  if (g) {
    const means =
      g.meanOfBest === null ? "no scores" : `mean of best ${short(g.meanOfBest)}, mean of means ${short(g.meanOfMeans as number)}`;
    out.push(`  groups ${g.groups} (largest ${g.k}): ${means}`);
  }
  if (s.histogram) out.push("scores:", textHistogram(s.histogram, 40).replace(/^/gm, "  "));
  return out.join("\n");
}
