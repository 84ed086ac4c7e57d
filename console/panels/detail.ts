// The open grader: what it is (source, judge, endpoint or code grader definition), its warnings, Lock and Delete.

import {
  APIError,
  type CodeDefinition,
  type EndpointDefinition,
  type JudgeDefinition,
  type RubricCriterionInput,
} from "../../sdk/index.ts";
import { $, definitions, el, renderSource, row, rowOf, showPanel, sourceBlock, table } from "../dom.ts";
import { fail, inBox, status, underRow } from "../feedback.ts";
import { state } from "../state.ts";
import { refresh } from "./graders.ts";
import { showVersions } from "./versions.ts";

/** Opens `key` in the detail panel (its versions too, for a function grader) and marks it in the list. */
export async function open(key: string): Promise<void> {
  if (!state.client) return;
  state.selected = key;
  const g = await state.client.graders.get({ graderKey: key });
  showPanel("detail");
  $("#detail-key").textContent = g.key;
  $("#detail-meta").textContent =
    `${g.kind}${g.language ? ` · ${g.language}` : ""} · version ${g.version}${g.locked ? " · locked" : ""}${g.quarantinedAt ? " · quarantined" : ""} · ${g.description || "no description"}`;
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
  // an update's chart belongs to the moment after it: whoever saved shows it again after opening
  $("#update-report").hidden = true;
  const source =
    g.source ?? (g.parts ?? []).map((p) => `// part ${p.name}: ${p.graderKey}${p.pinned ? `@${p.version}` : ""} × ${p.weight}`).join("\n");
  $("#source-block").hidden = !!(g.judge || g.endpoint || g.code);
  $("#judge-def").hidden = !g.judge;
  $("#endpoint-def").hidden = !g.endpoint;
  $("#code-def").hidden = !g.code;
  if (g.judge) renderJudge(g.judge);
  else if (g.endpoint) renderEndpoint(g.endpoint);
  else if (g.code) renderCode(g.code);
  else renderSource($("#source"), source, undefined, g.language ?? "typescript");
  $("#show-prompt").hidden = !g.judge;
  $("#prompt").replaceChildren();
  $("#edit").hidden = g.kind !== "function";
  $("#versions-panel").hidden = g.kind !== "function";
  $("#diff").textContent = "";
  if (g.kind === "function") await showVersions(g.key, g.version, g.locked);
  await refresh();
}

/** Where an endpoint is and how it is called, what its /info said, and its metadata schema when it has one. */
function renderEndpoint(e: EndpointDefinition): void {
  const rows: Array<[string, string | HTMLElement]> = [
    ["url", e.url],
    ["info", `${e.info.name} ${e.info.version}${e.info.description ? ` — ${e.info.description}` : ""}`],
    [
      "batch",
      e.batch ? `${e.batchSize} threads per ${e.transport === "websocket" ? "call" : "/batch_score call"}` : "off: /score per thread",
    ],
    ["max concurrency", String(e.maxConcurrency)],
    ["timeout", `${e.timeoutMs} ms`],
    ["transport", e.transport === "websocket" ? `WebSocket at ${e.url.replace(/\/+$/, "")}/ws, a score message per thread` : "HTTP"],
  ];
  const headers = [
    ...Object.entries(e.headersSecret ?? {}).map(([name, secret]) => `${name} from secret ${secret}`),
    ...Object.entries(e.headersEnv ?? {}).map(([name, env]) => `${name} from ${env}`),
  ];
  if (headers.length) rows.push(["headers", headers.join(", ")]);
  rows.push(["metadata schema", e.metadataSchema === undefined ? "none" : el("pre", JSON.stringify(e.metadataSchema, null, 2))]);
  definitions($("#endpoint-def"), rows);
}

/** What a code grader runs, against which tests, within which limits. */
function renderCode(c: CodeDefinition): void {
  const rows: Array<[string, string | HTMLElement]> = [
    ["languages", c.languages.join(", ")],
    ["program", c.extract],
    ["tests", `${c.tests}${c.testsKey ? ` at metadata.${c.testsKey}` : ""}, at most ${c.maxTests} an item`],
    ["stdout compared", c.compare === "float" ? `float (abs ${c.absTol}, rel ${c.relTol})` : c.compare],
    ["score", c.scoring === "fraction" ? "the fraction of tests passed" : "1 when every test passes, else 0"],
    ["per test", `${c.limits.cpuMs} ms CPU, ${c.limits.memoryMb} MB, ${c.limits.outputBytes} bytes of output`],
  ];
  definitions($("#code-def"), rows);
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
      ["template", judge.template === undefined ? "the built-in one" : sourceBlock(judge.template, undefined, "handlebars")],
    );
    if (judge.templateVariables) rows.push(["template variables", el("pre", JSON.stringify(judge.templateVariables, null, 2))]);
  }
  if (judge.type === "rubric") {
    const credit = judge.cannotAssess === "partial" ? ` (credit ${judge.partialCredit})` : "";
    rows.push(["criteria", rubricTable(judge.criteria)], ["cannot assess", `${judge.cannotAssess}${credit}`]);
  }
  definitions($("#judge-def"), rows);
}

function rubricTable(criteria: RubricCriterionInput[]): HTMLTableElement {
  return table(
    "rubric",
    ["name", "requirement", "weight", "options"],
    criteria.map((c) =>
      row([
        c.name,
        c.requirement,
        String(c.weight ?? 10),
        (c.options ?? []).map((o) => `${o.label} = ${o.value}${o.na ? " (n/a)" : ""}`).join(", "),
      ]),
    ),
  );
}

async function toggleLock(): Promise<void> {
  if (!state.client || !state.selected) return;
  try {
    await state.client.graders.lock({ graderKey: state.selected, locked: $("#lock").dataset.locked !== "true" });
    await open(state.selected);
  } catch (error) {
    fail(error, inBox($("#detail-error")));
  }
}

async function remove(): Promise<void> {
  if (!state.client || !state.selected || !confirm(`Delete grader "${state.selected}"? This cannot be undone.`)) return;
  const key = state.selected;
  try {
    await state.client.graders.delete({ graderKey: key });
    status(`deleted ${key}`, true);
    state.selected = undefined;
    $("#detail").hidden = true;
    $("#show-prompt").hidden = true;
    await refresh();
  } catch (error) {
    // locked since it was opened: show it as locked (Delete disabled, the reason beside it)
    if (error instanceof APIError && error.code === "GRADER_LOCKED") await open(key).catch(() => undefined);
    fail(error, underRow(rowOf("#graders", key), $("#detail-error")), "", "delete");
  }
}

export function wire(): void {
  $("#lock").addEventListener("click", () => void toggleLock());
  $("#delete").addEventListener("click", () => void remove());
}
