// The test payload: grade pasted or uploaded threads with the open grader (or a pinned version of
// it) or with the unsaved source in the editor, and show a judge's prompt for the first thread.

import type { GradeResult } from "../../sdk/index.ts";
import { $, el, row, val } from "../dom.ts";
import { fail, inBox, position, status } from "../feedback.ts";
import { parseThreads } from "../parse.ts";
import { state } from "../state.ts";
import { editorLanguage } from "./editor.ts";
import { scoreRow, sourceRow } from "./results.ts";

async function runTest(): Promise<void> {
  const { client } = state;
  if (!client) return;
  const body = $("#results tbody");
  body.replaceChildren();
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
      const graded = await client.graders.gradeBatch({ graderKey: selected, threads, version: pinned ? Number(pinned) : undefined });
      results = graded.results;
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
        if ("abstained" in r) {
          const tr = row([String(item.n), "", `abstained ${r.abstained.code}: ${r.abstained.reason}`]);
          tr.className = "abstained";
          return [tr];
        }
        const tr = row([String(item.n), "", `${r.error.code}: ${r.error.message}${position(r.error)}`]);
        tr.className = "error";
        if (r.error.line === undefined || source === undefined) return [tr];
        return [tr, sourceRow(source, r.error.line, r.error.column ?? 1)];
      }),
    );
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
