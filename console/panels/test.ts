// The test payload: grade pasted or uploaded threads with the open grader (or a pinned version of
// it) or with the unsaved source in the editor, and show a judge's prompt for the first thread.

import type { GradeBatchResponse, Gradebox, GradeResult } from "../../sdk/index.ts";
import { summarize } from "../../sdk/summary.ts";
import type { WireThread } from "../../sdk/thread.ts";
import type { BatchSummary } from "../../sdk/wire.ts";
import { drawInto, type HistogramSummary, histogramChart, outcomeList } from "../charts.ts";
import { $, el, row, val } from "../dom.ts";
import { fail, inBox, position, status } from "../feedback.ts";
import { parseThreads } from "../parse.ts";
import { state } from "../state.ts";
import { editorLanguage } from "./editor.ts";
import { abstainedRow, scoreRow, sourceRow } from "./results.ts";

/** Room left under the server's body limit for what the SDK adds (as its own split keeps). */
const BODY_MARGIN_BYTES = 1024;

/**
 * A stored grader's batch with the server's summary (`summary: true`): one request when the batch
 * is within the server's limits, as the SDK's gradeBatch does not send `summary` yet; a larger one
 * goes through gradeBatch, which splits it, and is summarised in the page.
 */
async function gradeStored(
  client: Gradebox,
  graderKey: string,
  threads: WireThread[],
  version: number | undefined,
): Promise<GradeBatchResponse & { summary?: BatchSummary }> {
  const limits = await client.limits();
  const body = JSON.stringify({ threads, ...(version === undefined ? {} : { version }), summary: true });
  if (threads.length > limits.maxBatchThreads || new TextEncoder().encode(body).length > limits.maxBodyBytes - BODY_MARGIN_BYTES) {
    return client.graders.gradeBatch({ graderKey, threads, version });
  }
  const path = `/v1/projects/${encodeURIComponent(client.project)}/graders/${encodeURIComponent(graderKey)}/grade-batch`;
  return client.request("POST", path, { rawBody: body, retry: true });
}

/** The run's histogram and its counts by outcome, above the rows; hidden before a run. */
function showSummary(summary: HistogramSummary | undefined): void {
  const figure = $("#test-summary");
  figure.hidden = !summary;
  if (!summary) return;
  const n = summary.count;
  $("#test-summary figcaption").textContent =
    `Scores of this run: ${summary.outcomes.scored} of ${n} thread${n === 1 ? "" : "s"} scored${summary.histogram ? "" : " (nothing to chart)"}`;
  $("#test-summary .outcomes-box").replaceChildren(outcomeList(summary));
  drawInto($("#test-histogram"), (width) => histogramChart(summary, width));
}

async function runTest(): Promise<void> {
  const { client } = state;
  if (!client) return;
  const body = $("#results tbody");
  body.replaceChildren();
  showSummary(undefined);
  inBox($("#test-error"))();
  try {
    const { items, notes } = parseThreads(val("#threads"));
    $("#threads-format").textContent = notes.join("; ");
    const threads = items.flatMap((item) => ("thread" in item ? [item.thread] : []));
    if (threads.length === 0)
      throw new Error(
        items.length === 1 && "problem" in items[0]
          ? `threads: ${items[0].problem}`
          : "no thread to grade: every line has a problem (shown below)",
      );
    const target = ($<HTMLInputElement>('input[name="target"]:checked').value ?? "stored") as "stored" | "source";
    let results: GradeResult[] = [];
    /** the server's summary of the run, when it sent one */
    let summary: BatchSummary | undefined;
    /** the source that graded them, for the line an error points at */
    let sourceOf: () => Promise<string | undefined>;
    if (target === "source") {
      const source = $<HTMLTextAreaElement>("#create-source").value;
      results = (await client.graders.validate({ source, language: editorLanguage(), threads })).results ?? [];
      sourceOf = async () => source;
    } else {
      const { selected } = state;
      if (!selected) throw new Error("select a grader in the list first");
      const pinned = $<HTMLInputElement>("#test-version").value.trim();
      const graded = await gradeStored(client, selected, threads, pinned ? Number(pinned) : undefined);
      results = graded.results;
      summary = graded.summary;
      const [versions, graderKey, version] = [client.graders.versions, selected, graded.version];
      sourceOf = async () => (await versions.get({ graderKey, version }).catch(() => undefined))?.source;
    }
    const located = results.some((r) => "error" in r && r.error.line !== undefined);
    const source = located ? await sourceOf() : undefined;
    let next = 0;
    body.replaceChildren(
      ...items.flatMap((item) => {
        const i = item.n - 1;
        if ("problem" in item) {
          // a line that is no thread: marked where it was, the others graded
          const tr = row([String(item.n), "", `BAD_LINE: ${item.problem}`]);
          tr.className = "error bad-line";
          return [tr];
        }
        const r = results[next++];
        if ("score" in r) return [scoreRow(i, r)];
        if ("abstained" in r) return [abstainedRow(i, r.abstained)];
        const tr = row([String(item.n), "", `${r.error.code}: ${r.error.message}${position(r.error)}`]);
        tr.className = "error";
        if (r.error.line === undefined || source === undefined) return [tr];
        return [tr, sourceRow(source, r.error.line, r.error.column ?? 1)];
      }),
    );
    showSummary(summary ?? summarize(results));
    const skipped = items.length - threads.length;
    status(
      `graded ${results.length} thread${results.length === 1 ? "" : "s"}${skipped ? `; ${skipped} line${skipped === 1 ? " is" : "s are"} not a thread (marked)` : ""}`,
      true,
    );
  } catch (error) {
    fail(error, inBox($("#test-error")));
  }
}

/** The messages the selected judge would send for the first test thread; no model is called. */
async function showPrompt(): Promise<void> {
  const { client, selected } = state;
  if (!client || !selected) return;
  try {
    const first = parseThreads(val("#threads")).items[0];
    if (!first || "problem" in first)
      throw new Error(`threads: the first one is not a thread: ${first && "problem" in first ? first.problem : "none"}`);
    const { thread } = first;
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

export function wire(): void {
  $("#threads-file").addEventListener("change", async () => {
    const file = $<HTMLInputElement>("#threads-file").files?.[0];
    if (file) $<HTMLTextAreaElement>("#threads").value = await file.text();
  });
  $("#run-test").addEventListener("click", () => void runTest());
  $("#show-prompt").addEventListener("click", () => void showPrompt());
}
