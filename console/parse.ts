// Reading what the user pasted or uploaded: threads, samples, rubric criteria.

import type { WireThread } from "../sdk/thread.ts";
import { FormatTracker, readThreadLine, readThreadText, type ThreadFormat } from "../sdk/thread-formats.ts";

/** One pasted thread: its number (the line of JSONL, the item of an array), and the thread or why it is none. */
export type PastedThread = { n: number; thread: WireThread } | { n: number; problem: string };

/**
 * Pasted threads: a JSON array, one JSON object, or JSONL, each a Gradebox thread, an OpenAI chat
 * line or a TRL line (sdk/thread-formats.ts). A line that is not one is kept with its problem, so
 * the others are still graded; `notes` say which formats were read.
 */
export function parseThreads(text: string): { items: PastedThread[]; notes: string[]; formats: ThreadFormat[] } {
  const trimmed = text.trim();
  if (!trimmed) throw new Error("paste or upload at least one thread");
  const formats = new FormatTracker();
  const notes: string[] = [];
  const seen: ThreadFormat[] = [];
  const take = (n: number, read: ReturnType<typeof readThreadText>): PastedThread => {
    const note = formats.note(read.format, n);
    if (note && read.format) {
      notes.push(note);
      seen.push(read.format);
    }
    return "problem" in read ? { n, problem: read.problem } : { n, thread: read.thread };
  };
  let values: unknown[] | undefined;
  try {
    const whole: unknown = JSON.parse(trimmed);
    values = Array.isArray(whole) ? whole : [whole];
  } catch {
    // JSONL, numbered as the text is, blank lines included
  }
  const items = values
    ? values.map((v, i) => take(i + 1, readThreadLine(v)))
    : text.split("\n").flatMap((l, i) => (l.trim() ? [take(i + 1, readThreadText(l))] : []));
  return { items, notes, formats: seen };
}

/** A JSON array, one JSON object, or JSONL (a bad line is named: "threads line 2 is not JSON"). */
export function parseItems<T>(text: string, noun: string, where = ""): T[] {
  const trimmed = text.trim();
  if (!trimmed) throw new Error(`paste or upload at least one ${noun}`);
  if (trimmed.startsWith("[")) return JSON.parse(trimmed) as T[];
  try {
    return [JSON.parse(trimmed) as T];
  } catch {
    // numbered as the text is, blank lines included
    return text.split("\n").flatMap((l, i) => {
      if (!l.trim()) return [];
      try {
        return [JSON.parse(l) as T];
      } catch {
        throw new Error(`${where}line ${i + 1} is not JSON`);
      }
    });
  }
}
