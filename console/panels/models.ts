// Judge models: the table (each with Delete), the form that adds one, and the model picker of New judge.

import type { Model } from "../../sdk/index.ts";
import { $, el, row, rowOf, val } from "../dom.ts";
import { fail, inBox, status, underRow } from "../feedback.ts";
import { state } from "../state.ts";

export async function refreshModels(): Promise<void> {
  if (!state.client) return;
  const models = await state.client.models.list();
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
  $("#judge-no-model").hidden = models.length > 0;
}

function modelRow(m: Model): HTMLTableRowElement {
  const tr = row([m.key, m.model, m.baseURL, String(m.maxConcurrency)]);
  // where the key sent to baseURL comes from, under it (a column of its own would not fit a narrow window)
  const apiKey = m.apiKeySecret ? `key from secret ${m.apiKeySecret}` : m.apiKeyEnv ? `key from ${m.apiKeyEnv}` : "";
  if (apiKey) tr.cells[2]?.append(el("div", apiKey, "key-source"));
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
  if (!state.client) return;
  try {
    const concurrency = val("#model-concurrency").trim();
    const m = await state.client.models.create({
      key: val("#model-key").trim(),
      baseURL: val("#model-base-url").trim(),
      model: val("#model-name").trim(),
      maxConcurrency: concurrency ? Number(concurrency) : undefined,
    });
    $<HTMLFormElement>("#model-form").reset();
    inBox($("#model-error"))();
    status(`added model ${m.key}`, true);
    await refreshModels();
  } catch (error) {
    fail(error, inBox($("#model-error")), "cannot add the model: ");
  }
}

async function deleteModel(key: string): Promise<void> {
  if (!state.client || !confirm(`Delete model "${key}"?`)) return;
  try {
    await state.client.models.delete({ modelKey: key });
    status(`deleted model ${key}`, true);
    await refreshModels();
  } catch (error) {
    fail(error, underRow(rowOf("#models", key), $("#model-error")));
  }
}

export function wire(): void {
  $("#model-form").addEventListener("submit", (e) => {
    e.preventDefault();
    void createModel();
  });
}
