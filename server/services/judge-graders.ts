// Registering judge graders (a binary judge's template must render on its samples first), and
// the prompt a judge would send for a thread.

import { MOCK_THREAD } from "../../sandbox/validate/checks.ts";
import type { WireThread } from "../../sdk/thread.ts";
import { AppError } from "../errors.ts";
import type { Grading } from "../grading.ts";
import { judgeItemError } from "../judges/judges.ts";
import { binaryPrompt, binaryTemplate, ThreadUnfit } from "../judges/kinds.ts";
import type { BinaryJudgeSpec, JudgeSpec } from "../judges/spec.ts";
import { type CompiledTemplate, TemplateError } from "../judges/template.ts";
import type { GraderRow } from "../store/graders.ts";
import type { Store } from "../store.ts";

/** A binary judge's template must compile and render on every sample thread (or on the built-in one). */
function checkTemplate(spec: BinaryJudgeSpec, samples: readonly WireThread[]): void {
  const refuse = (message: string, line?: number, column?: number) => {
    throw new AppError("VALIDATION_FAILED", `template check failed: ${message}`, {
      check: "template",
      message,
      ...(line === undefined ? {} : { line, column }),
    });
  };
  let template: CompiledTemplate;
  try {
    template = binaryTemplate(spec);
  } catch (error) {
    if (error instanceof TemplateError) refuse(error.message, error.line, error.column);
    throw error;
  }
  const threads = samples.length ? samples : [MOCK_THREAD as unknown as WireThread];
  for (const [i, thread] of threads.entries()) {
    const where = samples.length ? `sample ${i}` : "the built-in sample thread";
    try {
      binaryPrompt(spec, template, thread);
    } catch (error) {
      if (error instanceof TemplateError) refuse(`it fails on ${where}: ${error.message}`, error.line, error.column);
      if (error instanceof ThreadUnfit) refuse(`${where}: ${error.message}`);
      throw error;
    }
  }
}

export class JudgeGraders {
  private readonly store: Store;
  private readonly grading: Grading;

  constructor(store: Store, grading: Grading) {
    this.store = store;
    this.grading = grading;
  }

  /** Stores a judge grader; its model must be one of the project's, and a binary judge's template must render on `samples`. */
  async create(project: string, g: { key: string; description: string; spec: JudgeSpec; samples?: WireThread[] }): Promise<GraderRow> {
    if (g.spec.type === "binary") {
      await this.store.mustGetModel(project, g.spec.model);
      checkTemplate(g.spec, g.samples ?? []);
    }
    return this.store.insertJudge({ project, key: g.key, description: g.description, spec: g.spec });
  }

  /** The messages the judge grader `key` would send its model for the thread (its first request); nothing is sent. */
  async prompt(project: string, key: string, thread: WireThread) {
    const row = await this.store.mustGet(project, key);
    if (row.kind !== "judge")
      throw new AppError("INVALID_REQUEST", `grader "${row.key}" is a ${row.kind} grader; only judges have prompts`);
    try {
      return this.grading.judges.prompt(this.grading.judgeTarget(row), thread);
    } catch (error) {
      if (!(error instanceof TemplateError || error instanceof ThreadUnfit)) throw error;
      // over its budget, the render was a fault of the grader: answered once it is stored, as grading does
      await this.grading.faultsStored(row);
      const { code, message, line, column } = judgeItemError(error);
      throw new AppError(code, message, line === undefined ? {} : { line, column });
    }
  }
}
