// The graders list: one row per grader; a click opens it in the detail panel.

import type { Grader } from "../../sdk/index.ts";
import { $, row, rowOf, when } from "../dom.ts";
import { fail, underRow } from "../feedback.ts";
import { state } from "../state.ts";
import { open } from "./detail.ts";

export async function refresh(): Promise<void> {
  if (!state.client) return;
  const graders = await state.client.graders.list();
  const body = $("#graders tbody");
  body.replaceChildren(
    ...graders.map((g: Grader) => {
      const tr = row([
        g.key,
        g.kind,
        g.language ?? "",
        String(g.version),
        g.description,
        g.locked ? "locked" : "",
        String(g.warnings.length),
        // the day only: the list must fit half a window (the open grader's versions give the time)
        g.createdAt.slice(0, 10),
      ]);
      tr.cells[7].title = when(g.createdAt);
      tr.dataset.key = g.key;
      if (g.key === state.selected) tr.className = "selected";
      tr.addEventListener("click", () => open(g.key).catch((error) => fail(error, underRow(rowOf("#graders", g.key), $("#detail-error")))));
      return tr;
    }),
  );
}
