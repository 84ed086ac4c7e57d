// What the panels share: the connected client and the grader open in the detail panel.

import type { Gradebox } from "../sdk/index.ts";

export const state: {
  /** set once an API key is accepted */
  client?: Gradebox;
  /** the key of the grader open in the detail panel */
  selected?: string;
} = {};
