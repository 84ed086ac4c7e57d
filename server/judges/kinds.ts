// The three judge kinds: what each asks its model, in what JSON, and how the answers become a
// score. Every answer is read strictly (the shape asked for, one verdict per claim, chunk or
// criterion, in order, nothing unbounded); `ask` re-asks once and then gives up.

import type { GradeScore } from "../../sandbox/validate/checks.ts";
import { scoreRubric } from "../../sdk/graders.ts";
import type { WireThread } from "../../sdk/thread.ts";
import type { ChatMessage } from "./model-client.ts";
import type { BinaryJudgeSpec, PrebuiltJudgeSpec, RubricJudgeSpec } from "./spec.ts";
import { type CompiledTemplate, compileTemplate, formatTurns, splitThread, templateVariables } from "./template.ts";

/** A JSON answer the judge is asked for: its schema, and a reader that returns it or says what is wrong. */
export interface Output<T> {
  name: string;
  schema: Record<string, unknown>;
  read(value: Record<string, unknown>): T | { wrong: string };
}
export type Ask = <T>(messages: ChatMessage[], output: Output<T>) => Promise<T>;

/** A thread a judge cannot grade (the item's error, no model call made). */
export class ThreadUnfit extends Error {}

const MAX_CLAIMS = 64;
const MAX_REASON = 4000;

const str = (v: unknown, max = MAX_REASON) => (typeof v === "string" ? v.slice(0, max) : undefined);
const wrong = (message: string) => ({ wrong: message });

function object(properties: Record<string, unknown>): Record<string, unknown> {
  return { type: "object", properties, required: Object.keys(properties), additionalProperties: false };
}
const stringProp = { type: "string" };

// ---------------------------------------------------------------------------------------------
// Binary (PASS/FAIL) judge

export const BINARY_OUTPUT: Output<{ verdict: "PASS" | "FAIL"; reasoning: string }> = {
  name: "verdict",
  schema: object({ reasoning: stringProp, verdict: { type: "string", enum: ["PASS", "FAIL"] } }),
  read(v) {
    const verdict = str(v.verdict)?.trim().toUpperCase();
    if (verdict !== "PASS" && verdict !== "FAIL")
      return wrong(`"verdict" must be "PASS" or "FAIL", got ${JSON.stringify(v.verdict)?.slice(0, 80)}`);
    return { verdict, reasoning: str(v.reasoning) ?? "" };
  },
};

const SYSTEM = "You are a careful, impartial judge of AI assistant responses. You answer with one JSON object and nothing else.";

/** Ours, used when a binary judge has no template of its own. */
export const DEFAULT_BINARY_TEMPLATE = `Decide whether the assistant's final response meets the criteria.

Criteria:
{{{criteria}}}

Conversation before the response:
{{{context_str}}}

Response to judge:
{{{completion}}}

Think about the criteria step by step in "reasoning", then give "verdict": "PASS" if the response meets them, "FAIL" if it does not.
Reply with only a JSON object matching this JSON schema:
{{{output_schema}}}`;

const DEFAULT_BINARY = compileTemplate(DEFAULT_BINARY_TEMPLATE);

export function binaryTemplate(spec: BinaryJudgeSpec): CompiledTemplate {
  return spec.template === undefined ? DEFAULT_BINARY : compileTemplate(spec.template);
}

/** The prompt of a binary judge for one thread: our system message with our template, or the user's template alone. */
export function binaryPrompt(spec: BinaryJudgeSpec, template: CompiledTemplate, thread: WireThread): ChatMessage[] {
  const variables = templateVariables(thread, {
    outputSchema: BINARY_OUTPUT.schema,
    templateVariables: spec.templateVariables,
    criteria: spec.criteria,
  });
  if (!variables) throw new ThreadUnfit("a judge grades the final turn of a thread, which must be an assistant turn");
  const content = template.render(variables);
  return spec.template === undefined
    ? [
        { role: "system", content: SYSTEM },
        { role: "user", content },
      ]
    : [{ role: "user", content }];
}

export async function gradeBinary(ask: Ask, messages: ChatMessage[]): Promise<GradeScore> {
  const { verdict, reasoning } = await ask(messages, BINARY_OUTPUT);
  return { score: verdict === "PASS" ? 1 : 0, reason: reasoning, metadata: { verdict } };
}

// ---------------------------------------------------------------------------------------------
// Pre-built RAG judges

const CLAIMS_OUTPUT: Output<string[]> = {
  name: "claims",
  schema: object({ claims: { type: "array", items: stringProp } }),
  read(v) {
    if (!Array.isArray(v.claims)) return wrong('"claims" must be an array of strings');
    if (v.claims.length > MAX_CLAIMS) return wrong(`at most ${MAX_CLAIMS} claims`);
    if (!v.claims.every((c) => typeof c === "string" && c.trim())) return wrong("every claim must be a non-empty string");
    return (v.claims as string[]).map((c) => c.slice(0, MAX_REASON));
  },
};

/** One verdict per item, in order: `yes` is the verdict that counts. */
function verdictsOutput(count: number, yes: string, no: string): Output<Array<{ ok: boolean; reason: string }>> {
  return {
    name: "verdicts",
    schema: object({
      verdicts: {
        type: "array",
        items: object({ index: { type: "integer" }, reason: stringProp, verdict: { type: "string", enum: [yes, no] } }),
      },
    }),
    read(v) {
      if (!Array.isArray(v.verdicts)) return wrong('"verdicts" must be an array');
      if (v.verdicts.length !== count) return wrong(`expected ${count} verdicts, one per item in order, got ${v.verdicts.length}`);
      const out: Array<{ ok: boolean; reason: string }> = [];
      for (const [i, item] of v.verdicts.entries()) {
        if (!item || typeof item !== "object") return wrong(`verdict ${i + 1} is not an object`);
        const r = item as Record<string, unknown>;
        if (r.index !== undefined && r.index !== i + 1)
          return wrong(`verdict ${i + 1} has index ${JSON.stringify(r.index)}; verdicts go in order`);
        const verdict = str(r.verdict)?.trim().toUpperCase();
        if (verdict !== yes && verdict !== no) return wrong(`verdict ${i + 1} must be "${yes}" or "${no}"`);
        out.push({ ok: verdict === yes, reason: str(r.reason) ?? "" });
      }
      return out;
    },
  };
}

const numbered = (items: readonly string[]) => items.map((t, i) => `${i + 1}. ${t}`).join("\n");

function ragParts(thread: WireThread) {
  const split = splitThread(thread);
  if (!split) throw new ThreadUnfit("a judge grades the final turn of a thread, which must be an assistant turn");
  const documents = split.context.filter((t) => t.role === "document").map((t) => t.content);
  const question = split.lastUser < 0 ? "" : split.context[split.lastUser].content;
  return { completion: split.completion, documents, question };
}

function claimsPrompt(completion: string): ChatMessage[] {
  return [
    { role: "system", content: SYSTEM },
    {
      role: "user",
      content: `Break the response below into atomic, self-contained factual claims (each one sentence, understandable alone). Do not add claims it does not make.

Response:
${completion}

Reply with only a JSON object matching this JSON schema:
${JSON.stringify(CLAIMS_OUTPUT.schema)}`,
    },
  ];
}

/** The first prompt a pre-built judge sends for a thread (what "show prompt" displays). */
export function prebuiltFirstPrompt(spec: PrebuiltJudgeSpec, thread: WireThread): ChatMessage[] {
  const { completion, documents, question } = ragParts(thread);
  if (spec.metric === "CONTEXT_RELEVANCY") return chunksPrompt(question, documents);
  return claimsPrompt(completion);
}

function chunksPrompt(question: string, chunks: string[]) {
  const output = verdictsOutput(chunks.length, "RELEVANT", "IRRELEVANT");
  const messages: ChatMessage[] = [
    { role: "system", content: SYSTEM },
    {
      role: "user",
      content: `For each numbered context chunk, decide whether it is RELEVANT to answering the question (it holds information the answer needs) or IRRELEVANT.

Question:
${question}

Context chunks:
${numbered(chunks)}

Give one verdict per chunk, in order (index 1 to ${chunks.length}). Reply with only a JSON object matching this JSON schema:
${JSON.stringify(output.schema)}`,
    },
  ];
  return messages;
}

export async function gradePrebuilt(ask: Ask, spec: PrebuiltJudgeSpec, thread: WireThread): Promise<GradeScore> {
  const { completion, documents, question } = ragParts(thread);
  if (spec.metric !== "ANSWER_RELEVANCY" && documents.length === 0) {
    throw new ThreadUnfit(`${spec.metric} needs the retrieved context as document turns (one chunk per turn); this thread has none`);
  }
  if (spec.metric === "CONTEXT_RELEVANCY") {
    const verdicts = await ask(chunksPrompt(question, documents), verdictsOutput(documents.length, "RELEVANT", "IRRELEVANT"));
    return ratio(verdicts, documents, "chunk", "relevant chunks");
  }
  const claims = await ask(claimsPrompt(completion), CLAIMS_OUTPUT);
  if (claims.length === 0) {
    // nothing claimed: nothing unfaithful, and nothing that answers
    const score = spec.metric === "FAITHFULNESS" ? 1 : 0;
    return { score, reason: "the response makes no claims", metadata: { claims: 0 }, subscores: [] };
  }
  const [yes, no, task] =
    spec.metric === "FAITHFULNESS"
      ? ([
          "SUPPORTED",
          "UNSUPPORTED",
          `For each numbered claim, decide whether the context supports it: SUPPORTED if the context states or directly implies it, UNSUPPORTED otherwise (including claims the context does not mention).

Context:
${numbered(documents)}`,
        ] as const)
      : ([
          "RELEVANT",
          "IRRELEVANT",
          `For each numbered claim of a response, decide whether it is RELEVANT to answering the question, or IRRELEVANT (information the question did not ask for).

Question:
${question}`,
        ] as const);
  const output = verdictsOutput(claims.length, yes, no);
  const verdicts = await ask(
    [
      { role: "system", content: SYSTEM },
      {
        role: "user",
        content: `${task}

Claims:
${numbered(claims)}

Give one verdict per claim, in order (index 1 to ${claims.length}). Reply with only a JSON object matching this JSON schema:
${JSON.stringify(output.schema)}`,
      },
    ],
    output,
  );
  return ratio(verdicts, claims, "claim", spec.metric === "FAITHFULNESS" ? "supported claims" : "relevant claims");
}

function ratio(verdicts: Array<{ ok: boolean; reason: string }>, items: string[], what: "claim" | "chunk", counted: string): GradeScore {
  const ok = verdicts.filter((v) => v.ok).length;
  return {
    score: ok / items.length,
    reason: `${ok} of ${items.length} ${counted}`,
    metadata: { [`${what}s`]: items.length },
    subscores: verdicts.map((v, i) => ({
      name: `${what} ${i + 1}`,
      score: v.ok ? 1 : 0,
      value: v.ok ? 1 : 0,
      weight: 1,
      metadata: { [what]: items[i].slice(0, MAX_REASON), reason: v.reason },
    })),
  };
}

// ---------------------------------------------------------------------------------------------
// Rubric judges: one call judges every criterion. One prompt carries the conversation once
// (criteria × context tokens otherwise), and one round trip per item keeps a batch's latency
// that of a binary judge; autorubric's per-criterion mode buys independence between verdicts,
// which a user who needs it gets with one binary judge per criterion in a combined grader.

function rubricOutput(spec: RubricJudgeSpec): Output<Array<{ verdict: string; reason: string }>> {
  return {
    name: "rubric",
    schema: object({
      criteria: { type: "array", items: object({ name: stringProp, reason: stringProp, verdict: stringProp }) },
    }),
    read(v) {
      if (!Array.isArray(v.criteria)) return wrong('"criteria" must be an array');
      if (v.criteria.length !== spec.criteria.length) {
        return wrong(`expected ${spec.criteria.length} criteria in order, got ${v.criteria.length}`);
      }
      const out: Array<{ verdict: string; reason: string }> = [];
      for (const [i, item] of v.criteria.entries()) {
        const c = spec.criteria[i];
        const r = (item && typeof item === "object" ? item : {}) as Record<string, unknown>;
        if (r.name !== undefined && str(r.name)?.trim() !== c.name)
          return wrong(`criterion ${i + 1} must be "${c.name}"; criteria go in order`);
        const verdict = str(r.verdict, 200)?.trim() ?? "";
        const allowed = c.options ? [...c.options.map((o) => o.label), "CANNOT_ASSESS"] : ["MET", "UNMET", "CANNOT_ASSESS"];
        const match = allowed.find((a) => a.toLowerCase() === verdict.toLowerCase());
        if (!match) return wrong(`criterion "${c.name}": verdict must be one of ${allowed.map((a) => JSON.stringify(a)).join(", ")}`);
        out.push({ verdict: match, reason: str(r.reason) ?? "" });
      }
      return out;
    },
  };
}

export function rubricPrompt(spec: RubricJudgeSpec, thread: WireThread): ChatMessage[] {
  const split = splitThread(thread);
  if (!split) throw new ThreadUnfit("a judge grades the final turn of a thread, which must be an assistant turn");
  const criteria = spec.criteria
    .map((c, i) => {
      const answers = c.options
        ? `pick one option: ${c.options.map((o) => JSON.stringify(o.label)).join(", ")} (or "CANNOT_ASSESS")`
        : `MET, UNMET or CANNOT_ASSESS`;
      return `${i + 1}. ${c.name}${c.weight < 0 ? " (a fault: MET means the response has it)" : ""}: ${c.requirement}\n   Answer: ${answers}`;
    })
    .join("\n");
  return [
    { role: "system", content: SYSTEM },
    {
      role: "user",
      content: `Judge the assistant's final response against each criterion of the rubric. Answer CANNOT_ASSESS only when the conversation does not hold enough to decide.

Rubric:
${criteria}

Conversation before the response:
${formatTurns(split.context)}

Response to judge:
${split.completion}

Give one entry per criterion, in order, with its name, your reason and the verdict. Reply with only a JSON object matching this JSON schema:
${JSON.stringify(rubricOutput(spec).schema)}`,
    },
  ];
}

export async function gradeRubric(ask: Ask, spec: RubricJudgeSpec, messages: ChatMessage[]): Promise<GradeScore | { invalid: string }> {
  const verdicts = await ask(messages, rubricOutput(spec));
  const criteria = spec.criteria.map((c) => ({ name: c.name, requirement: c.requirement, weight: c.weight, options: c.options }));
  const score = scoreRubric(
    criteria,
    verdicts.map((v) => v.verdict),
    { cannotAssess: spec.cannotAssess, partialCredit: spec.partialCredit },
  );
  if (score === null) return { invalid: 'every criterion was CANNOT_ASSESS and cannotAssess is "skip": there is no score' };
  const met = verdicts.filter((v) => v.verdict === "MET").length;
  return {
    score,
    reason: `${met} of ${verdicts.length} criteria met`,
    metadata: { cannotAssess: verdicts.filter((v) => v.verdict === "CANNOT_ASSESS").length },
    subscores: verdicts.map((v, i) => {
      const c = spec.criteria[i];
      const score = c.options ? (c.options.find((o) => o.label === v.verdict)?.value ?? 0) : v.verdict === "MET" ? 1 : 0;
      return { name: c.name, score, value: score, weight: c.weight, metadata: { verdict: v.verdict, reason: v.reason } };
    }),
  };
}
