// The web console: the SDK in the browser. The API key lives in sessionStorage only.

import { createTwoFilesPatch } from "diff";
import hljs from "highlight.js/lib/core";
import handlebars from "highlight.js/lib/languages/handlebars";
import typescript from "highlight.js/lib/languages/typescript";
import {
  APIError,
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

function status(message: string, ok = false): void {
  const el = $("#status");
  el.textContent = message;
  el.style.color = ok ? "#1b7f3b" : "";
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

function errorText(error: unknown): string {
  if (error instanceof GraderValidationError)
    return `${error.check} check failed: ${String(error.body.message ?? error.message)}${position(error.body)}`;
  if (error instanceof APIError) return `${error.code}: ${String(error.body.detail ?? error.message)}${position(error.body)}`;
  return (error as Error).message;
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
  const res = await fetch("/v1/me", { headers: { authorization: `Bearer ${key}` } });
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
      tr.addEventListener("click", () => void open(g.key));
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
    status(`added model ${m.key}`, true);
    await refreshModels();
  } catch (error) {
    status(`cannot add the model: ${errorText(error)}`);
  }
}

async function deleteModel(key: string): Promise<void> {
  if (!client || !confirm(`Delete model "${key}"?`)) return;
  try {
    await client.models.delete({ modelKey: key });
    status(`deleted model ${key}`, true);
    await refreshModels();
  } catch (error) {
    status(`cannot delete: ${errorText(error)}`);
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
  if (g.kind === "function") await showVersions(g.key, g.version);
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
  const headers = Object.entries(e.headersEnv ?? {});
  if (headers.length) rows.push(["headers", headers.map(([name, env]) => `${name} from ${env}`).join(", ")]);
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
async function showVersions(key: string, current: number): Promise<void> {
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
    status(`cannot restore: ${errorText(error)}`);
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
  } catch (error) {
    status(errorText(error));
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
    showError(box, error, source, "typescript");
  }
}

/** A refused create in its panel's error box: what failed and, when the server says where, the source with that line marked. */
function showError(box: HTMLElement, error: unknown, source?: string, language: "typescript" | "handlebars" = "typescript"): void {
  box.hidden = false;
  box.replaceChildren(el("p", errorText(error), "error"));
  if (source === undefined || !(error instanceof GraderValidationError && error.line)) return;
  const pre = el("pre");
  const code = el("code", "", "hljs");
  pre.append(code);
  box.append(pre);
  renderSource(code, source, error.line, language);
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
  const number = (sel: string) => (val(sel).trim() ? Number(val(sel)) : undefined);
  try {
    const batch = $<HTMLInputElement>("#endpoint-batch").checked;
    const g = await client.graders.create.externalEndpoint({
      key: val("#endpoint-key").trim(),
      url: val("#endpoint-url").trim(),
      description: val("#endpoint-description"),
      batch,
      batchSize: batch ? number("#endpoint-batch-size") : undefined,
      maxConcurrency: number("#endpoint-concurrency"),
    });
    box.hidden = true;
    status(`created ${g.key} (${g.endpoint?.info.name ?? "endpoint"} ${g.endpoint?.info.version ?? ""})`, true);
    await open(g.key);
  } catch (error) {
    showError(box, error);
  }
}

/** A JSON array, one JSON object, or JSONL. */
function parseItems<T>(text: string, noun: string): T[] {
  const trimmed = text.trim();
  if (!trimmed) throw new Error(`paste or upload at least one ${noun}`);
  if (trimmed.startsWith("[")) return JSON.parse(trimmed) as T[];
  try {
    return [JSON.parse(trimmed) as T];
  } catch {
    return trimmed
      .split("\n")
      .filter((l) => l.trim())
      .map((l, i) => {
        try {
          return JSON.parse(l) as T;
        } catch {
          throw new Error(`line ${i + 1} is not JSON`);
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
  try {
    const threads = parseItems<WireThread>(val("#threads"), "thread");
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
    status(errorText(error));
  }
}

/** A score's row: a judge's verdict before the reason, then its token usage and one line per subscore. */
function scoreRow(i: number, r: GradeScore): HTMLTableRowElement {
  const tr = row([String(i + 1), String(r.score)]);
  const td = el("td");
  const verdict = r.metadata?.verdict;
  if (typeof verdict === "string") td.append(el("span", verdict, `verdict ${verdict.toLowerCase()}`), " ");
  td.append(r.reason ?? "");
  const usage = r.metadata?.usage as { totalTokens?: number } | undefined;
  if (typeof usage?.totalTokens === "number") td.append(el("span", ` · ${usage.totalTokens} tokens`, "usage"));
  if (r.subscores?.length) {
    const list = el("ul", "", "subscores");
    list.append(...r.subscores.map((s) => el("li", subscoreText(s))));
    td.append(list);
  }
  tr.append(td);
  return tr;
}

/** "tone: 1 × 10 MET — polite throughout" */
function subscoreText(s: SubScore): string {
  const said = [s.metadata?.verdict, s.metadata?.claim ?? s.metadata?.chunk, s.metadata?.reason].filter((x) => typeof x === "string" && x);
  return `${s.name}: ${s.value}${s.weight === undefined ? "" : ` × ${s.weight}`}${said.length ? ` ${said.join(" — ")}` : ""}`;
}

/** The messages the selected judge would send for the first test thread; no model is called. */
async function showPrompt(): Promise<void> {
  if (!client || !selected) return;
  try {
    const [thread] = parseItems<WireThread>(val("#threads"), "thread");
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
    status(`the prompt ${selected} sends for the first thread`, true);
  } catch (error) {
    $("#prompt").replaceChildren();
    status(errorText(error));
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
  const g = await client.graders.get({ graderKey: selected });
  showEditor({ key: g.key, source: g.source ?? "", description: g.description });
});
$("#diff-run").addEventListener("click", () => void showDiff());
$("#lock").addEventListener("click", async () => {
  if (!client || !selected) return;
  try {
    await client.graders.lock({ graderKey: selected, locked: $("#lock").dataset.locked !== "true" });
    await open(selected);
  } catch (error) {
    status(errorText(error));
  }
});
$("#delete").addEventListener("click", async () => {
  if (!client || !selected || !confirm(`Delete grader "${selected}"? This cannot be undone.`)) return;
  try {
    await client.graders.delete({ graderKey: selected });
    status(`deleted ${selected}`, true);
    selected = undefined;
    $("#detail").hidden = true;
    $("#show-prompt").hidden = true;
    await refresh();
  } catch (error) {
    status(`cannot delete: ${errorText(error)}`);
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
