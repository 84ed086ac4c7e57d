// The web console: the SDK in the browser. The API key lives in sessionStorage only.

import { createTwoFilesPatch } from "diff";
import hljs from "highlight.js/lib/core";
import typescript from "highlight.js/lib/languages/typescript";
import {
  APIError,
  Gradebox,
  type GradeResult,
  type Grader,
  GraderValidationError,
  type Sample,
  type UpdateResult,
  type WireThread,
} from "../sdk/index.ts";

hljs.registerLanguage("typescript", typescript);

const $ = <T extends HTMLElement = HTMLElement>(sel: string) => document.querySelector(sel) as T;
const KEY = "gradebox.apiKey";
let client: Gradebox | undefined;
let selected: string | undefined;

function status(message: string, ok = false): void {
  const el = $("#status");
  el.textContent = message;
  el.style.color = ok ? "#1b7f3b" : "";
}

function errorText(error: unknown): string {
  if (error instanceof GraderValidationError) return `${error.check} check failed: ${String(error.body.message ?? error.message)}`;
  if (error instanceof APIError) return `${error.code}: ${String(error.body.detail ?? error.message)}`;
  return (error as Error).message;
}

/** Highlighted source, one span per line so a failing line can be marked. */
function renderSource(target: HTMLElement, source: string, errorLine?: number): void {
  const html = hljs.highlight(source, { language: "typescript" }).value;
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
  await refresh();
}

async function refresh(): Promise<void> {
  if (!client) return;
  const graders = await client.graders.list();
  const body = $("#graders tbody");
  body.replaceChildren(
    ...graders.map((g: Grader) => {
      const tr = document.createElement("tr");
      tr.dataset.key = g.key;
      if (g.key === selected) tr.className = "selected";
      for (const text of [
        g.key,
        g.kind,
        g.description,
        g.locked ? "locked" : "",
        String(g.warnings.length),
        g.createdAt.slice(0, 19).replace("T", " "),
      ]) {
        const td = document.createElement("td");
        td.textContent = text;
        tr.append(td);
      }
      tr.addEventListener("click", () => void open(g.key));
      return tr;
    }),
  );
}

async function open(key: string): Promise<void> {
  if (!client) return;
  selected = key;
  const g = await client.graders.get({ graderKey: key });
  $("#create").hidden = true;
  $("#detail").hidden = false;
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
  renderSource($("#source"), source);
  $("#edit").hidden = g.kind !== "function";
  $("#versions-panel").hidden = g.kind !== "function";
  $("#diff").textContent = "";
  if (g.kind === "function") await showVersions(g.key, g.version);
  await refresh();
}

/** The versions table (restore any but the current one) and the two diff pickers. */
async function showVersions(key: string, current: number): Promise<void> {
  if (!client) return;
  const versions = await client.graders.versions.list({ graderKey: key });
  $("#versions tbody").replaceChildren(
    ...versions.map((v) => {
      const tr = document.createElement("tr");
      tr.dataset.version = String(v.version);
      if (v.version === current) tr.className = "selected";
      for (const text of [
        `${v.version}${v.version === current ? " (current)" : ""}`,
        v.createdAt.slice(0, 19).replace("T", " "),
        v.sourceSha256.slice(0, 12),
        v.description,
      ]) {
        const td = document.createElement("td");
        td.textContent = text;
        tr.append(td);
      }
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
  $("#detail").hidden = true;
  $("#create").hidden = false;
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
    const samples = file ? (parseThreads(await file.text()) as unknown as Sample[]) : undefined;
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
    box.hidden = false;
    box.replaceChildren();
    const p = document.createElement("p");
    p.className = "error";
    p.textContent = errorText(error);
    box.append(p);
    if (error instanceof GraderValidationError && error.line) {
      const pre = document.createElement("pre");
      const code = document.createElement("code");
      code.className = "hljs";
      pre.append(code);
      box.append(pre);
      renderSource(code, source, error.line);
    }
  }
}

function parseThreads(text: string): WireThread[] {
  const trimmed = text.trim();
  if (!trimmed) throw new Error("paste or upload at least one thread");
  if (trimmed.startsWith("[")) return JSON.parse(trimmed) as WireThread[];
  try {
    return [JSON.parse(trimmed) as WireThread];
  } catch {
    return trimmed
      .split("\n")
      .filter((l) => l.trim())
      .map((l, i) => {
        try {
          return JSON.parse(l) as WireThread;
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
    const threads = parseThreads($<HTMLTextAreaElement>("#threads").value);
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
        const tr = document.createElement("tr");
        const at = "error" in r && r.error.line !== undefined ? ` (line ${r.error.line}, column ${r.error.column})` : "";
        const cells =
          "score" in r ? [String(i + 1), String(r.score), r.reason ?? ""] : [String(i + 1), "", `${r.error.code}: ${r.error.message}${at}`];
        for (const text of cells) {
          const td = document.createElement("td");
          td.textContent = text;
          tr.append(td);
        }
        if ("error" in r) tr.className = "error";
        if (!("error" in r) || r.error.line === undefined || source === undefined) return [tr];
        return [tr, sourceRow(source, r.error.line, r.error.column ?? 1)];
      }),
    );
    status(`graded ${results.length} thread${results.length === 1 ? "" : "s"}`, true);
  } catch (error) {
    status(errorText(error));
  }
}

$("#connect").addEventListener("submit", (e) => {
  e.preventDefault();
  connect($<HTMLInputElement>("#api-key").value.trim()).catch((error) => status(errorText(error)));
});
$("#new-grader").addEventListener("click", () => showEditor());
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

const saved = sessionStorage.getItem(KEY);
if (saved) {
  $<HTMLInputElement>("#api-key").value = saved;
  connect(saved).catch((error) => status(errorText(error)));
}
