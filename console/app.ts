// The web console: the SDK in the browser. The API key lives in sessionStorage only.

import hljs from "highlight.js/lib/core";
import typescript from "highlight.js/lib/languages/typescript";
import { APIError, Gradebox, type GradeResult, type Grader, GraderValidationError, type WireThread } from "../sdk/index.ts";

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
    `${g.kind}${g.locked ? " · locked" : ""}${g.quarantinedAt ? " · quarantined" : ""} · ${g.description || "no description"}`;
  $("#detail-warnings").replaceChildren(
    ...g.warnings.map((w) => {
      const li = document.createElement("li");
      li.textContent = w;
      return li;
    }),
  );
  $("#lock").textContent = g.locked ? "Unlock" : "Lock";
  $("#lock").dataset.locked = String(g.locked);
  const source = g.source ?? (g.parts ?? []).map((p) => `// part ${p.name}: ${p.graderKey} × ${p.weight}`).join("\n");
  renderSource($("#source"), source);
  await refresh();
}

async function create(): Promise<void> {
  if (!client) return;
  const source = $<HTMLTextAreaElement>("#create-source").value;
  const box = $("#create-error");
  try {
    const g = await client.graders.create.function({
      key: $<HTMLInputElement>("#create-key").value.trim(),
      source,
      description: $<HTMLInputElement>("#create-description").value,
    });
    box.hidden = true;
    status(`created ${g.key}${g.warnings.length ? ` (${g.warnings.length} warnings)` : ""}`, true);
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

async function runTest(): Promise<void> {
  if (!client) return;
  const body = $("#results tbody");
  body.replaceChildren();
  try {
    const threads = parseThreads($<HTMLTextAreaElement>("#threads").value);
    const target = ($<HTMLInputElement>('input[name="target"]:checked').value ?? "stored") as "stored" | "source";
    let results: GradeResult[];
    if (target === "source") {
      results = (await client.graders.validate({ source: $<HTMLTextAreaElement>("#create-source").value, threads })).results ?? [];
    } else {
      if (!selected) throw new Error("select a grader in the list first");
      results = (await client.graders.gradeBatch({ graderKey: selected, threads })).results;
    }
    body.replaceChildren(
      ...results.map((r, i) => {
        const tr = document.createElement("tr");
        const cells =
          "score" in r ? [String(i + 1), String(r.score), r.reason ?? ""] : [String(i + 1), "", `${r.error.code}: ${r.error.message}`];
        for (const text of cells) {
          const td = document.createElement("td");
          td.textContent = text;
          tr.append(td);
        }
        if ("error" in r) tr.className = "error";
        return tr;
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
$("#new-grader").addEventListener("click", () => {
  $("#detail").hidden = true;
  $("#create").hidden = false;
});
$("#create-submit").addEventListener("click", () => void create());
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
