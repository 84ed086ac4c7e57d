// /v1/projects/:project/graders — register, validate, list, get, lock, delete, grade.

import { createHash } from "node:crypto";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { CheckFailure, GradeOutcome } from "../../sandbox/checks.ts";
import { SandboxCrashError, type SandboxPool } from "../../sandbox/pool.ts";
import { checkNesting } from "../../sandbox/source-bounds.ts";
import type { WireThread } from "../../sdk/thread.ts";
import { authenticate } from "../auth.ts";
import { type Config, MAX_SOURCE_BYTES } from "../config.ts";
import { AppError } from "../errors.ts";
import type { Grading } from "../grading.ts";
import {
  CombineMode,
  Description,
  DescriptionUpdate,
  ErrorResponses,
  GradeResult,
  Grader,
  GraderDetail,
  GraderKey,
  GraderParams,
  GraderVersion,
  GraderVersionDetail,
  GradeScore,
  MAX_SAMPLES,
  ProjectParams,
  Source,
  threadSchema,
  UpdateResult,
  VersionNumber,
} from "../schemas.ts";
import { assertUpdatable, type GraderRow, graderExists, type Sample, type Store, sandboxId } from "../store.ts";
import type { ValidationLimiter } from "../validation-limit.ts";

export interface GraderRoutesOptions {
  config: Config;
  store: Store;
  pool: SandboxPool;
  validations: ValidationLimiter;
  grading: Grading;
}

export function summary(row: GraderRow): z.infer<typeof Grader> {
  // everything but the code, the parts, the judge's definition and the row ids
  const {
    id: _id,
    source: _source,
    compiled: _compiled,
    parts: _parts,
    judge: _judge,
    modelId: _modelId,
    endpoint: _endpoint,
    mode,
    ...rest
  } = row;
  return { ...rest, ...(mode ? { mode } : {}) };
}

export function detail(row: GraderRow): z.infer<typeof GraderDetail> {
  if (row.kind === "judge") return { ...summary(row), judge: row.judge };
  if (row.kind === "endpoint") return { ...summary(row), endpoint: row.endpoint };
  if (row.kind === "combined") {
    return {
      ...summary(row),
      parts: (row.parts ?? []).map(({ graderKey, name, weight, version, pinned }) => ({ graderKey, name, weight, version, pinned })),
    };
  }
  return { ...summary(row), source: row.source };
}

function checkSourceSize(source: string): void {
  const bytes = Buffer.byteLength(source, "utf8");
  if (bytes > MAX_SOURCE_BYTES) {
    throw new AppError("SOURCE_TOO_LARGE", `grader source is ${bytes} bytes of UTF-8; the limit is ${MAX_SOURCE_BYTES} (64 KiB)`, {
      limit: MAX_SOURCE_BYTES,
      size: bytes,
    });
  }
}

function checkBatch(count: number, config: Config): void {
  if (count > config.maxBatch) {
    throw new AppError("BATCH_TOO_LARGE", `a batch holds at most ${config.maxBatch} threads (GRADEBOX_MAX_BATCH); this one has ${count}`, {
      limit: config.maxBatch,
    });
  }
}

export async function graderRoutes(fastify: FastifyInstance, { config, store, pool, validations, grading }: GraderRoutesOptions) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addHook("onRequest", authenticate(store.keys));
  const Thread = threadSchema(config);
  const Samples = z
    .array(z.object({ thread: Thread, expected: z.number().finite().optional() }))
    .max(MAX_SAMPLES, `a grader carries at most ${MAX_SAMPLES} samples`)
    .describe("sample threads: test_run grades them (instead of the built-in one); an update reports how their scores change");

  const base = "/v1/projects/:project/graders";

  /** Runs the five checks; throws VALIDATION_FAILED with the failing check. */
  /** Runs the five checks; with samples, test_run grades them instead of the built-in sample thread. */
  async function validate(project: string, source: string, threads?: WireThread[], samples?: Sample[]) {
    validations.check(project);
    checkSourceSize(source);
    // before any parser: esbuild's time grows with the square (cube, for functions) of the nesting
    const tooDeep = checkNesting(source);
    if (tooDeep) {
      const { check, message, line, column } = tooDeep;
      throw new AppError("VALIDATION_FAILED", `${check} check failed: ${message}`, { check, message, line, column });
    }
    const withSamples = samples !== undefined && samples.length > 0;
    const graded = withSamples ? samples.map((x) => x.thread) : threads;
    const result = await pool.validate(project, source, graded, { mock: !withSamples }).catch((error: unknown) => {
      if (!(error instanceof SandboxCrashError)) throw error;
      // the module body or the test run took its worker down (V8 aborts on some OOM paths)
      const failure: CheckFailure = { check: "execution", message: `${error.code}: ${error.message}` };
      return { ok: false as const, failure };
    });
    if (!result.ok) {
      const { check, message, line, column, costly } = result.failure;
      if (costly) validations.record(project);
      throw new AppError("VALIDATION_FAILED", `${check} check failed: ${message}`, { check, message, line, column });
    }
    if (withSamples) checkSamples(samples, result.results ?? []);
    return result;
  }

  /** A sample that errors, or scores other than its `expected`, fails test_run with its index. */
  function checkSamples(samples: Sample[], results: GradeOutcome[]): void {
    const failed = (message: string, extra: Record<string, unknown>) => {
      throw new AppError("VALIDATION_FAILED", `test_run check failed: ${message}`, { check: "test_run", message, ...extra });
    };
    for (const [index, sample] of samples.entries()) {
      const outcome = results[index];
      if (!outcome || "error" in outcome) {
        const error = outcome && "error" in outcome ? `${outcome.error.code}: ${outcome.error.message}` : "no result";
        failed(`grade failed on sample ${index} with ${error}`, { index });
      } else if (sample.expected !== undefined && Math.abs(outcome.score - sample.expected) > 1e-9) {
        failed(`sample ${index} should score ${sample.expected} but scored ${outcome.score}`, {
          index,
          expected: sample.expected,
          actual: outcome.score,
        });
      }
    }
  }

  app.post(
    base,
    {
      schema: {
        operationId: "graders.create.function",
        params: ProjectParams,
        body: z.object({ key: GraderKey, source: Source, description: Description, samples: Samples.optional() }),
        response: { 201: GraderDetail, ...ErrorResponses },
      },
    },
    async (req, reply) => {
      const { project } = req.params;
      const { key, source, description, samples } = req.body;
      // answer a taken key before the five checks run; the insert still enforces it under races
      if (store.get(project, key)) throw graderExists(project, key);
      const { compiled, warnings } = await validate(project, source, undefined, samples);
      const sourceSha256 = createHash("sha256").update(source).digest("hex");
      const row = store.insert({ project, key, description, source, compiled, sourceSha256, warnings, samples });
      return reply.code(201).send(detail(row));
    },
  );

  app.post(
    `${base}/validate`,
    {
      schema: {
        operationId: "graders.validate",
        params: ProjectParams,
        body: z.object({ source: Source, threads: z.array(Thread).optional() }),
        response: {
          200: z.object({ valid: z.literal(true), warnings: z.array(z.string()), results: z.array(GradeResult).optional() }),
          ...ErrorResponses,
        },
      },
    },
    async (req) => {
      if (req.body.threads) checkBatch(req.body.threads.length, config);
      const { warnings, results } = await validate(req.params.project, req.body.source, req.body.threads);
      return { valid: true as const, warnings, ...(results ? { results } : {}) };
    },
  );

  app.get(
    base,
    {
      schema: {
        operationId: "graders.list",
        params: ProjectParams,
        querystring: z.object({
          limit: z.coerce.number().int().min(1).max(200).default(50),
          cursor: z.string().max(128).default(""),
        }),
        response: { 200: z.object({ data: z.array(Grader), nextCursor: z.string().nullable() }), ...ErrorResponses },
      },
    },
    async (req) => {
      const { limit, cursor } = req.query;
      const rows = store.list(req.params.project, cursor, limit + 1);
      const page = rows.slice(0, limit);
      return { data: page.map(summary), nextCursor: rows.length > limit ? (page.at(-1)?.key ?? null) : null };
    },
  );

  app.get(
    `${base}/:graderKey`,
    { schema: { operationId: "graders.get", params: GraderParams, response: { 200: GraderDetail, ...ErrorResponses } } },
    async (req) => {
      return detail(store.mustGet(req.params.project, req.params.graderKey));
    },
  );

  app.put(
    `${base}/:graderKey/lock`,
    {
      schema: {
        operationId: "graders.lock",
        params: GraderParams,
        body: z.object({ locked: z.boolean() }),
        response: { 200: Grader, ...ErrorResponses },
      },
    },
    async (req) => summary(store.setLocked(req.params.project, req.params.graderKey, req.body.locked)),
  );

  app.post(
    `${base}/:graderKey/release`,
    {
      schema: {
        operationId: "graders.release",
        params: GraderParams,
        response: { 200: Grader, ...ErrorResponses },
      },
    },
    async (req) => summary(store.release(req.params.project, req.params.graderKey)),
  );

  app.delete(
    `${base}/:graderKey`,
    { schema: { operationId: "graders.delete", params: GraderParams, response: { 204: z.null(), ...ErrorResponses } } },
    async (req, reply) => {
      const { id, ids } = store.delete(req.params.project, req.params.graderKey);
      pool.forget(ids); // its warm isolates go in every worker now, not when the LRU reaches them
      grading.judges.forget(id);
      grading.endpoints.forget(id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    `${base}/combined`,
    {
      schema: {
        operationId: "graders.create.combined",
        params: ProjectParams,
        body: z.object({
          key: GraderKey,
          mode: CombineMode,
          description: Description,
          graders: z
            .array(
              z.object({
                graderKey: GraderKey,
                weight: z.number().finite().default(1),
                name: z.string().min(1).max(128).optional(),
                version: VersionNumber.optional().describe("pin the part to this version; absent: follow its current version"),
              }),
            )
            .min(1, "a combined grader needs at least one part")
            .max(64, "a combined grader has at most 64 parts"),
        }),
        response: { 201: GraderDetail, ...ErrorResponses },
      },
    },
    async (req, reply) => {
      const { key, mode, description, graders } = req.body;
      const parts = graders.map((g) => ({ graderKey: g.graderKey, name: g.name ?? g.graderKey, weight: g.weight, version: g.version }));
      if (mode === "weighted" && !(parts.filter((p) => p.weight > 0).reduce((a, p) => a + p.weight, 0) > 0)) {
        throw new AppError("INVALID_REQUEST", "weighted mode needs at least one part with a positive weight");
      }
      // 1e308 + 1e308 is Infinity: every score would then be 0 (or NaN)
      if (!Number.isFinite(parts.reduce((a, p) => a + Math.abs(p.weight), 0))) {
        throw new AppError(
          "INVALID_REQUEST",
          `the weights' absolute values must add up to a finite number (at most ${Number.MAX_VALUE}); scale them down, e.g. to sum to 1`,
        );
      }
      const row = store.insertCombined({ project: req.params.project, key, description, mode, parts });
      return reply.code(201).send(detail(row));
    },
  );

  app.post(
    `${base}/:graderKey/grade`,
    {
      schema: {
        operationId: "graders.grade",
        params: GraderParams,
        body: z.object({ thread: Thread, version: VersionNumber.optional().describe("grade with this version; absent: the current one") }),
        response: { 200: GradeScore.extend({ durationMs: z.number(), version: z.number() }), ...ErrorResponses },
      },
    },
    async (req) => {
      const started = performance.now();
      const { outcomes, version } = await grading.gradeByKey(req.params.project, req.params.graderKey, [req.body.thread], {
        version: req.body.version,
        route: "grade",
      });
      const [outcome] = outcomes;
      if ("error" in outcome) {
        const { code, message, line, column } = outcome.error;
        throw new AppError(code, message, line === undefined ? { version } : { version, line, column });
      }
      return { ...outcome, durationMs: Math.round((performance.now() - started) * 1000) / 1000, version };
    },
  );

  app.post(
    `${base}/:graderKey/grade-batch`,
    {
      schema: {
        operationId: "graders.gradeBatch",
        params: GraderParams,
        body: z.object({
          threads: z.array(Thread).min(1, "threads must hold at least one thread"),
          version: VersionNumber.optional().describe("grade with this version; absent: the current one"),
        }),
        response: { 200: z.object({ results: z.array(GradeResult), durationMs: z.number(), version: z.number() }), ...ErrorResponses },
      },
    },
    async (req) => {
      checkBatch(req.body.threads.length, config);
      const started = performance.now();
      const { outcomes, version } = await grading.gradeByKey(req.params.project, req.params.graderKey, req.body.threads, {
        version: req.body.version,
        route: "grade-batch",
      });
      return { results: outcomes, durationMs: Math.round((performance.now() - started) * 1000) / 1000, version };
    },
  );

  /**
   * Checks a new source and stores it as the next version; nothing changes when a check fails.
   * With samples (given, or the current version's), reports each sample's score under the
   * current version and the candidate; `dryRun` reports without storing.
   */
  async function updateSource(
    project: string,
    key: string,
    next: { source: string; description?: string; samples?: Sample[]; dryRun?: boolean },
  ): Promise<z.infer<typeof UpdateResult>> {
    const current = store.mustGet(project, key);
    assertUpdatable(current); // before the checks run; the store checks again in its transaction
    const samples = next.samples ?? store.samples(current);
    const { compiled, warnings, results } = await validate(project, next.source, undefined, samples);
    const before = samples.length
      ? await pool.gradeBatch(
          { id: sandboxId(current.id, current.version), project, compiled: current.compiled },
          samples.map((x) => x.thread),
        )
      : [];
    const brief = (o: GradeOutcome | undefined) => (o === undefined ? "none" : "error" in o ? o.error.code : o.score);
    const changed = samples
      .map((_, index) => ({ index, before: brief(before[index]), after: brief(results?.[index]) }))
      .filter((c) => c.before !== c.after);
    const report = { samples: samples.length, changed };
    if (next.dryRun) return { ...detail(current), dryRun: true, report };
    const sourceSha256 = createHash("sha256").update(next.source).digest("hex");
    const row = store.update(
      project,
      key,
      {
        source: next.source,
        compiled,
        sourceSha256,
        warnings,
        description: next.description ?? current.description,
        samples: next.samples,
      },
      current.version,
    );
    return { ...detail(row), report };
  }

  app.put(
    `${base}/:graderKey`,
    {
      schema: {
        operationId: "graders.update",
        params: GraderParams,
        body: z.object({
          source: Source,
          description: DescriptionUpdate,
          samples: Samples.optional(),
          dryRun: z.boolean().optional().describe("check and report, store nothing"),
        }),
        response: { 200: UpdateResult, ...ErrorResponses },
      },
    },
    async (req) => updateSource(req.params.project, req.params.graderKey, req.body),
  );

  const VersionParams = GraderParams.extend({ version: VersionNumber });

  app.get(
    `${base}/:graderKey/versions`,
    {
      schema: {
        operationId: "graders.versions.list",
        params: GraderParams,
        response: { 200: z.object({ data: z.array(GraderVersion) }), ...ErrorResponses },
      },
    },
    async (req) => ({ data: store.versions(req.params.project, req.params.graderKey) }),
  );

  app.get(
    `${base}/:graderKey/versions/:version`,
    { schema: { operationId: "graders.versions.get", params: VersionParams, response: { 200: GraderVersionDetail, ...ErrorResponses } } },
    async (req) => {
      const { version, description, sourceSha256, warnings, createdAt, source } = store.mustGetVersion(
        req.params.project,
        req.params.graderKey,
        req.params.version,
      );
      return { version, description, sourceSha256, warnings, createdAt, source };
    },
  );

  app.post(
    `${base}/:graderKey/versions/:version/restore`,
    { schema: { operationId: "graders.versions.restore", params: VersionParams, response: { 200: UpdateResult, ...ErrorResponses } } },
    async (req) => {
      const { project, graderKey, version } = req.params;
      const old = store.mustGetVersion(project, graderKey, version);
      return updateSource(project, graderKey, { source: old.source, description: old.description });
    },
  );
}
