// Registering function and combined graders, and deleting a grader of any kind with what every
// node's sandbox, judges and endpoints keep of it. Judges and endpoints are registered by
// judge-graders.ts and endpoint-graders.ts.

import { createHash } from "node:crypto";
import type { Sandbox } from "../../sandbox/host/sandbox.ts";
import type { Language } from "../../sandbox/validate/checks.ts";
import { AppError } from "../errors.ts";
import type { Grading } from "../grading.ts";
import { type CombineMode, type GraderRow, sandboxId } from "../store/graders.ts";
import { byteSize } from "../store/quotas.ts";
import { graderExists } from "../store/rules.ts";
import type { Sample } from "../store/versions.ts";
import type { Store } from "../store.ts";
import type { Validation } from "./validation.ts";

/** A part as a create names it; its name defaults to its key. */
export interface PartRequest {
  graderKey: string;
  weight: number;
  name?: string;
  version?: number;
}

export class Graders {
  private readonly store: Store;
  private readonly sandbox: Pick<Sandbox, "forget">;
  private readonly validation: Validation;
  private readonly grading: Grading;

  constructor(store: Store, sandbox: Pick<Sandbox, "forget">, validation: Validation, grading: Grading) {
    this.store = store;
    this.sandbox = sandbox;
    this.validation = validation;
    this.grading = grading;
  }

  /** Stores a function grader once its source passes the five checks (and its samples score as expected). */
  async createFunction(
    project: string,
    g: { key: string; source: string; language: Language; description: string; samples?: Sample[] },
  ): Promise<GraderRow> {
    // answer a taken key before the five checks run; the insert still enforces it under races
    if (await this.store.get(project, g.key)) throw graderExists(project, g.key);
    // a project at its quota costs no sandbox time: the compiled script is not known yet, so its bytes are a lower bound
    await this.store.precheck(project, { grader: true, bytes: byteSize(g.source, JSON.stringify(g.samples ?? []), g.description) });
    const { compiled, warnings } = await this.validation.validate(project, g, undefined, g.samples);
    const sourceSha256 = createHash("sha256").update(g.source).digest("hex");
    const { key, source, language, description, samples } = g;
    return this.store.insert({ project, key, description, source, language, compiled, sourceSha256, warnings, samples });
  }

  /** Stores a combined grader; weighted mode needs a positive weight, and the weights a finite sum. */
  async createCombined(
    project: string,
    g: { key: string; mode: CombineMode; description: string; graders: PartRequest[] },
  ): Promise<GraderRow> {
    const parts = g.graders.map((p) => ({ graderKey: p.graderKey, name: p.name ?? p.graderKey, weight: p.weight, version: p.version }));
    if (g.mode === "weighted" && !(parts.filter((p) => p.weight > 0).reduce((a, p) => a + p.weight, 0) > 0)) {
      throw new AppError("INVALID_REQUEST", "weighted mode needs at least one part with a positive weight");
    }
    // 1e308 + 1e308 is Infinity: every score would then be 0 (or NaN)
    if (!Number.isFinite(parts.reduce((a, p) => a + Math.abs(p.weight), 0))) {
      throw new AppError(
        "INVALID_REQUEST",
        `the weights' absolute values must add up to a finite number (at most ${Number.MAX_VALUE}); scale them down, e.g. to sum to 1`,
      );
    }
    return this.store.insertCombined({ project, key: g.key, description: g.description, mode: g.mode, parts });
  }

  /** Deletes one stored version of a function grader (neither its current one nor a pinned one), and its warm isolates. */
  async deleteVersion(project: string, key: string, version: number): Promise<void> {
    const id = await this.store.deleteVersion(project, key, version);
    this.sandbox.forget([sandboxId(id, version)]);
  }

  /** Deletes a grader of any kind and every version of it. */
  async delete(project: string, key: string): Promise<void> {
    const { id, ids } = await this.store.delete(project, key);
    this.sandbox.forget(ids); // its warm isolates go in every worker now, not when the LRU reaches them
    this.grading.judges.forget(id);
    this.grading.endpoints.forget(id);
  }
}
