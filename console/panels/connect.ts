// The header: connect with an API key (again after a reload, from sessionStorage), then show the project.

import { connect, savedKey } from "../api.ts";
import { $ } from "../dom.ts";
import { errorText, status } from "../feedback.ts";
import { state } from "../state.ts";
import { refresh } from "./graders.ts";
import { refreshModels } from "./models.ts";

async function start(key: string): Promise<void> {
  const { client, project } = await connect(key);
  state.client = client;
  $("#who").textContent = `project ${project}`;
  $("#key-hint").hidden = true;
  $("main").hidden = false;
  status("");
  await Promise.all([refresh(), refreshModels()]);
}

export function wire(): void {
  $("#connect").addEventListener("submit", (e) => {
    e.preventDefault();
    start($<HTMLInputElement>("#api-key").value.trim()).catch((error) => status(errorText(error)));
  });
}

/** Connects with the key this tab used before a reload, if any. */
export function resume(): void {
  const saved = savedKey();
  if (!saved) return;
  $<HTMLInputElement>("#api-key").value = saved;
  start(saved).catch((error) => status(errorText(error)));
}
