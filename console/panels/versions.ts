// A function grader's versions: the table (restore any but the current one), the diff of two, and
// the chart of how its samples scored before and after an update or a restore.

import { createTwoFilesPatch } from "diff";
import type { UpdateReport } from "../../sdk/wire.ts";
import { beforeAfterChart, beforeAfterLegend, drawInto } from "../charts.ts";
import { $, renderDiff, row, rowOf, when } from "../dom.ts";
import { fail, inBox, status, underRow } from "../feedback.ts";
import { state } from "../state.ts";
import { open } from "./detail.ts";

/** The versions table and the two diff pickers (the previous version against the current one). */
export async function showVersions(key: string, current: number, locked: boolean): Promise<void> {
  if (!state.client) return;
  const versions = await state.client.graders.versions.list({ graderKey: key });
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
  // the stored version before the current one: deleted versions leave gaps in the numbers
  const previous = versions.filter((v) => v.version < current).at(-1)?.version ?? current;
  for (const [id, pick] of [
    ["#diff-from", previous],
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

/**
 * Under the open grader, after an update or a restore that graded its samples: each sample's score
 * before and after, as a chart (opening a grader hides it). `what`: the update, in words.
 */
export function showReport(report: UpdateReport, what: string): void {
  const figure = $("#update-report");
  figure.hidden = report.samples === 0;
  if (figure.hidden) return;
  const changed = report.changed.length;
  $("#update-report figcaption").textContent = `Samples before and after ${what}: ${changed} of ${report.samples} changed`;
  // the legend after the chart's box, so a redraw at a new width replaces only the chart
  figure.querySelector(".legend")?.remove();
  figure.append(beforeAfterLegend(report.scores));
  drawInto($("#update-chart"), (width) => beforeAfterChart(report.scores, width));
}

async function restore(key: string, version: number): Promise<void> {
  if (!state.client) return;
  try {
    const g = await state.client.graders.versions.restore({ graderKey: key, version });
    status(`restored version ${version} of ${key} as version ${g.version}`, true);
    await open(key);
    if (!g.unchanged) showReport(g.report, `restoring version ${version} as version ${g.version}`);
  } catch (error) {
    fail(error, underRow(rowOf("#versions", String(version), "version"), $("#diff-error")), "cannot restore: ", "save");
  }
}

async function showDiff(): Promise<void> {
  const { client, selected: key } = state;
  if (!client || !key) return;
  try {
    const [from, to] = await Promise.all(
      ["#diff-from", "#diff-to"].map((id) =>
        client.graders.versions.get({ graderKey: key, version: Number($<HTMLSelectElement>(id).value) }),
      ),
    );
    if (!from || !to) return;
    renderDiff($("#diff"), createTwoFilesPatch(`${key}@${from.version}`, `${key}@${to.version}`, from.source, to.source));
    inBox($("#diff-error"))();
  } catch (error) {
    fail(error, inBox($("#diff-error")));
  }
}

export function wire(): void {
  $("#diff-run").addEventListener("click", () => void showDiff());
}
