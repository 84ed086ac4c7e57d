// Grading with judge graders, in the API process (no user code runs here: a template is data,
// rendered under a meter). Items of a batch run concurrently up to the model's limit and come
// back in order; a model's failures become the item's error, never the request's.

import type { Dispatcher } from "undici";
import type { GradeOutcome } from "../../sandbox/validate/checks.ts";
import type { WireThread } from "../../sdk/thread.ts";
import type { Metrics } from "../metrics.ts";
import type { OutboundGate } from "../outbound.ts";
import { PROMPTS_OVER_BUDGET, type RequestWork } from "../request-work.ts";
import { DeadlineError, deadlineAbstention, itemErrorOf, type OutboundOptions, outcomeLabel, UpstreamError } from "../upstream.ts";
import {
  type Ask,
  binaryPrompt,
  binaryTemplate,
  gradeBinary,
  gradePrebuilt,
  gradeRubric,
  prebuiltFirstPrompt,
  rubricPrompt,
  ThreadUnfit,
} from "./kinds.ts";
import { type ChatMessage, ModelClient, type Usage } from "./model-client.ts";
import { firstJsonObject } from "./reply.ts";
import type { JudgeSpec, ModelRow } from "./spec.ts";
import { BUDGET_TEXT, type CompiledTemplate, MAX_PROMPT_CHARS, TemplateError } from "./template.ts";

/** A judge grader as grading needs it. */
export interface JudgeTarget {
  id: string;
  project: string;
  key: string;
  spec: JudgeSpec;
  modelId: string;
}

const MAX_TEMPLATES = 1000;
const REASK_ECHO_CHARS = 4000;

type ItemError = Extract<GradeOutcome, { error: unknown }>["error"];

export class Judges {
  private readonly clients = new Map<string, Promise<ModelClient>>();
  // compiled once per grader and process; a grader's spec never changes (a new one is a new id)
  private readonly templates = new Map<string, CompiledTemplate>();

  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly metrics: Metrics,
    /** read once per model and process: a model never changes, and cannot be deleted while a grader uses it */
    private readonly loadModel: (id: string) => Promise<ModelRow>,
    /** a model's API key, the node's outbound gate, and where a grader's fault goes (its template over its budget) */
    private readonly options: {
      /** a model's API key, read from its project's secrets on every call */
      apiKey?: (model: ModelRow) => Promise<string | undefined>;
      /** the node's outbound calls, shared fairly between projects */
      gate?: OutboundGate;
      /** counted towards the grader's quarantine like a worker it took down */
      onFault?: (graderId: string, reason: string) => void;
    } = {},
  ) {}

  private client(modelId: string): Promise<ModelClient> {
    let client = this.clients.get(modelId);
    if (!client) {
      client = this.loadModel(modelId).then(
        (model) => new ModelClient(model, this.dispatcher, async () => this.options.apiKey?.(model), this.options.gate?.for(model.project)),
      );
      this.clients.set(modelId, client);
      client.catch(() => this.clients.delete(modelId));
    }
    return client;
  }

  /** Drops a deleted model's client (its limits and breaker) and a deleted grader's template. */
  forget(id: string): void {
    this.clients.delete(id);
    this.templates.delete(id);
  }

  private template(target: JudgeTarget): CompiledTemplate {
    let template = this.templates.get(target.id);
    if (!template) {
      if (target.spec.type !== "binary") throw new Error("only binary judges have templates");
      template = binaryTemplate(target.spec);
      if (this.templates.size >= MAX_TEMPLATES) this.templates.delete(this.templates.keys().next().value as string);
      this.templates.set(target.id, template);
    }
    return template;
  }

  /** The (first) prompt the judge sends for `thread`; throws TemplateError or ThreadUnfit. */
  prompt(target: JudgeTarget, thread: WireThread): ChatMessage[] {
    const { spec } = target;
    if (spec.type === "rubric") return rubricPrompt(spec, thread);
    if (spec.type === "prebuilt") return prebuiltFirstPrompt(spec, thread);
    try {
      return binaryPrompt(spec, this.template(target), thread);
    } catch (error) {
      this.faultIfOverBudget(target, error);
      throw error;
    }
  }

  /** A render over its budget is the grader's fault: one per request, however many of its threads would have gone over. */
  private faultIfOverBudget(target: JudgeTarget, error: unknown): boolean {
    if (!(error instanceof TemplateError && error.overBudget)) return false;
    this.options.onFault?.(target.id, error.message);
    return true;
  }

  async grade(target: JudgeTarget, threads: readonly WireThread[], { deadline, work }: OutboundOptions = {}): Promise<GradeOutcome[]> {
    const client = await this.client(target.modelId);
    const label = `${target.project}/${client.spec.key}`;
    // a template that blew its budget once fails the rest of the batch without rendering again
    let budgetBlown: ItemError | undefined;
    return Promise.all(
      threads.map((thread) =>
        client.upstream
          .withSlot(async (): Promise<GradeOutcome> => {
            if (budgetBlown) return { error: budgetBlown };
            const usage: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
            const ask = this.asker(client, label, usage, deadline);
            try {
              const { spec } = target;
              // a prompt holds the thread's text: its size is known before any prompt is built
              const chars = threadChars(thread);
              if (spec.type !== "binary" && chars > MAX_PROMPT_CHARS) {
                throw new ThreadUnfit(
                  `the thread is ${chars} characters; a judge sends a model at most ${BUDGET_TEXT} characters of prompt`,
                );
              }
              if (work && !work.takePrompt(chars)) return { error: { code: "GRADER_ERROR", message: PROMPTS_OVER_BUDGET } };
              const scored =
                spec.type === "binary"
                  ? await gradeBinary(ask, this.rendered(binaryPrompt(spec, this.template(target), thread), chars, work))
                  : spec.type === "prebuilt"
                    ? await gradePrebuilt(ask, spec, thread)
                    : await gradeRubric(ask, spec, rubricPrompt(spec, thread));
              if ("invalid" in scored) return { error: { code: "INVALID_SCORE", message: scored.invalid } };
              // a binary judge's feedback key names what its score is, in every result (Adaptive writes scores to it)
              const feedbackKey = spec.type === "binary" && spec.feedbackKey !== undefined ? { feedbackKey: spec.feedbackKey } : {};
              return { ...scored, metadata: { ...scored.metadata, ...feedbackKey, model: client.spec.key, usage } };
            } catch (error) {
              if (error instanceof DeadlineError) return deadlineAbstention();
              const item = judgeItemError(error);
              // one fault per batch: the items after it are not rendered
              if (!budgetBlown && this.faultIfOverBudget(target, error)) {
                budgetBlown = {
                  code: item.code,
                  message: `the template was not rendered for this thread: an earlier thread of this batch went over its budget of ${BUDGET_TEXT} characters`,
                };
              }
              return { error: item };
            }
          }, deadline)
          .catch((error) => {
            // still waiting for a slot when the deadline came: never sent
            if (error instanceof DeadlineError) return deadlineAbstention();
            throw error;
          }),
      ),
    );
  }

  /** A binary judge's rendered prompt, its size past the thread's taken from the request's budget (a template may repeat the thread). */
  private rendered(messages: ChatMessage[], taken: number, work: RequestWork | undefined): ChatMessage[] {
    const extra = messages.reduce((n, m) => n + m.content.length, 0) - taken;
    if (work && extra > 0 && !work.takePrompt(extra)) throw new PromptsOverBudget();
    return messages;
  }

  /** Asks for JSON, re-asks once on an unreadable reply, and meters every call. */
  private asker(client: ModelClient, label: string, usage: Usage, deadline?: AbortSignal): Ask {
    const call = async (messages: ChatMessage[], schema: { name: string; schema: Record<string, unknown> }) => {
      const started = performance.now();
      try {
        const reply = await client.chat(messages, schema, deadline);
        usage.promptTokens += reply.usage.promptTokens;
        usage.completionTokens += reply.usage.completionTokens;
        usage.totalTokens += reply.usage.totalTokens;
        this.metrics.judgeCall(label, "ok", (performance.now() - started) / 1000, reply.usage);
        return reply.content;
      } catch (error) {
        this.metrics.judgeCall(label, outcomeLabel(error), (performance.now() - started) / 1000);
        throw error;
      }
    };
    return async (messages, output) => {
      const schema = { name: output.name, schema: output.schema };
      const first = await call(messages, schema);
      const read = (text: string) => {
        const value = firstJsonObject(text);
        return value ? output.read(value) : { wrong: "the reply holds no JSON object" };
      };
      const answer = read(first);
      if (!isWrong(answer)) return answer;
      const again = await call(
        [
          ...messages,
          { role: "assistant", content: first.slice(0, REASK_ECHO_CHARS) },
          {
            role: "user",
            content: `That reply cannot be used: ${answer.wrong}. Reply again with only a JSON object matching this JSON schema:\n${JSON.stringify(output.schema)}`,
          },
        ],
        schema,
      );
      const second = read(again);
      if (isWrong(second)) {
        metricsInvalid(this.metrics, label);
        throw new UpstreamError("invalid", `the judge's reply has no usable verdict, asked twice: ${second.wrong}`);
      }
      return second;
    };
  }
}

const isWrong = (v: unknown): v is { wrong: string } => v !== null && typeof v === "object" && "wrong" in v && !Array.isArray(v);
const metricsInvalid = (metrics: Metrics, label: string) => metrics.judgeCall(label, "invalid_output");

/** Why a judge could not grade an item: its model, its template on this thread, or the thread. */
/** The request's prompt budget ran out before this thread's prompt could be sent. */
class PromptsOverBudget extends Error {}

/** Characters of a thread's turns: what any prompt made of it holds at least once. */
const threadChars = (thread: WireThread) => thread.turns.reduce((n, t) => n + t.content.length, 0);

export function judgeItemError(error: unknown): ItemError {
  if (error instanceof PromptsOverBudget) return { code: "GRADER_ERROR", message: PROMPTS_OVER_BUDGET };
  if (error instanceof TemplateError) {
    return {
      code: "GRADER_ERROR",
      message: `the template failed on this thread: ${error.message}`,
      ...(error.line === undefined ? {} : { line: error.line, column: error.column ?? 1 }),
    };
  }
  if (error instanceof ThreadUnfit) return { code: "INVALID_THREAD", message: error.message };
  return itemErrorOf(error, { unavailable: "JUDGE_UNAVAILABLE", invalid: "JUDGE_INVALID_OUTPUT" });
}
