// The web console: the SDK in the browser. The API key lives in sessionStorage only.

import { createTwoFilesPatch } from "diff";
import hljs from "highlight.js/lib/core";
import handlebars from "highlight.js/lib/languages/handlebars";
import typescript from "highlight.js/lib/languages/typescript";
import {
  APIConnectionError,
  APIError,
  AuthenticationError,
  type CannotAssessStrategy,
  type EndpointDefinition,
  Gradebox,
  type GradeResult,
  type Grader,
  GraderValidationError,
  type GraderWithSource,
  type GradeScore,
  type JudgeDefinition,
  type Model,
  type PrebuiltJudgeType,
  type RubricCriterionInput,
  type Sample,
  type SubScore,
  type UpdateResult,
  type WireThread,
} from "../sdk/index.ts";

hljs.registerLanguage("typescript", typescript);
hljs.registerLanguage("handlebars", handlebars);

const $ = <T extends HTMLElement = HTMLElement>(sel: string) => document.querySelector(sel) as T;
/** The value of an input, textarea or select. */
const val = (sel: string) => $<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>(sel).value;
const KEY = "gradebox.apiKey";
let client: Gradebox | undefined;
let selected: string | undefined;
/** whether the header's status line holds a notice (green) rather than a page-wide error */
let statusIsNotice = false;

/** The header's status line: a notice of what just happened, or an error that concerns the whole page. */
function status(message: string, ok = false): void {
  const el = $("#status");
  el.textContent = message;
  el.style.color = ok ? "#1b7f3b" : "";
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
function fail(error: unknown, show: (text: string) => void, prefix = "", refused?: Refusable): void {
  const text = `${prefix}${errorText(error, refused)}`;
  show(text);
  if (pageWide(error)) status(text);
  else if (statusIsNotice) status("");
}

/** An error box of a panel: shows `text`, or hides when there is none. */
function inBox(box: HTMLElement): (text?: string) => void {
  return (text) => {
    box.hidden = !text;
    box.replaceChildren(...(text ? [el("p", text, "error")] : []));
  };
}

/** An error row right under `tr` (one per row), across the table's columns; in `fallback` when the row is gone. */
function underRow(tr: HTMLTableRowElement | null, fallback: HTMLElement): (text: string) => void {
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

/** The row of `key` in a table whose rows carry data-key (or data-version). */
function rowOf(table: string, key: string, attribute = "key"): HTMLTableRowElement | null {
  return document.querySelector<HTMLTableRowElement>(`${table} > tbody > tr[data-${attribute}="${CSS.escape(key)}"]`);
}

/** An element showing `text` as text (never as HTML): how everything the server says reaches the page. */
function el<K extends keyof HTMLElementTagNameMap>(tag: K, text = "", className = ""): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  element.textContent = text;
  if (className) element.className = className;
  return element;
}

/** A table row of text cells. */
function row(cells: readonly string[]): HTMLTableRowElement {
  const tr = document.createElement("tr");
  tr.append(...cells.map((text) => el("td", text)));
  return tr;
}

/** A timestamp to the second, as the tables show it. */
const when = (iso: string) => iso.slice(0, 19).replace("T", " ");

/** " (line 2, column 4)" when a problem document says where, else "". */
function position(body: Record<string, unknown>): string {
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
function errorText(error: unknown, refused?: Refusable): string {
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
type Refusable = "delete" | "save";

function lockedText(refused: Refusable | undefined): string {
  if (refused === "delete") return "Locked: unlock it to delete";
  if (refused === "save") return "Locked: unlock it to save a new version";
  return "Locked: unlock it first";
}

/** Highlighted source (hljs escapes it), one span per line so a failing line can be marked. */
function renderSource(target: HTMLElement, source: string, errorLine?: number, language = "typescript"): void {
  const html = hljs.highlight(source, { language }).value;
  target.innerHTML = html
    .split("\n")
    .map((line, i) => `<span class="line${i + 1 === errorLine ? " error-line" : ""}" data-line="${i + 1}">${line}</span>`)
    .join("");
}

async function connect(key: string): Promise<void> {
  const res = await fetch("/v1/me", { headers: { authorization: `Bearer ${key}` } }).catch((error: Error) => {
    throw new Error(`cannot reach Gradebox at ${location.origin}: ${error.message}`);
  });
  if (!res.ok) throw new Error(res.status === 401 ? "that API key is not valid or has been revoked" : `the server answered ${res.status}`);
  const { project } = (await res.json()) as { project: string };
  client = new Gradebox({ baseURL: location.origin, apiKey: key, project, maxRetries: 0 });
  sessionStorage.setItem(KEY, key);
  $("#who").textContent = `project ${project}`;
  $("main").hidden = false;
  status("");
  await Promise.all([refresh(), refreshModels()]);
}

async function refresh(): Promise<void> {
  if (!client) return;
  const graders = await client.graders.list();
  const body = $("#graders tbody");
  body.replaceChildren(
    ...graders.map((g: Grader) => {
      const tr = row([g.key, g.kind, g.description, g.locked ? "locked" : "", String(g.warnings.length), when(g.createdAt)]);
      tr.dataset.key = g.key;
      if (g.key === selected) tr.className = "selected";
      tr.addEventListener("click", () => open(g.key).catch((error) => fail(error, underRow(rowOf("#graders", g.key), $("#detail-error")))));
      return tr;
    }),
  );
}

/** The judge models: the table (each with Delete) and the model picker of New judge. */
async function refreshModels(): Promise<void> {
  if (!client) return;
  const models = await client.models.list();
  $("#models tbody").replaceChildren(...models.map(modelRow));
  const picker = $<HTMLSelectElement>("#judge-model");
  const current = picker.value;
  picker.replaceChildren(
    ...models.map((m) => {
      const option = el("option", m.key);
      option.value = m.key;
      option.selected = m.key === current;
      return option;
    }),
  );
}

function modelRow(m: Model): HTMLTableRowElement {
  const tr = row([m.key, m.model, m.baseURL, String(m.maxConcurrency)]);
  // where the key sent to baseURL comes from, under it (a column of its own would not fit a narrow window)
  const apiKey = m.apiKeySecret ? `key from secret ${m.apiKeySecret}` : m.apiKeyEnv ? `key from ${m.apiKeyEnv}` : "";
  if (apiKey) tr.cells[2]?.append(el("div", apiKey, "key-source"));
  tr.dataset.key = m.key;
  const td = el("td");
  const button = el("button", "Delete");
  button.type = "button";
  button.addEventListener("click", () => void deleteModel(m.key));
  td.append(button);
  tr.append(td);
  return tr;
}

async function createModel(): Promise<void> {
  if (!client) return;
  try {
    const concurrency = val("#model-concurrency").trim();
    const m = await client.models.create({
      key: val("#model-key").trim(),
      baseURL: val("#model-base-url").trim(),
      model: val("#model-name").trim(),
      maxConcurrency: concurrency ? Number(concurrency) : undefined,
    });
    $<HTMLFormElement>("#model-form").reset();
    inBox($("#model-error"))();
    status(`added model ${m.key}`, true);
    await refreshModels();
  } catch (error) {
    fail(error, inBox($("#model-error")), "cannot add the model: ");
  }
}

async function deleteModel(key: string): Promise<void> {
  if (!client || !confirm(`Delete model "${key}"?`)) return;
  try {
    await client.models.delete({ modelKey: key });
    status(`deleted model ${key}`, true);
    await refreshModels();
  } catch (error) {
    fail(error, underRow(rowOf("#models", key), $("#model-error")));
  }
}

/** Shows one of the right-hand panels: a grader, the grader editor, the judge editor or the endpoint form. */
function showPanel(id: "detail" | "create" | "judge-create" | "endpoint-create"): void {
  for (const panel of ["detail", "create", "judge-create", "endpoint-create"]) $(`#${panel}`).hidden = panel !== id;
}

async function open(key: string): Promise<void> {
  if (!client) return;
  selected = key;
  const g = await client.graders.get({ graderKey: key });
  showPanel("detail");
  $("#detail-key").textContent = g.key;
  $("#detail-meta").textContent =
    `${g.kind} · version ${g.version}${g.locked ? " · locked" : ""}${g.quarantinedAt ? " · quarantined" : ""} · ${g.description || "no description"}`;
  $("#detail-warnings").replaceChildren(
    ...g.warnings.map((w) => {
      const li = document.createElement("li");
      li.textContent = w;
      return li;
    }),
  );
  $("#lock").textContent = g.locked ? "Unlock" : "Lock";
  $("#lock").dataset.locked = String(g.locked);
  $("#lock").title = g.locked ? "Unlock: allow new versions and delete" : "Lock: refuse new versions and delete";
  // a locked grader refuses delete and new versions: the buttons say so before they are clicked
  for (const [id, what] of [
    ["#delete", "delete"],
    ["#edit", "edit"],
  ] as const) {
    $<HTMLButtonElement>(id).disabled = g.locked;
    $(id).title = g.locked ? `Locked: unlock it to ${what}` : "";
  }
  $("#lock-reason").hidden = !g.locked;
  $("#lock-reason").textContent = `Locked: unlock it to delete${g.kind === "function" ? " or edit" : ""}`;
  inBox($("#detail-error"))();
  inBox($("#diff-error"))();
  const source =
    g.source ?? (g.parts ?? []).map((p) => `// part ${p.name}: ${p.graderKey}${p.pinned ? `@${p.version}` : ""} × ${p.weight}`).join("\n");
  $("#source-block").hidden = !!(g.judge || g.endpoint);
  $("#judge-def").hidden = !g.judge;
  $("#endpoint-def").hidden = !g.endpoint;
  if (g.judge) renderJudge(g.judge);
  else if (g.endpoint) renderEndpoint(g.endpoint);
  else renderSource($("#source"), source);
  $("#show-prompt").hidden = !g.judge;
  $("#prompt").replaceChildren();
  $("#edit").hidden = g.kind !== "function";
  $("#versions-panel").hidden = g.kind !== "function";
  $("#diff").textContent = "";
  if (g.kind === "function") await showVersions(g.key, g.version, g.locked);
  await refresh();
}

/** A definition list of term and value pairs (values as text or elements). */
function definitions(target: HTMLElement, rows: Array<[string, string | HTMLElement]>): void {
  target.replaceChildren(
    ...rows.flatMap(([term, value]) => {
      const dd = el("dd");
      dd.append(value);
      return [el("dt", term), dd];
    }),
  );
}

/** Where an endpoint is and how it is called, what its /info said, and its metadata schema when it has one. */
function renderEndpoint(e: EndpointDefinition): void {
  const rows: Array<[string, string | HTMLElement]> = [
    ["url", e.url],
    ["info", `${e.info.name} ${e.info.version}${e.info.description ? ` — ${e.info.description}` : ""}`],
    ["batch", e.batch ? `${e.batchSize} threads per /batch_score call` : "off: /score per thread"],
    ["max concurrency", String(e.maxConcurrency)],
    ["timeout", `${e.timeoutMs} ms`],
  ];
  const headers = [
    ...Object.entries(e.headersSecret ?? {}).map(([name, secret]) => `${name} from secret ${secret}`),
    ...Object.entries(e.headersEnv ?? {}).map(([name, env]) => `${name} from ${env}`),
  ];
  if (headers.length) rows.push(["headers", headers.join(", ")]);
  rows.push(["metadata schema", e.metadataSchema === undefined ? "none" : el("pre", JSON.stringify(e.metadataSchema, null, 2))]);
  definitions($("#endpoint-def"), rows);
}

/** What a judge asks of which model: its criteria, template or rubric. */
function renderJudge(judge: JudgeDefinition): void {
  const rows: Array<[string, string | HTMLElement]> = [
    ["model", judge.model],
    ["type", judge.type],
  ];
  if (judge.type === "prebuilt") rows.push(["metric", judge.metric]);
  if (judge.type === "binary") {
    rows.push(
      ["criteria", el("pre", judge.criteria)],
      ["template", judge.template === undefined ? "the built-in one" : template(judge.template)],
    );
    if (judge.templateVariables) rows.push(["template variables", el("pre", JSON.stringify(judge.templateVariables, null, 2))]);
  }
  if (judge.type === "rubric") {
    const credit = judge.cannotAssess === "partial" ? ` (credit ${judge.partialCredit})` : "";
    rows.push(["criteria", rubricTable(judge.criteria)], ["cannot assess", `${judge.cannotAssess}${credit}`]);
  }
  definitions($("#judge-def"), rows);
}

/** A Handlebars template, highlighted, with its failing line marked when there is one. */
function template(source: string, errorLine?: number): HTMLPreElement {
  const pre = el("pre");
  const code = el("code", "", "hljs");
  pre.append(code);
  renderSource(code, source, errorLine, "handlebars");
  return pre;
}

function rubricTable(criteria: RubricCriterionInput[]): HTMLTableElement {
  const head = el("tr");
  head.append(...["name", "requirement", "weight", "options"].map((h) => el("th", h)));
  const thead = el("thead");
  thead.append(head);
  const tbody = el("tbody");
  tbody.append(
    ...criteria.map((c) =>
      row([
        c.name,
        c.requirement,
        String(c.weight ?? 10),
        (c.options ?? []).map((o) => `${o.label} = ${o.value}${o.na ? " (n/a)" : ""}`).join(", "),
      ]),
    ),
  );
  const table = el("table", "", "rubric");
  table.append(thead, tbody);
  return table;
}

/** The versions table (restore any but the current one) and the two diff pickers. */
async function showVersions(key: string, current: number, locked: boolean): Promise<void> {
  if (!client) return;
  const versions = await client.graders.versions.list({ graderKey: key });
  $("#versions tbody").replaceChildren(
    ...versions.map((v) => {
      const tr = row([
        `${v.version}${v.version === current ? " (current)" : ""}`,
        when(v.createdAt),
        v.sourceSha256.slice(0, 12),
        v.description,
      ]);
      tr.dataset.version = String(v.version);
      if (v.version === current) tr.className = "selected";
      const td = document.createElement("td");
      if (v.version !== current) {
        const button = document.createElement("button");
        button.type = "button";
        button.textContent = "Restore";
        button.disabled = locked;
        button.title = locked ? "Locked: unlock it to restore a version" : `Restore version ${v.version} as a new version`;
        button.addEventListener("click", () => void restore(key, v.version));
        td.append(button);
      }
      tr.append(td);
      return tr;
    }),
  );
  for (const [id, pick] of [
    ["#diff-from", Math.max(1, current - 1)],
    ["#diff-to", current],
  ] as const) {
    const select = $<HTMLSelectElement>(id);
    select.replaceChildren(
      ...versions.map((v) => {
        const option = document.createElement("option");
        option.value = String(v.version);
        option.textContent = String(v.version);
        option.selected = v.version === pick;
        return option;
      }),
    );
  }
}

async function restore(key: string, version: number): Promise<void> {
  if (!client) return;
  try {
    const g = await client.graders.versions.restore({ graderKey: key, version });
    status(`restored version ${version} of ${key} as version ${g.version}`, true);
    await open(key);
  } catch (error) {
    fail(error, underRow(rowOf("#versions", String(version), "version"), $("#diff-error")), "cannot restore: ", "save");
  }
}

async function showDiff(): Promise<void> {
  if (!client || !selected) return;
  const key = selected;
  try {
    const [from, to] = await Promise.all(
      ["#diff-from", "#diff-to"].map((id) =>
        client?.graders.versions.get({ graderKey: key, version: Number($<HTMLSelectElement>(id).value) }),
      ),
    );
    if (!from || !to) return;
    $("#diff").textContent = createTwoFilesPatch(`${key}@${from.version}`, `${key}@${to.version}`, from.source, to.source);
    inBox($("#diff-error"))();
  } catch (error) {
    fail(error, inBox($("#diff-error")));
  }
}

/** Shows the create panel: empty for a new grader, or holding a grader's source to save as its next version. */
function showEditor(update?: { key: string; source: string; description: string }): void {
  showPanel("create");
  $("#create-error").hidden = true;
  $<HTMLInputElement>("#create-key").value = update?.key ?? "";
  $<HTMLInputElement>("#create-key").readOnly = !!update;
  $<HTMLInputElement>("#create-description").value = update?.description ?? "";
  if (update) $<HTMLTextAreaElement>("#create-source").value = update.source;
  $("#create h2").textContent = update ? `New version of ${update.key}` : "New grader";
  $("#create-submit").hidden = !!update;
  $("#update-submit").hidden = !update;
}

async function create(mode: "create" | "update"): Promise<void> {
  if (!client) return;
  const source = $<HTMLTextAreaElement>("#create-source").value;
  const box = $("#create-error");
  try {
    const key = $<HTMLInputElement>("#create-key").value.trim();
    const description = $<HTMLInputElement>("#create-description").value;
    // uploaded samples: test_run grades them; on an update, absent keeps the grader's own
    const file = $<HTMLInputElement>("#create-samples").files?.[0];
    const samples = file ? (parseItems<WireThread>(await file.text(), "sample") as unknown as Sample[]) : undefined;
    const g =
      mode === "create"
        ? await client.graders.create.function({ key, source, description, samples })
        : await client.graders.update({ graderKey: key, source, description, samples });
    box.hidden = true;
    const what = mode === "create" ? "created" : `saved version ${g.version} of`;
    const report = "report" in g ? (g as UpdateResult).report : undefined;
    const changed = report?.samples ? `; ${report.changed.length} of ${report.samples} samples changed score` : "";
    status(`${what} ${g.key}${g.warnings.length ? ` (${g.warnings.length} warnings)` : ""}${changed}`, true);
    await open(g.key);
  } catch (error) {
    showError(box, error, source, "typescript", mode === "update" ? "save" : undefined);
  }
}

/**
 * A refused create or save in its editor's error box: what failed and, when the server says where,
 * the source with that line marked and the message under it, a caret at the column.
 */
function showError(
  box: HTMLElement,
  error: unknown,
  source?: string,
  language: "typescript" | "handlebars" = "typescript",
  refused?: Refusable,
): void {
  fail(error, inBox(box), "", refused);
  if (source === undefined || !(error instanceof GraderValidationError && error.line)) return;
  const pre = el("pre");
  const code = el("code", "", "hljs");
  pre.append(code);
  box.append(pre);
  renderSource(code, source, error.line, language);
  const note = el("span", "", "error-note");
  note.append(el("span", `${" ".repeat(Math.max(0, (error.column ?? 1) - 1))}^`, "caret"), el("span", checkText(error)));
  code.querySelector(`[data-line="${error.line}"]`)?.after(note);
}

/** Shows the judge editor with the fields of the chosen kind. */
function showJudgeEditor(): void {
  showPanel("judge-create");
  $("#judge-error").hidden = true;
  showJudgeKind();
}

function showJudgeKind(): void {
  const kind = val("#judge-kind");
  for (const fields of document.querySelectorAll<HTMLElement>("#judge-create [data-kind]")) fields.hidden = fields.dataset.kind !== kind;
}

async function createJudge(): Promise<void> {
  if (!client) return;
  const box = $("#judge-error");
  try {
    const g = await postJudge(client, val("#judge-kind"));
    box.hidden = true;
    status(`created ${g.key}`, true);
    await open(g.key);
  } catch (error) {
    showError(box, error, val("#judge-template"), "handlebars");
  }
}

function postJudge(c: Gradebox, kind: string): Promise<GraderWithSource> {
  const common = { key: val("#judge-key").trim(), judgeModel: val("#judge-model"), description: val("#judge-description") };
  if (kind === "prebuilt") return c.graders.create.prebuiltJudge({ ...common, type: val("#judge-type") as PrebuiltJudgeType });
  if (kind === "rubric") {
    return c.graders.create.rubricJudge({
      ...common,
      criteria: parseItems<RubricCriterionInput>(val("#rubric-criteria"), "criterion"),
      cannotAssess: val("#rubric-cannot-assess") as CannotAssessStrategy,
    });
  }
  const template = val("#judge-template");
  return c.graders.create.binaryJudge({ ...common, criteria: val("#judge-criteria"), template: template.trim() ? template : undefined });
}

/** Shows the endpoint form. */
function showEndpointEditor(): void {
  showPanel("endpoint-create");
  $("#endpoint-error").hidden = true;
}

async function createEndpoint(): Promise<void> {
  if (!client) return;
  const box = $("#endpoint-error");
  const numberIn = (sel: string) => (val(sel).trim() ? Number(val(sel)) : undefined);
  try {
    const batch = $<HTMLInputElement>("#endpoint-batch").checked;
    const g = await client.graders.create.externalEndpoint({
      key: val("#endpoint-key").trim(),
      url: val("#endpoint-url").trim(),
      description: val("#endpoint-description"),
      batch,
      batchSize: batch ? numberIn("#endpoint-batch-size") : undefined,
      maxConcurrency: numberIn("#endpoint-concurrency"),
    });
    box.hidden = true;
    status(`created ${g.key} (${g.endpoint?.info.name ?? "endpoint"} ${g.endpoint?.info.version ?? ""})`, true);
    await open(g.key);
  } catch (error) {
    showError(box, error);
  }
}

/** A JSON array, one JSON object, or JSONL (a bad line is named: "threads line 2 is not JSON"). */
function parseItems<T>(text: string, noun: string, where = ""): T[] {
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

/** The row under a failed thread's row: the source line where the grader threw, a caret under the column. */
function sourceRow(source: string, line: number, column: number): HTMLTableRowElement {
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

async function runTest(): Promise<void> {
  if (!client) return;
  const body = $("#results tbody");
  body.replaceChildren();
  inBox($("#test-error"))();
  try {
    const threads = parseItems<WireThread>(val("#threads"), "thread", "threads ");
    const target = ($<HTMLInputElement>('input[name="target"]:checked').value ?? "stored") as "stored" | "source";
    let results: GradeResult[];
    /** the source that graded them, for the line an error points at */
    let sourceOf: () => Promise<string | undefined>;
    if (target === "source") {
      const source = $<HTMLTextAreaElement>("#create-source").value;
      results = (await client.graders.validate({ source, threads })).results ?? [];
      sourceOf = async () => source;
    } else {
      if (!selected) throw new Error("select a grader in the list first");
      const pinned = $<HTMLInputElement>("#test-version").value.trim();
      const graded = await client.graders.gradeBatch({ graderKey: selected, threads, version: pinned ? Number(pinned) : undefined });
      results = graded.results;
      const [versions, graderKey, version] = [client.graders.versions, selected, graded.version];
      sourceOf = async () => (await versions.get({ graderKey, version }).catch(() => undefined))?.source;
    }
    const located = results.some((r) => "error" in r && r.error.line !== undefined);
    const source = located ? await sourceOf() : undefined;
    body.replaceChildren(
      ...results.flatMap((r, i) => {
        if ("score" in r) return [scoreRow(i, r)];
        const tr = row([String(i + 1), "", `${r.error.code}: ${r.error.message}${position(r.error)}`]);
        tr.className = "error";
        if (r.error.line === undefined || source === undefined) return [tr];
        return [tr, sourceRow(source, r.error.line, r.error.column ?? 1)];
      }),
    );
    status(`graded ${results.length} thread${results.length === 1 ? "" : "s"}`, true);
  } catch (error) {
    fail(error, inBox($("#test-error")));
  }
}

/** A number as the tables show it: at most 3 decimals (the cell's title has it in full). */
function number(x: unknown): string {
  return typeof x === "number" ? String(Math.round(x * 1000) / 1000) : String(x ?? "");
}

/** A cell holding a rounded number, in full in its title. */
function numberCell(x: unknown): HTMLTableCellElement {
  const td = el("td", number(x));
  td.title = String(x ?? "");
  return td;
}

/** A judge's verdict as a badge: PASS, MET, SUPPORTED, RELEVANT, or their opposites. */
function verdictBadge(verdict: string): HTMLSpanElement {
  return el("span", verdict, `verdict ${verdict.toLowerCase().replace(/[^a-z]+/g, "-")}`);
}

/** A score's row: its score, then a judge's verdict before the reason, its token usage, and a table of its subscores. */
function scoreRow(i: number, r: GradeScore): HTMLTableRowElement {
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
  const head = el("tr");
  head.append(...["name", "score", "weight", "reason"].map((h) => el("th", h)));
  const thead = el("thead");
  thead.append(head);
  const tbody = el("tbody");
  const rows = (s: SubScore, depth: number): HTMLTableRowElement[] => {
    // the server passes a function grader's subscores through as they were returned
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
    tr.append(name, numberCell(s.value), s.weight === undefined ? el("td") : numberCell(s.weight), reason);
    return [tr, ...(Array.isArray(s.children) ? s.children.flatMap((c) => rows(c, depth + 1)) : [])];
  };
  tbody.append(...subscores.flatMap((s) => rows(s, 0)));
  const table = el("table", "", "subscores");
  table.append(thead, tbody);
  return table;
}

/** The messages the selected judge would send for the first test thread; no model is called. */
async function showPrompt(): Promise<void> {
  if (!client || !selected) return;
  try {
    const [thread] = parseItems<WireThread>(val("#threads"), "thread", "threads ");
    const { messages } = await client.graders.prompt({ graderKey: selected, thread });
    $("#prompt").replaceChildren(
      el("h3", "Prompt"),
      ...messages.map((m) => {
        const message = el("div", "", "message");
        message.dataset.role = m.role;
        message.append(el("h4", m.role), el("pre", m.content));
        return message;
      }),
    );
    inBox($("#test-error"))();
    status(`the prompt ${selected} sends for the first thread`, true);
  } catch (error) {
    $("#prompt").replaceChildren();
    fail(error, inBox($("#test-error")));
  }
}

$("#connect").addEventListener("submit", (e) => {
  e.preventDefault();
  connect($<HTMLInputElement>("#api-key").value.trim()).catch((error) => status(errorText(error)));
});
$("#new-grader").addEventListener("click", () => showEditor());
$("#new-judge").addEventListener("click", () => showJudgeEditor());
$("#judge-kind").addEventListener("change", () => showJudgeKind());
$("#judge-submit").addEventListener("click", () => void createJudge());
$("#new-endpoint").addEventListener("click", () => showEndpointEditor());
$("#endpoint-submit").addEventListener("click", () => void createEndpoint());
$("#endpoint-batch").addEventListener("change", () => {
  $<HTMLInputElement>("#endpoint-batch-size").disabled = !$<HTMLInputElement>("#endpoint-batch").checked;
});
$("#model-form").addEventListener("submit", (e) => {
  e.preventDefault();
  void createModel();
});
$("#create-submit").addEventListener("click", () => void create("create"));
$("#update-submit").addEventListener("click", () => void create("update"));
$("#edit").addEventListener("click", async () => {
  if (!client || !selected) return;
  try {
    const g = await client.graders.get({ graderKey: selected });
    showEditor({ key: g.key, source: g.source ?? "", description: g.description });
  } catch (error) {
    fail(error, inBox($("#detail-error")));
  }
});
$("#diff-run").addEventListener("click", () => void showDiff());
$("#lock").addEventListener("click", async () => {
  if (!client || !selected) return;
  try {
    await client.graders.lock({ graderKey: selected, locked: $("#lock").dataset.locked !== "true" });
    await open(selected);
  } catch (error) {
    fail(error, inBox($("#detail-error")));
  }
});
$("#delete").addEventListener("click", async () => {
  if (!client || !selected || !confirm(`Delete grader "${selected}"? This cannot be undone.`)) return;
  const key = selected;
  try {
    await client.graders.delete({ graderKey: key });
    status(`deleted ${key}`, true);
    selected = undefined;
    $("#detail").hidden = true;
    $("#show-prompt").hidden = true;
    await refresh();
  } catch (error) {
    // locked since it was opened: show it as locked (Delete disabled, the reason beside it)
    if (error instanceof APIError && error.code === "GRADER_LOCKED") await open(key).catch(() => undefined);
    fail(error, underRow(rowOf("#graders", key), $("#detail-error")), "", "delete");
  }
});
$("#threads-file").addEventListener("change", async () => {
  const file = $<HTMLInputElement>("#threads-file").files?.[0];
  if (file) $<HTMLTextAreaElement>("#threads").value = await file.text();
});
$("#run-test").addEventListener("click", () => void runTest());
$("#show-prompt").addEventListener("click", () => void showPrompt());

const saved = sessionStorage.getItem(KEY);
if (saved) {
  $<HTMLInputElement>("#api-key").value = saved;
  connect(saved).catch((error) => status(errorText(error)));
}
