// New judge: binary (criteria, optional template), a pre-built RAG metric, or a rubric.

import type { CannotAssessStrategy, Gradebox, GraderWithSource, PrebuiltJudgeType, RubricCriterionInput } from "../../sdk/index.ts";
import { $, showPanel, val } from "../dom.ts";
import { inBox, showError, status } from "../feedback.ts";
import { parseItems } from "../parse.ts";
import { state } from "../state.ts";
import { open } from "./detail.ts";

/** What to do when the project has no model for a judge to call. */
export const NO_MODEL =
  "Register a judge model first: add one under Judge models (a key, its OpenAI-compatible baseURL and the model name), or run `gradebox models create`.";

/** Shows the judge editor with the fields of the chosen kind (and, with no model registered, how to register one). */
function showJudgeEditor(): void {
  showPanel("judge-create");
  $("#judge-error").hidden = true;
  $("#judge-no-model").hidden = $<HTMLSelectElement>("#judge-model").options.length > 0;
  showJudgeKind();
}

function showJudgeKind(): void {
  const kind = val("#judge-kind");
  for (const fields of document.querySelectorAll<HTMLElement>("#judge-create [data-kind]")) fields.hidden = fields.dataset.kind !== kind;
}

async function createJudge(): Promise<void> {
  if (!state.client) return;
  const box = $("#judge-error");
  if (!val("#judge-model")) {
    // the server would answer that "" is not a model key; the user needs to know there is none
    $("#judge-no-model").hidden = false;
    return inBox(box)(NO_MODEL);
  }
  try {
    const g = await postJudge(state.client, val("#judge-kind"));
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

export function wire(): void {
  $("#new-judge").addEventListener("click", () => showJudgeEditor());
  $("#judge-kind").addEventListener("change", () => showJudgeKind());
  $("#judge-submit").addEventListener("click", () => void createJudge());
}
