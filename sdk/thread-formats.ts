// The thread formats people already have, read line by line into Gradebox threads: Gradebox's own
// ({turns, metadata?}), OpenAI chat lines ({messages, …}) and TRL's prompt-completion lines,
// standard ({prompt: "…", completion: "…"}) and conversational (lists of {role, content}). A line's
// other columns become the thread's metadata. Used by `gradebox grade --threads` and `test
// --threads` and by the console's test panel, so it runs in a browser too.

import { isRole, ROLE_RULE, type Role, type WireThread } from "./thread.ts";

export const THREAD_FORMATS = ["gradebox", "openai", "trl-standard", "trl-conversational"] as const;
export type ThreadFormat = (typeof THREAD_FORMATS)[number];

/** How a format is named where a command or the console says which one it reads: "reading OpenAI chat lines". */
export const FORMAT_NAMES: Record<ThreadFormat, string> = {
  gradebox: "Gradebox threads",
  openai: "OpenAI chat lines",
  "trl-standard": "TRL standard lines",
  "trl-conversational": "TRL conversational lines",
};

export const ACCEPTED_FORMATS =
  'a Gradebox thread {"turns": [{"role", "content"}], "metadata"?}, an OpenAI chat line {"messages": [{"role", "content"}], …}, ' +
  'or a TRL line {"prompt", "completion", …}: strings (standard) or lists of {"role", "content"} (conversational)';

/**
 * Roles of OpenAI's chat format that these file readers name as Gradebox does (a file is converted
 * to Gradebox's vocabulary; the API and the reward routes keep every role as it is sent).
 */
const ROLE_ALIASES: Record<string, Role> = { developer: "system", function: "tool" };

export type ReadLine = { format: ThreadFormat; thread: WireThread } | { format?: ThreadFormat; problem: string };

export interface ReadOptions {
  /** the columns that become metadata (OpenAI and TRL lines); absent: every column but the thread's own */
  metadataColumns?: string[];
}

/** Why a Gradebox thread is not one, or undefined when it is one. */
export function threadProblem(value: unknown): string | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return "not a JSON object";
  const { turns, metadata } = value as { turns?: unknown; metadata?: unknown };
  if (!Array.isArray(turns) || turns.length === 0) return "turns must be a non-empty array";
  for (const [i, t] of turns.entries()) {
    const turn = t as { role?: unknown; content?: unknown } | null;
    if (!turn || !isRole(turn.role)) return `turns[${i}].role is ${JSON.stringify(turn?.role)}: ${ROLE_RULE}`;
    if (typeof turn.content !== "string") return `turns[${i}].content must be a string`;
  }
  if (metadata !== undefined && (metadata === null || typeof metadata !== "object" || Array.isArray(metadata)))
    return "metadata must be an object";
  return undefined;
}

/**
 * A chat message's content as one string: a string as it is, OpenAI's list of content parts as
 * their text parts joined by line breaks (images and audio are not graded), null (an assistant
 * message that only calls tools) as "".
 */
function contentText(content: unknown): string | undefined {
  if (typeof content === "string") return content;
  if (content === null) return "";
  if (!Array.isArray(content)) return undefined;
  const texts: string[] = [];
  for (const part of content) {
    if (!part || typeof part !== "object") return undefined;
    const { type, text } = part as { type?: unknown; text?: unknown };
    if (typeof text === "string" && (type === "text" || type === "input_text" || type === "output_text")) texts.push(text);
  }
  return texts.join("\n");
}

/** A list of chat messages as turns, or why it is not one (`field` names it in the message). */
function messagesToTurns(messages: unknown, field: string): WireThread["turns"] | string {
  if (!Array.isArray(messages) || messages.length === 0) return `${field} must be a non-empty list of {"role", "content"}`;
  const turns: WireThread["turns"] = [];
  for (const [i, m] of messages.entries()) {
    const message = m as { role?: unknown; content?: unknown } | null;
    if (!message || typeof message !== "object") return `${field}[${i}] must be an object {"role", "content"}`;
    const role = Object.hasOwn(ROLE_ALIASES, message.role as string) ? ROLE_ALIASES[message.role as string] : message.role;
    if (!isRole(role)) {
      return `${field}[${i}].role is ${JSON.stringify(message.role)}: ${ROLE_RULE} (developer is read as system, function as tool)`;
    }
    const content = contentText(message.content);
    if (content === undefined) return `${field}[${i}].content must be a string or a list of content parts`;
    turns.push({ role, content });
  }
  return turns;
}

function metadataOf(line: Record<string, unknown>, own: string[], opts: ReadOptions): Record<string, unknown> {
  const columns = opts.metadataColumns ?? Object.keys(line).filter((k) => !own.includes(k));
  return Object.fromEntries(columns.filter((c) => Object.hasOwn(line, c)).map((c) => [c, line[c]]));
}

/** One parsed JSON line as a thread, in whichever accepted format it is, or why it is none. */
export function readThreadLine(value: unknown, opts: ReadOptions = {}): ReadLine {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return { problem: `not a JSON object; a line must be ${ACCEPTED_FORMATS}` };
  const line = value as Record<string, unknown>;
  if ("turns" in line) {
    const problem = threadProblem(line);
    return problem ? { format: "gradebox", problem } : { format: "gradebox", thread: line as unknown as WireThread };
  }
  if ("messages" in line) {
    const turns = messagesToTurns(line.messages, "messages");
    if (typeof turns === "string") return { format: "openai", problem: turns };
    return { format: "openai", thread: { turns, metadata: metadataOf(line, ["messages"], opts) } };
  }
  if ("prompt" in line || "completion" in line) {
    const { prompt, completion } = line;
    if (!("prompt" in line) || !("completion" in line)) {
      return {
        problem: `a TRL line needs both "prompt" and "completion" (a prompt alone has nothing to grade); a line must be ${ACCEPTED_FORMATS}`,
      };
    }
    const metadata = metadataOf(line, ["prompt", "completion"], opts);
    if (typeof prompt === "string" && typeof completion === "string") {
      const turns: WireThread["turns"] = [
        { role: "user", content: prompt },
        { role: "assistant", content: completion },
      ];
      return { format: "trl-standard", thread: { turns, metadata } };
    }
    if (Array.isArray(prompt) && Array.isArray(completion)) {
      const before = messagesToTurns(prompt, "prompt");
      if (typeof before === "string") return { format: "trl-conversational", problem: before };
      const after = messagesToTurns(completion, "completion");
      if (typeof after === "string") return { format: "trl-conversational", problem: after };
      return { format: "trl-conversational", thread: { turns: [...before, ...after], metadata } };
    }
    return {
      problem:
        'a TRL line\'s "prompt" and "completion" must both be strings (standard) or both lists of {"role", "content"} (conversational)',
    };
  }
  return { problem: `no "turns", "messages" or "prompt" and "completion": a line must be ${ACCEPTED_FORMATS}` };
}

/** One line of text as a thread: JSON in an accepted format. */
export function readThreadText(text: string, opts: ReadOptions = {}): ReadLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: `not JSON (${(error as Error).message})` };
  }
  return readThreadLine(value, opts);
}

/**
 * Says which formats a file's lines are in, as they are read: "reading OpenAI chat lines" at the
 * first line in a format, and a note at the first line of each other format.
 */
export class FormatTracker {
  private readonly seen = new Set<ThreadFormat>();
  /** A message when `format` is new to this file (line `line`), else undefined. */
  note(format: ThreadFormat | undefined, line: number): string | undefined {
    if (!format || this.seen.has(format)) return undefined;
    this.seen.add(format);
    return this.seen.size === 1 ? `reading ${FORMAT_NAMES[format]}` : `line ${line}: reading ${FORMAT_NAMES[format]} too`;
  }
}
