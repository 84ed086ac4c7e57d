// New code grader: its languages, comparison, scoring and limits per test; every field has a default.

import type { CreateCodeParams } from "../../sdk/index.ts";
import { $, showPanel, val } from "../dom.ts";
import { showError, status } from "../feedback.ts";
import { state } from "../state.ts";
import { open } from "./detail.ts";

async function createCode(): Promise<void> {
  if (!state.client) return;
  const box = $("#code-error");
  const numberIn = (sel: string) => (val(sel).trim() ? Number(val(sel)) : undefined);
  const checked = (sel: string) => $<HTMLInputElement>(sel).checked;
  try {
    const languages = [
      ...(checked("#code-python") ? (["python"] as const) : []),
      ...(checked("#code-javascript") ? (["javascript"] as const) : []),
      ...(checked("#code-typescript") ? (["typescript"] as const) : []),
    ];
    const limits = { cpuMs: numberIn("#code-cpu-ms"), memoryMb: numberIn("#code-memory-mb") };
    const g = await state.client.graders.create.code({
      key: val("#code-key").trim(),
      description: val("#code-description"),
      languages,
      compare: val("#code-compare") as CreateCodeParams["compare"],
      scoring: checked("#code-all-or-nothing") ? "all_or_nothing" : "fraction",
      limits,
    });
    box.hidden = true;
    status(`created ${g.key} (code grader)`, true);
    await open(g.key);
  } catch (error) {
    showError(box, error);
  }
}

export function wire(): void {
  $("#new-code").addEventListener("click", () => {
    showPanel("code-create");
    $("#code-error").hidden = true;
  });
  $("#code-submit").addEventListener("click", () => void createCode());
}
