// Telling the user what happened: the header's status line for notices and page-wide errors,
// and an error where it happened (a panel's box, under a table row, on an editor's line).

import { APIConnectionError, APIError, AuthenticationError, GraderValidationError } from "../sdk/index.ts";
import { $, el, type Highlighted, sourceBlock } from "./dom.ts";

/** whether the header's status line holds a notice (green) rather than a page-wide error */
let statusIsNotice = false;

/** The header's status line: a notice of what just happened, or an error that concerns the whole page. */
export function status(message: string, ok = false): void {
  const line = $("#status");
  line.textContent = message;
  line.style.color = ok ? "#1b7f3b" : "";
  statusIsNotice = ok;
}

/** Errors that are the page's, not one panel's: the server cannot be reached, or the key is refused. */
function pageWide(error: unknown): boolean {
  return (
    error instanceof APIConnectionError ||
    error instanceof AuthenticationError ||
    (error instanceof APIError && error.status >= 500 && error.status !== 502)
  );
}

/**
 * Shows an error where it happened (`show` puts its text under the row or in the box of what failed).
 * A page-wide error also goes in the header; otherwise a stale notice there is cleared.
 */
export function fail(error: unknown, show: (text: string) => void, prefix = "", refused?: Refusable): void {
  const text = `${prefix}${errorText(error, refused)}`;
  show(text);
  if (pageWide(error)) status(text);
  else if (statusIsNotice) status("");
}

/** An error box of a panel: shows `text`, or hides when there is none. */
export function inBox(box: HTMLElement): (text?: string) => void {
  return (text) => {
    box.hidden = !text;
    box.replaceChildren(...(text ? [el("p", text, "error")] : []));
  };
}

/** An error row right under `tr` (one per row), across the table's columns; in `fallback` when the row is gone. */
export function underRow(tr: HTMLTableRowElement | null, fallback: HTMLElement): (text: string) => void {
  return (text) => {
    if (!tr?.isConnected) return inBox(fallback)(text);
    const next = tr.nextElementSibling;
    if (next?.classList.contains("row-error")) next.remove();
    const error = el("tr", "", "row-error");
    if (tr.dataset.key) error.dataset.for = tr.dataset.key;
    const td = el("td", text, "error");
    td.colSpan = tr.children.length;
    error.append(td);
    tr.after(error);
  };
}

/** " (line 2, column 4)" when a problem document says where, else "". */
export function position(body: Record<string, unknown>): string {
  return typeof body.line === "number" ? ` (line ${body.line}, column ${String(body.column ?? "?")})` : "";
}

/** A message with where it happened, unless the message says so already. */
function located(message: string, body: Record<string, unknown>): string {
  const where = position(body);
  return message.endsWith(where) ? message : `${message}${where}`;
}

/** A failed check's message, without where (for the note under the line it is about). */
function checkText(error: GraderValidationError): string {
  const message = String(error.body.message ?? error.message);
  const where = position(error.body);
  return `${error.check} check failed: ${where && message.endsWith(where) ? message.slice(0, -where.length) : message}`;
}

/**
 * What went wrong, in the console's words: the server's hints name HTTP requests ("(PUT …/lock …)")
 * the console makes for the user. `refused`: what the user asked for, which a lock refuses.
 */
export function errorText(error: unknown, refused?: Refusable): string {
  if (error instanceof GraderValidationError) return located(checkText(error), error.body);
  if (error instanceof APIError) {
    const detail = String(error.body.detail ?? error.message);
    if (error.code === "GRADER_LOCKED") return lockedText(refused);
    return `${error.code}: ${located(detail.replace(HTTP_HINT, ""), error.body)}`;
  }
  return (error as Error).message;
}

/** " (PUT …/lock {…})", " (POST /v1/projects/p/models)": a request to make, in a server message */
const HTTP_HINT = / ?\((?:GET|PUT|POST|PATCH|DELETE) [^)]*\)/g;

/** What a lock refuses, as the console asked for it. */
export type Refusable = "delete" | "save";

function lockedText(refused: Refusable | undefined): string {
  if (refused === "delete") return "Locked: unlock it to delete";
  if (refused === "save") return "Locked: unlock it to save a new version";
  return "Locked: unlock it first";
}

/**
 * A refused create or save in its editor's error box: what failed and, when the server says where,
 * the source with that line marked and the message under it, a caret at the column.
 */
export function showError(
  box: HTMLElement,
  error: unknown,
  source?: string,
  language: Highlighted = "typescript",
  refused?: Refusable,
): void {
  fail(error, inBox(box), "", refused);
  if (source === undefined || !(error instanceof GraderValidationError && error.line)) return;
  const pre = sourceBlock(source, error.line, language);
  box.append(pre);
  const note = el("span", "", "error-note");
  note.append(el("span", `${" ".repeat(Math.max(0, (error.column ?? 1) - 1))}^`, "caret"), el("span", checkText(error)));
  pre.querySelector(`[data-line="${error.line}"]`)?.after(note);
}
