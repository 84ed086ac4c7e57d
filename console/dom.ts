// DOM helpers: finding elements, building them from text (never HTML), tables and highlighted source.

import hljs from "highlight.js/lib/core";
import diff from "highlight.js/lib/languages/diff";
import handlebars from "highlight.js/lib/languages/handlebars";
import python from "highlight.js/lib/languages/python";
import typescript from "highlight.js/lib/languages/typescript";

hljs.registerLanguage("typescript", typescript);
hljs.registerLanguage("python", python);
hljs.registerLanguage("handlebars", handlebars);
hljs.registerLanguage("diff", diff);

/** What the console highlights: a function grader's language, or a judge's template. */
export type Highlighted = "typescript" | "python" | "handlebars";

export const $ = <T extends HTMLElement = HTMLElement>(sel: string) => document.querySelector(sel) as T;
/** The value of an input, textarea or select. */
export const val = (sel: string) => $<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>(sel).value;

/** An element showing `text` as text (never as HTML): how everything the server says reaches the page. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, text = "", className = ""): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  element.textContent = text;
  if (className) element.className = className;
  return element;
}

/** A table row of text cells. */
export function row(cells: readonly string[]): HTMLTableRowElement {
  const tr = document.createElement("tr");
  tr.append(...cells.map((text) => el("td", text)));
  return tr;
}

/** The row of `key` in a table whose rows carry data-key (or data-version). */
export function rowOf(table: string, key: string, attribute = "key"): HTMLTableRowElement | null {
  return document.querySelector<HTMLTableRowElement>(`${table} > tbody > tr[data-${attribute}="${CSS.escape(key)}"]`);
}

/** A table with a header row of `headings` and the body rows given. */
export function table(className: string, headings: readonly string[], rows: readonly HTMLTableRowElement[]): HTMLTableElement {
  const head = el("tr");
  head.append(...headings.map((h) => el("th", h)));
  const thead = el("thead");
  thead.append(head);
  const tbody = el("tbody");
  tbody.append(...rows);
  const t = el("table", "", className);
  t.append(thead, tbody);
  return t;
}

/** A definition list of term and value pairs (values as text or elements). */
export function definitions(target: HTMLElement, rows: Array<[string, string | HTMLElement]>): void {
  target.replaceChildren(
    ...rows.flatMap(([term, value]) => {
      const dd = el("dd");
      dd.append(value);
      return [el("dt", term), dd];
    }),
  );
}

/** A timestamp to the second, as the tables show it. */
export const when = (iso: string) => iso.slice(0, 19).replace("T", " ");

/** A number as the tables show it: at most 3 decimals (the cell's title has it in full). */
export function number(x: unknown): string {
  return typeof x === "number" ? String(Math.round(x * 1000) / 1000) : String(x ?? "");
}

/** A cell holding a rounded number, in full in its title. */
export function numberCell(x: unknown): HTMLTableCellElement {
  const td = el("td", number(x));
  td.title = String(x ?? "");
  return td;
}

/** Highlighted source (hljs escapes it), one span per line so a failing line can be marked. */
export function renderSource(target: HTMLElement, source: string, errorLine?: number, language: Highlighted = "typescript"): void {
  const html = hljs.highlight(source, { language }).value;
  // the class says what the block holds (styles and tests read it), as hljs's own would
  target.className = `hljs language-${language}`;
  target.innerHTML = highlightedLines(html)
    .map((line, i) => `<span class="line${i + 1 === errorLine ? " error-line" : ""}" data-line="${i + 1}">${line}</span>`)
    .join("");
}

/** hljs's HTML cut into lines, each closing the spans still open at its end and the next
 * reopening them: a token over several lines (a docstring, a template literal, a block comment)
 * would otherwise nest the lines after it inside the first one's span. hljs emits only
 * `<span class="…">` and `</span>`, its text escaped. */
export function highlightedLines(html: string): string[] {
  let open: string[] = [];
  return html.split("\n").map((text) => {
    const line = open.join("") + text;
    open = [...open];
    for (const [tag] of text.matchAll(/<span[^>]*>|<\/span>/g)) {
      if (tag === "</span>") open.pop();
      else open.push(tag);
    }
    return line + "</span>".repeat(open.length);
  });
}

/** A unified diff, highlighted: added lines green (hljs-addition), removed ones red (hljs-deletion). */
export function renderDiff(target: HTMLElement, patch: string): void {
  const code = el("code", "", "hljs language-diff");
  code.innerHTML = hljs.highlight(patch, { language: "diff" }).value;
  target.replaceChildren(code);
}

/** Highlighted source in a block of its own: `<pre><code class="hljs">`. */
export function sourceBlock(source: string, errorLine?: number, language: Highlighted = "typescript"): HTMLPreElement {
  const pre = el("pre");
  const code = el("code", "", "hljs");
  pre.append(code);
  renderSource(code, source, errorLine, language);
  return pre;
}

/** The right-hand panels, one shown at a time: a grader, the grader editor, the judge editor or the endpoint form. */
export type Panel = "detail" | "create" | "judge-create" | "endpoint-create" | "code-create";

export function showPanel(id: Panel): void {
  for (const panel of ["detail", "create", "judge-create", "endpoint-create", "code-create"]) $(`#${panel}`).hidden = panel !== id;
}
