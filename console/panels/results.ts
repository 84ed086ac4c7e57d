// The test panel's result rows: a score with a judge's verdict, token usage and subscores, or an
// error with the source line it points at.

import type { GradeScore, SubScore } from "../../sdk/index.ts";
import { el, numberCell, row, table } from "../dom.ts";

/** The row under a failed thread's row: the source line where the grader threw, a caret under the column. */
export function sourceRow(source: string, line: number, column: number): HTMLTableRowElement {
  const tr = document.createElement("tr");
  tr.className = "error-source";
  tr.dataset.line = String(line);
  tr.append(document.createElement("td"));
  const td = document.createElement("td");
  td.colSpan = 2;
  const pre = document.createElement("pre");
  const text = source.split("\n")[line - 1] ?? "";
  const gutter = `${line} | `;
  pre.textContent = `${gutter}${text}\n${" ".repeat(gutter.length - 2)}| ${" ".repeat(Math.max(0, column - 1))}^`;
  td.append(pre);
  tr.append(td);
  return tr;
}

/**
 * An abstention's row: no score (a dash, never 0), then its code as a badge and the reason. The
 * row's class says so for the styles and the tests.
 */
export function abstainedRow(i: number, abstained: { code: string; reason: string }): HTMLTableRowElement {
  const tr = row([String(i + 1)]);
  tr.className = "abstained";
  tr.dataset.code = abstained.code;
  const score = el("td", "–", "no-score");
  score.title = "no score: abstained";
  const td = el("td");
  td.append(el("span", "abstained", "abstain-badge"), " ", el("code", abstained.code), `: ${abstained.reason}`);
  tr.append(score, td);
  return tr;
}

/** A judge's verdict as a badge: PASS, MET, SUPPORTED, RELEVANT, or their opposites. */
function verdictBadge(verdict: string): HTMLSpanElement {
  return el("span", verdict, `verdict ${verdict.toLowerCase().replace(/[^a-z]+/g, "-")}`);
}

/** A score's row: its score, then a judge's verdict before the reason, its token usage, and a table of its subscores. */
export function scoreRow(i: number, r: GradeScore): HTMLTableRowElement {
  const tr = row([String(i + 1)]);
  tr.append(numberCell(r.score));
  const td = el("td");
  const verdict = r.metadata?.verdict;
  if (typeof verdict === "string") td.append(verdictBadge(verdict), " ");
  td.append(r.reason ?? "");
  const usage = r.metadata?.usage as { totalTokens?: number } | undefined;
  if (typeof usage?.totalTokens === "number") td.append(el("span", ` · ${usage.totalTokens} tokens`, "usage"));
  if (Array.isArray(r.subscores) && r.subscores.length) td.append(subscoreTable(r.subscores));
  tr.append(td);
  return tr;
}

/** Subscores, one row each (a combineAny/combineAll's inputs indented under it): name, score, weight, and what was said. */
function subscoreTable(subscores: readonly SubScore[]): HTMLTableElement {
  const rows = (s: SubScore, depth: number): HTMLTableRowElement[] => {
    // the server passes a function grader's subscores through as they were returned (value: score's old name)
    if (typeof s !== "object" || s === null) return [row([JSON.stringify(s), "", "", ""])];
    const tr = el("tr");
    const name = el("td", String(s.name ?? ""));
    if (depth) {
      tr.className = "child";
      name.style.paddingLeft = `${0.4 + depth}rem`;
    }
    const reason = el("td");
    const { verdict, claim, chunk, reason: said } = s.metadata ?? {};
    if (typeof verdict === "string") reason.append(verdictBadge(verdict), " ");
    const quoted = claim ?? chunk;
    if (typeof quoted === "string" && quoted) reason.append(el("q", quoted), typeof said === "string" && said ? " — " : "");
    if (typeof said === "string") reason.append(said);
    tr.append(name, numberCell(s.score ?? s.value), s.weight === undefined ? el("td") : numberCell(s.weight), reason);
    return [tr, ...(Array.isArray(s.children) ? s.children.flatMap((c) => rows(c, depth + 1)) : [])];
  };
  return table(
    "subscores",
    ["name", "score", "weight", "reason"],
    subscores.flatMap((s) => rows(s, 0)),
  );
}
