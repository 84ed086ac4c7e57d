// New endpoint: a reward server's URL and how to call it; the server reads /info and /metadata_schema.

import { $, showPanel, val } from "../dom.ts";
import { showError, status } from "../feedback.ts";
import { state } from "../state.ts";
import { open } from "./detail.ts";

/** Shows the endpoint form. */
function showEndpointEditor(): void {
  showPanel("endpoint-create");
  $("#endpoint-error").hidden = true;
}

async function createEndpoint(): Promise<void> {
  if (!state.client) return;
  const box = $("#endpoint-error");
  const numberIn = (sel: string) => (val(sel).trim() ? Number(val(sel)) : undefined);
  try {
    const batch = $<HTMLInputElement>("#endpoint-batch").checked;
    const g = await state.client.graders.create.externalEndpoint({
      key: val("#endpoint-key").trim(),
      url: val("#endpoint-url").trim(),
      description: val("#endpoint-description"),
      batch,
      batchSize: batch ? numberIn("#endpoint-batch-size") : undefined,
      maxConcurrency: numberIn("#endpoint-concurrency"),
      transport: val("#endpoint-transport") === "websocket" ? "websocket" : "http",
    });
    box.hidden = true;
    status(`created ${g.key} (${g.endpoint?.info.name ?? "endpoint"} ${g.endpoint?.info.version ?? ""})`, true);
    await open(g.key);
  } catch (error) {
    showError(box, error);
  }
}

export function wire(): void {
  $("#new-endpoint").addEventListener("click", () => showEndpointEditor());
  $("#endpoint-submit").addEventListener("click", () => void createEndpoint());
  $("#endpoint-batch").addEventListener("change", () => {
    $<HTMLInputElement>("#endpoint-batch-size").disabled = !$<HTMLInputElement>("#endpoint-batch").checked;
  });
}
