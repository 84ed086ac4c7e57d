// The grader editor: New grader, or Edit as new version of the open function grader.

import { type Language, languageOfFile, type Sample, type UpdateResult, type WireThread } from "../../sdk/index.ts";
import { $, showPanel } from "../dom.ts";
import { fail, inBox, showError, status } from "../feedback.ts";
import { parseItems } from "../parse.ts";
import { state } from "../state.ts";
import { open } from "./detail.ts";
import { showReport } from "./versions.ts";

/** Shows the create panel: empty for a new grader, or holding a grader's source to save as its next version. */
function showEditor(update?: { key: string; source: string; language: Language; description: string }): void {
  showPanel("create");
  $("#create-error").hidden = true;
  $<HTMLInputElement>("#create-key").value = update?.key ?? "";
  $<HTMLInputElement>("#create-key").readOnly = !!update;
  $<HTMLInputElement>("#create-description").value = update?.description ?? "";
  if (update) {
    $<HTMLTextAreaElement>("#create-source").value = update.source;
    $<HTMLSelectElement>("#create-language").value = update.language;
  }
  $("#create h2").textContent = update ? `New version of ${update.key}` : "New grader";
  $("#create-submit").hidden = !!update;
  $("#update-submit").hidden = !update;
}

/** The open grader's current source in the editor, to save as its next version. */
async function editSelected(): Promise<void> {
  if (!state.client || !state.selected) return;
  try {
    const g = await state.client.graders.get({ graderKey: state.selected });
    showEditor({ key: g.key, source: g.source ?? "", language: g.language ?? "typescript", description: g.description });
  } catch (error) {
    fail(error, inBox($("#detail-error")));
  }
}

async function create(mode: "create" | "update"): Promise<void> {
  if (!state.client) return;
  const source = $<HTMLTextAreaElement>("#create-source").value;
  const language = editorLanguage();
  const box = $("#create-error");
  try {
    const key = $<HTMLInputElement>("#create-key").value.trim();
    const description = $<HTMLInputElement>("#create-description").value;
    // uploaded samples: test_run grades them; on an update, absent keeps the grader's own
    const file = $<HTMLInputElement>("#create-samples").files?.[0];
    const samples = file ? (parseItems<WireThread>(await file.text(), "sample") as unknown as Sample[]) : undefined;
    const g =
      mode === "create"
        ? await state.client.graders.create.function({ key, source, language, description, samples })
        : await state.client.graders.update({ graderKey: key, source, language, description, samples });
    box.hidden = true;
    const what = mode === "create" ? "created" : `saved version ${g.version} of`;
    const report = "report" in g ? (g as UpdateResult).report : undefined;
    const changed = report?.samples ? `; ${report.changed.length} of ${report.samples} samples changed score` : "";
    status(`${what} ${g.key}${g.warnings.length ? ` (${g.warnings.length} warnings)` : ""}${changed}`, true);
    await open(g.key);
    if (report && !(g as UpdateResult).unchanged) showReport(report, `the update to version ${g.version}`);
  } catch (error) {
    showError(box, error, source, language, mode === "update" ? "save" : undefined);
  }
}

/** The language chosen for the source in the editor. */
export const editorLanguage = () => $<HTMLSelectElement>("#create-language").value as Language;

/** Pasted text that reads as Python: its first line a def, an import, or a from-import. */
const PYTHON_START = /^\s*(?:async\s+def|def|import|from\s+[\w.]+\s+import)\s/;

export function wire(): void {
  // an uploaded file's name says its language; a paste into the empty editor is looked at
  $("#create-file").addEventListener("change", async () => {
    const file = $<HTMLInputElement>("#create-file").files?.[0];
    if (!file) return;
    $<HTMLTextAreaElement>("#create-source").value = await file.text();
    const language = languageOfFile(file.name);
    if (language) $<HTMLSelectElement>("#create-language").value = language;
  });
  $("#create-source").addEventListener("paste", (event) => {
    const text = (event as ClipboardEvent).clipboardData?.getData("text") ?? "";
    const editor = $<HTMLTextAreaElement>("#create-source");
    if (editor.selectionStart === 0 && editor.selectionEnd === editor.value.length) {
      $<HTMLSelectElement>("#create-language").value = PYTHON_START.test(text) ? "python" : "typescript";
    }
  });
  $("#new-grader").addEventListener("click", () => showEditor());
  // the detail panel's button, for what it opens
  $("#edit").addEventListener("click", () => void editSelected());
  $("#create-submit").addEventListener("click", () => void create("create"));
  $("#update-submit").addEventListener("click", () => void create("update"));
}
