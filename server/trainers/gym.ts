// NeMo Gym's resources server, as NeMo-RL and Gym's agents call it: /seed_session, /verify and
// /aggregate_metrics at the root of a host and port. Pure functions: routes/gym.ts authenticates,
// grades and sends.
//
// /verify receives the dataset row (every field, nulls included) with `responses_create_params`
// (the model's input) and `response` (the Responses object the model answered, whose output
// items carry the token ids NeMo-RL trains on). The answer is that body echoed byte for byte —
// not parsed and re-serialised, which would rewrite numbers (1.0 becomes 1, a long float's digits
// change) — with `reward`, `reward_components` and `gradebox` appended as its last members.

import type { GradeOutcome } from "../../sandbox/validate/checks.ts";
import { type Outcomeish, summarize } from "../../sdk/summary.ts";
import { ROLES, type Role, type WireThread, type WireTurn } from "../../sdk/thread.ts";
import type { Config } from "../config.ts";
import { AppError } from "../errors.ts";
import { MAX_METADATA_DEPTH, nestsDeeperThan } from "../schemas.ts";
import type { Refused } from "./openrlhf.ts";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The text of a message's content: a string, or its text parts joined (images and other parts have none). */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => {
      if (!isObject(part)) return "";
      if (typeof part.text === "string") return part.text;
      if (typeof part.refusal === "string") return part.refusal;
      return "";
    })
    .join("");
}

/**
 * A Responses role as a thread's: the five roles pass as they are; `developer` (OpenAI's name for
 * system instructions to reasoning models) is a system turn. Another role refuses the thread.
 */
function roleOf(role: unknown): Role | undefined {
  if (role === "developer") return "system";
  return typeof role === "string" && (ROLES as readonly string[]).includes(role) ? (role as Role) : undefined;
}

interface Converted {
  turns: WireTurn[];
  toolCalls: Json[];
  unknownRole?: unknown;
}

/** Responses items (input or output) as turns: messages by their role, tool calls as the assistant's, tool outputs as tool turns. */
function itemsToTurns(items: unknown[], defaultRole: Role, into: Converted): void {
  for (const item of items) {
    if (typeof item === "string") {
      into.turns.push({ role: defaultRole, content: item });
      continue;
    }
    if (!isObject(item)) continue;
    const type = item.type ?? "message";
    if (type === "message") {
      const role = item.role === undefined ? defaultRole : roleOf(item.role);
      if (role === undefined) {
        into.unknownRole ??= item.role;
        continue;
      }
      into.turns.push({ role, content: textOf(item.content) });
    } else if (type === "function_call") {
      const call = { name: item.name, arguments: item.arguments, call_id: item.call_id };
      into.toolCalls.push(call);
      into.turns.push({ role: "assistant", content: JSON.stringify({ type: "function_call", ...call }) });
    } else if (type === "function_call_output") {
      into.turns.push({ role: "tool", content: typeof item.output === "string" ? item.output : JSON.stringify(item.output ?? null) });
    }
    // reasoning items and others say nothing a grader reads as the answer: left out
  }
}

/**
 * The verify body's thread: `instructions` as a system turn, the input's items, then the
 * response's output items; metadata: every other field of the row as it came (nulls included),
 * and `tool_calls` (the calls the response made) unless the row has a field of that name.
 */
export function threadOfVerify(body: Json, config: Pick<Config, "maxTurns" | "maxContent">): WireThread | Refused {
  const params = isObject(body.responses_create_params) ? body.responses_create_params : {};
  const converted: Converted = { turns: [], toolCalls: [] };
  if (typeof params.instructions === "string" && params.instructions !== "") {
    converted.turns.push({ role: "system", content: params.instructions });
  }
  const input = params.input;
  itemsToTurns(typeof input === "string" ? [input] : Array.isArray(input) ? input : [], "user", converted);
  const output = isObject(body.response) && Array.isArray(body.response.output) ? body.response.output : [];
  itemsToTurns(output, "assistant", converted);
  if (converted.unknownRole !== undefined) {
    return {
      code: "INVALID_THREAD",
      message: `a message has role ${JSON.stringify(converted.unknownRole)}; a thread's roles are ${ROLES.join(", ")} (and developer, read as system)`,
    };
  }
  const { turns } = converted;
  if (turns.length === 0) return { code: "INVALID_THREAD", message: "the row has no input and its response no output: nothing to grade" };
  if (turns.length > config.maxTurns) {
    return {
      code: "INVALID_THREAD",
      message: `the conversation has ${turns.length} turns, more than ${config.maxTurns} (GRADEBOX_MAX_TURNS)`,
    };
  }
  if (turns.some((t) => t.content.length > config.maxContent)) {
    return { code: "CONTENT_TOO_LONG", message: `a turn is longer than ${config.maxContent} characters (GRADEBOX_MAX_CONTENT)` };
  }
  const metadata: Json = {};
  for (const [key, value] of Object.entries(body)) {
    if (key !== "responses_create_params" && key !== "response") metadata[key] = value;
  }
  if (!Object.hasOwn(metadata, "tool_calls")) metadata.tool_calls = converted.toolCalls;
  if (nestsDeeperThan(metadata, MAX_METADATA_DEPTH)) {
    return { code: "INVALID_THREAD", message: `the row's fields nest more than ${MAX_METADATA_DEPTH} levels` };
  }
  return { turns, metadata };
}

const WEIGHT_SUM_TOLERANCE = 1e-9;

/**
 * reward_components, which NeMo Gym requires to sum to the reward: a weighted combined grader's
 * parts, each its share (score × normalised weight, which is how the reward was made); any other
 * result is one component named after the grader, equal to the reward.
 */
export function rewardComponents(outcome: GradeOutcome | Refused, reward: number, grader: string): Record<string, number> {
  if ("score" in outcome && Array.isArray(outcome.subscores) && outcome.subscores.length > 0) {
    const shares = new Map<string, number>();
    let sum = 0;
    let additive = true;
    for (const s of outcome.subscores as unknown[]) {
      const part = isObject(s) ? s : {};
      const { name, score, weight } = part;
      if (typeof name !== "string" || typeof score !== "number" || typeof weight !== "number" || shares.has(name)) {
        additive = false;
        break;
      }
      const share = score * weight;
      if (!Number.isFinite(share)) {
        additive = false;
        break;
      }
      shares.set(name, share);
      sum += share;
    }
    if (additive && Math.abs(sum - reward) <= WEIGHT_SUM_TOLERANCE * Math.max(1, Math.abs(reward))) return Object.fromEntries(shares);
  }
  return { [grader]: reward };
}

/** What a verify answer says of its result besides the reward (Gym keeps fields it does not know; /aggregate_metrics reads it back). */
export function resultNote(outcome: GradeOutcome | Refused, provenance: { grader: string; version?: number }) {
  const base = { grader: provenance.grader, ...(provenance.version === undefined ? {} : { version: provenance.version }) };
  if ("score" in outcome) return { outcome: "scored", ...base, ...(outcome.reason === undefined ? {} : { reason: outcome.reason }) };
  if ("abstained" in outcome) return { outcome: "abstained", ...base, abstained: outcome.abstained };
  if ("error" in outcome) return { outcome: "error", ...base, error: { code: outcome.error.code, message: outcome.error.message } };
  return { outcome: "error", ...base, error: { code: outcome.code, message: outcome.message } };
}

/**
 * The body's text with `additions` as its last members: every byte the client sent stays as it
 * was. `body` is the same text parsed (a JSON object: the caller checked). A field the body
 * already had under an added name is written again after it, and JSON parsers keep the last.
 */
export function appendMembers(raw: string, body: Json, additions: Json): string {
  const end = raw.lastIndexOf("}");
  if (end < 0) throw new AppError("INVALID_REQUEST", "the verify body is not a JSON object");
  const members = Object.entries(additions)
    .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`)
    .join(",");
  const separator = Object.keys(body).length === 0 ? "" : ",";
  return `${raw.slice(0, end)}${separator}${members}${raw.slice(end)}`;
}

const TASK_INDEX = "_ng_task_index";

/** A verify answer as summarize reads it: its outcome from our note, its reward as the score. */
function outcomeishOf(vr: Json): Outcomeish {
  const note = isObject(vr.gradebox) ? vr.gradebox : {};
  const outcome = note.outcome === "abstained" || note.outcome === "error" ? note.outcome : "scored";
  return {
    outcome,
    score: vr.reward,
    ...(outcome === "error" ? { error: note.error ?? {} } : {}),
    ...(outcome === "abstained" ? { abstained: note.abstained ?? {} } : {}),
  };
}

function rewardStats(results: Outcomeish[]): Json {
  const s = summarize(results);
  return {
    "mean/reward": s.mean,
    "std/reward": s.std,
    "min/reward": s.min,
    "max/reward": s.max,
    "median/reward": s.quantiles?.p50 ?? null,
    count: s.count,
    scored: s.outcomes.scored,
    abstained: s.outcomes.abstained,
    errored: s.outcomes.error,
  };
}

/**
 * /aggregate_metrics: Gym's three blocks from sdk/summary.ts's summarize. group_level_metrics: one
 * entry per task (`_ng_task_index`, 0 when absent), in task order; agent_metrics: the whole
 * batch, with the group statistics (mean of each task's best and of its means) and the mean of
 * each reward component; key_metrics: the `mean/…` entries, as Gym's own default picks them.
 * Statistics are over scored results only: a sample rewarded with the fallback is counted as
 * abstained or errored, not averaged as if it were a score.
 */
export function aggregateMetrics(verifyResponses: Json[]) {
  const results = verifyResponses.map(outcomeishOf);
  const tasks = verifyResponses.map((vr) => (typeof vr[TASK_INDEX] === "number" ? (vr[TASK_INDEX] as number) : 0));
  const byTask = new Map<number, number[]>();
  tasks.forEach((t, i) => {
    const members = byTask.get(t);
    if (members) members.push(i);
    else byTask.set(t, [i]);
  });
  const group_level_metrics = [...byTask.keys()]
    .sort((a, b) => a - b)
    .map((task) => ({ [TASK_INDEX]: task, ...rewardStats((byTask.get(task) ?? []).map((i) => results[i] as Outcomeish)) }));
  const grouped = summarize(results, { groups: tasks }).groups;
  const agent_metrics: Json = {
    ...rewardStats(results),
    "mean_of_best/reward": grouped?.meanOfBest ?? null,
    "mean_of_means/reward": grouped?.meanOfMeans ?? null,
  };
  const components = new Map<string, number[]>();
  verifyResponses.forEach((vr, i) => {
    if (results[i]?.outcome !== "scored" || !isObject(vr.reward_components)) return;
    for (const [name, value] of Object.entries(vr.reward_components)) {
      if (typeof value !== "number" || !Number.isFinite(value)) continue;
      const values = components.get(name);
      if (values) values.push(value);
      else components.set(name, [value]);
    }
  });
  for (const [name, values] of components) {
    agent_metrics[`mean/reward_components/${name}`] = values.reduce((a, b) => a + b, 0) / values.length;
  }
  const key_metrics = Object.fromEntries(Object.entries(agent_metrics).filter(([k]) => k.startsWith("mean/")));
  return { group_level_metrics, agent_metrics, key_metrics };
}
