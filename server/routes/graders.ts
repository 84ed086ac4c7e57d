// /v1/projects/:project/graders — register, validate, list, get, lock, delete, grade; a function
// grader's versions. Each handler reads its request and calls a service (services/).

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { type Threads, threadObjects } from "../../sandbox/host/packed-threads.ts";
import { componentsOf, summarize } from "../../sdk/summary.ts";
import type { Config } from "../config.ts";
import { AppError, checkBatchSize } from "../errors.ts";
import { gradeBodies } from "../fast-body.ts";
import type { Grading } from "../grading.ts";
import { groupsOf } from "../groups.ts";
import { named } from "../openapi.ts";
import { registerPackedParser } from "../packed-body.ts";
import { clientGone } from "../request-work.ts";
import { refuseGroupOnly, toResults } from "../results.ts";
import {
  BatchSummary,
  CHECKING,
  CombineMode,
  Description,
  DescriptionUpdate,
  errorResponses,
  GRADING,
  GradeResult,
  Grader,
  GraderDetail,
  GraderKey,
  GraderParams,
  GraderShape,
  GraderVersion,
  GraderVersionDetail,
  GradeScore,
  IN_PROJECT,
  json,
  Language,
  MAX_SAMPLES,
  ProjectParams,
  Provenance,
  Source,
  UpdateResult,
  VersionNumber,
  WITH_BODY,
} from "../schemas.ts";
import type { Graders } from "../services/graders.ts";
import type { Validation } from "../services/validation.ts";
import type { Versions } from "../services/versions.ts";
import type { Store } from "../store.ts";
import { detail, summary, updated } from "./views.ts";

export interface GraderRoutesOptions {
  config: Config;
  store: Store;
  graders: Graders;
  versions: Versions;
  validation: Validation;
  grading: Grading;
}

export async function graderRoutes(
  fastify: FastifyInstance,
  { config, store, graders, versions, validation, grading }: GraderRoutesOptions,
) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { Thread, GradeBody, GradeBatchBody } = gradeBodies(config);
  registerPackedParser(app, config, GradeBatchBody.omit({ threads: true }));
  const Samples = z
    .array(
      named(config, "Sample", () =>
        z
          .object({
            thread: Thread,
            expected: z.number().finite().optional().describe("the score the sample must get (within 1e-9); absent: any score"),
          })
          .describe("a sample thread, and the score it should get"),
      ),
    )
    .max(MAX_SAMPLES, `a grader carries at most ${MAX_SAMPLES} samples`)
    .describe("sample threads: test_run grades them (instead of the built-in one); an update reports how their scores change");

  const base = "/v1/projects/:project/graders";

  app.post(
    base,
    {
      schema: {
        operationId: "graders.create.function",
        tags: ["graders"],
        summary: "Create a function grader",
        description:
          "Registers a function grader written in TypeScript/JavaScript or Python (`language`, default typescript) once five " +
          "checks pass: syntax, structure, signature, execution, and test_run (which grades " +
          "the samples, when given, and each must score its `expected`). A failing check answers 422 VALIDATION_FAILED with its " +
          "`check`, `message`, `line` and `column`; a taken key 409 GRADER_EXISTS; a source over 64 KiB 413 SOURCE_TOO_LARGE; " +
          "a project at its quota of graders or stored bytes 409 QUOTA_EXCEEDED (nothing is stored).",
        params: ProjectParams,
        body: z
          .object({
            key: GraderKey.describe("the new grader's key, unique in the project"),
            source: Source,
            language: Language.optional().describe("the source's language; absent: typescript"),
            description: Description,
            samples: Samples.optional(),
          })
          .describe("a function grader: its key, its source (and its language) and optional sample threads"),
        response: {
          201: json("The created grader", GraderDetail),
          ...errorResponses(...IN_PROJECT, ...WITH_BODY, "GRADER_EXISTS", "QUOTA_EXCEEDED", ...CHECKING),
        },
      },
    },
    async (req, reply) => {
      const { key, source, language = "typescript", description, samples } = req.body;
      return reply
        .code(201)
        .send(detail(await graders.createFunction(req.params.project, { key, source, language, description, samples })));
    },
  );

  app.post(
    `${base}/validate`,
    {
      schema: {
        operationId: "graders.validate",
        tags: ["graders"],
        summary: "Validate a source",
        description:
          "Runs the five checks on a source without storing anything and, given threads, grades them with it (test_run then " +
          "grades those threads instead of the built-in sample thread, so a grader that needs their metadata is not failed by " +
          "the sample's empty metadata). A failing check " +
          "answers 422 VALIDATION_FAILED with its `check`, `message`, `line` and `column`, as a create would.",
        params: ProjectParams,
        body: z
          .object({
            source: Source,
            language: Language.optional().describe("the source's language; absent: typescript"),
            threads: z
              .array(Thread)
              .optional()
              .describe("threads to grade with the source (at most maxBatchThreads): their results are returned"),
          })
          .describe("a source to check, and optional threads to grade with it"),
        response: {
          200: json(
            "The source passes the five checks",
            named(config, "ValidateResponse", () =>
              z
                .object({
                  valid: z.literal(true).describe("always true: a failing check is a 422"),
                  warnings: z.array(z.string()).describe("what the checks noticed without refusing the source"),
                  shape: GraderShape.optional(),
                  results: z
                    .array(GradeResult)
                    .optional()
                    .describe(
                      "the threads' results, in order, when threads were given: test_run grades them instead of the built-in sample thread",
                    ),
                })
                .describe("the checks' verdict"),
            ),
          ),
          ...errorResponses(...IN_PROJECT, ...WITH_BODY, "BATCH_TOO_LARGE", ...CHECKING),
        },
      },
    },
    async (req) => {
      if (req.body.threads) checkBatchSize(req.body.threads.length, config.maxBatch);
      const { source, language = "typescript", threads } = req.body;
      const { warnings, results, shape } = await validation.validate(req.params.project, { source, language }, threads);
      return { valid: true as const, warnings, ...(shape ? { shape } : {}), ...(results ? { results: toResults(results) } : {}) };
    },
  );

  app.get(
    base,
    {
      schema: {
        operationId: "graders.list",
        tags: ["graders"],
        summary: "List graders",
        description:
          "The project's graders of every kind, ordered by key, a page at a time: pass a page's nextCursor as the cursor of the " +
          "next request until it is null.",
        params: ProjectParams,
        querystring: z.object({
          limit: z.coerce.number().int().min(1).max(200).default(50).describe("graders per page, 1 to 200"),
          cursor: z.string().max(128).default("").describe("the previous page's nextCursor; empty: the first page"),
        }),
        response: {
          200: json(
            "A page of graders",
            named(config, "GraderPage", () =>
              z
                .object({
                  data: z.array(Grader).describe("the page's graders, by key"),
                  nextCursor: z.string().nullable().describe("the cursor of the next page; null on the last page"),
                })
                .describe("a page of graders"),
            ),
          ),
          ...errorResponses(...IN_PROJECT),
        },
      },
    },
    async (req) => {
      const { limit, cursor } = req.query;
      const rows = await store.list(req.params.project, cursor, limit + 1);
      const page = rows.slice(0, limit);
      return { data: page.map(summary), nextCursor: rows.length > limit ? (page.at(-1)?.key ?? null) : null };
    },
  );

  app.get(
    `${base}/:graderKey`,
    {
      schema: {
        operationId: "graders.get",
        tags: ["graders"],
        summary: "Get a grader",
        description: "One grader in full: a function grader's source, a combined grader's parts, a judge's or an endpoint's definition.",
        params: GraderParams,
        response: { 200: json("The grader", GraderDetail), ...errorResponses(...IN_PROJECT, "GRADER_NOT_FOUND") },
      },
    },
    async (req) => {
      return detail(await store.mustGet(req.params.project, req.params.graderKey));
    },
  );

  app.put(
    `${base}/:graderKey/lock`,
    {
      schema: {
        operationId: "graders.lock",
        tags: ["graders"],
        summary: "Lock or unlock a grader",
        description: "A locked grader cannot be updated, restored or deleted (409 GRADER_LOCKED) until it is unlocked; it still grades.",
        params: GraderParams,
        body: z.object({ locked: z.boolean().describe("true: lock the grader; false: unlock it") }).describe("the lock to set"),
        response: {
          200: json("The grader, locked or unlocked", Grader),
          ...errorResponses(...IN_PROJECT, ...WITH_BODY, "GRADER_NOT_FOUND"),
        },
      },
    },
    async (req) => summary(await store.setLocked(req.params.project, req.params.graderKey, req.body.locked)),
  );

  app.post(
    `${base}/:graderKey/release`,
    {
      schema: {
        operationId: "graders.release",
        tags: ["graders"],
        summary: "Release a grader from quarantine",
        description:
          "A grader that takes its sandbox worker down 3 times in 10 minutes is quarantined: it answers 423 GRADER_QUARANTINED. " +
          "This lifts the quarantine and forgets the faults; fix the grader first (PUT), or it will be quarantined again.",
        params: GraderParams,
        response: { 200: json("The grader, out of quarantine", Grader), ...errorResponses(...IN_PROJECT, "GRADER_NOT_FOUND") },
      },
    },
    async (req) => summary(await store.release(req.params.project, req.params.graderKey)),
  );

  app.delete(
    `${base}/:graderKey`,
    {
      schema: {
        operationId: "graders.delete",
        tags: ["graders"],
        summary: "Delete a grader",
        description:
          "Deletes the grader and every version of it. A locked grader answers 409 GRADER_LOCKED (unlock it first); a part of " +
          "a combined grader 409 GRADER_IN_USE, whose `usedBy` lists the graders to delete first.",
        params: GraderParams,
        response: {
          204: z.null().describe("Deleted"),
          ...errorResponses(...IN_PROJECT, "GRADER_NOT_FOUND", "GRADER_LOCKED", "GRADER_IN_USE"),
        },
      },
    },
    async (req, reply) => {
      await graders.delete(req.params.project, req.params.graderKey);
      return reply.code(204).send(null);
    },
  );

  app.post(
    `${base}/combined`,
    {
      schema: {
        operationId: "graders.create.combined",
        tags: ["graders"],
        summary: "Create a combined grader",
        description:
          "A grader whose score combines its parts' (function, judge or endpoint graders of the project; a function part may be " +
          "pinned to a version). A part that is missing, combined, or has no such version answers 422 INVALID_COMPONENT; " +
          "weighted mode needs a positive weight (400).",
        params: ProjectParams,
        body: z
          .object({
            key: GraderKey.describe("the new grader's key, unique in the project"),
            mode: CombineMode,
            description: Description,
            graders: z
              .array(
                z
                  .object({
                    graderKey: GraderKey.describe("the part: a function, judge or endpoint grader of the project"),
                    weight: z.number().finite().default(1).describe("the part's weight in weighted mode (negative: a penalty)"),
                    name: z.string().min(1).max(128).optional().describe("the part's name in subscores; absent: its key"),
                    version: VersionNumber.optional().describe("pin the part to this version; absent: follow its current version"),
                  })
                  .describe("one part"),
              )
              .min(1, "a combined grader needs at least one part")
              .max(64, "a combined grader has at most 64 parts")
              .describe("the parts, 1 to 64, in order"),
          })
          .describe("a combined grader: its key, how it combines, and its parts"),
        response: {
          201: json("The created grader", GraderDetail),
          ...errorResponses(...IN_PROJECT, ...WITH_BODY, "GRADER_EXISTS", "QUOTA_EXCEEDED", "INVALID_COMPONENT"),
        },
      },
    },
    async (req, reply) => {
      const { key, mode, description, graders: parts } = req.body;
      return reply.code(201).send(detail(await graders.createCombined(req.params.project, { key, mode, description, graders: parts })));
    },
  );

  app.post(
    `${base}/:graderKey/grade`,
    {
      schema: {
        operationId: "graders.grade",
        tags: ["graders"],
        summary: "Grade a thread",
        description:
          "Grades one thread with the grader (its current version, or `version`). The grader's failure is the response's: 422 " +
          "(GRADER_ERROR with `line` and `column`, GRADER_TIMEOUT, INVALID_SCORE, …), 502 when its judge model or endpoint did " +
          "not answer, 423 GRADER_QUARANTINED while quarantined (POST …/release). An abstention (the grader returned null / None " +
          "or threw Abstain) is 422 ABSTAINED with `abstained: {code, reason}`: never a score.",
        params: GraderParams,
        body: GradeBody,
        response: {
          200: json(
            "The thread's score",
            named(config, "GradeResponse", () =>
              GradeScore.extend({
                outcome: z.literal("scored").describe("always scored: an error or an abstention is the response's status"),
                durationMs: z.number().describe("time spent grading, in milliseconds"),
                version: z.number().describe("the version that graded"),
                provenance: Provenance,
              }).describe("the thread's score"),
            ),
          ),
          ...errorResponses(
            ...IN_PROJECT,
            ...WITH_BODY,
            "GRADER_NOT_FOUND",
            "VERSION_NOT_FOUND",
            "ABSTAINED",
            "GROUP_REQUIRED",
            ...GRADING,
          ),
        },
      },
    },
    async (req, reply) => {
      const started = performance.now();
      const { outcomes, version, provenance } = await grading.gradeByKey(req.params.project, req.params.graderKey, [req.body.thread], {
        version: req.body.version,
        ...(req.body.onUnavailable ? { onUnavailable: req.body.onUnavailable } : {}),
        route: "grade",
        clientGone: clientGone(reply.raw),
      });
      refuseGroupOnly(outcomes);
      const [outcome] = outcomes;
      if ("error" in outcome) {
        const { code, message, line, column } = outcome.error;
        throw new AppError(code, message, line === undefined ? { version } : { version, line, column });
      }
      const durationMs = Math.round((performance.now() - started) * 1000) / 1000;
      if ("abstained" in outcome) {
        // a single thread's answer is a score: an abstention must not read as one, so it is the status (as an error is)
        throw new AppError("ABSTAINED", `${outcome.abstained.code}: ${outcome.abstained.reason}`, {
          version,
          abstained: outcome.abstained,
        });
      }
      return { outcome: "scored" as const, ...outcome, durationMs, version, provenance };
    },
  );

  app.post(
    `${base}/:graderKey/grade-batch`,
    {
      schema: {
        operationId: "graders.gradeBatch",
        tags: ["graders"],
        summary: "Grade a batch of threads",
        description:
          "Grades many threads with the grader; each result is a score or that thread's error, in order, so one failing thread " +
          "does not fail the batch. At most maxBatchThreads threads (GET /v1/limits): beyond, 413 BATCH_TOO_LARGE.",
        params: GraderParams,
        body: GradeBatchBody,
        response: {
          200: json(
            "Each thread's score or error",
            named(config, "GradeBatchResponse", () =>
              z
                .object({
                  results: z.array(GradeResult).describe("one per thread, in order"),
                  durationMs: z.number().describe("time spent grading, in milliseconds"),
                  version: z.number().describe("the version that graded"),
                  provenance: Provenance.describe("which grader, version and source digest produced every result of the batch"),
                  components: z
                    .record(z.string(), z.array(z.number().nullable()))
                    .optional()
                    .describe(
                      "the named parts of the scores, as channels aligned with results: components[name][i] is thread i's part " +
                        "`name` (a combined grader's parts, a judge's criteria, a function grader's named subscores), null where " +
                        "thread i has no such part (an error, an abstention, or a result without it); absent when no result has named parts",
                    ),
                  summary: BatchSummary.optional().describe("with `summary` in the request"),
                  deadlineExceeded: z
                    .number()
                    .optional()
                    .describe("with deadlineMs: how many threads the deadline left unfinished (abstained with DEADLINE_EXCEEDED)"),
                })
                .describe("the batch's results"),
            ),
          ),
          ...errorResponses(
            ...IN_PROJECT,
            ...WITH_BODY,
            "BATCH_TOO_LARGE",
            "GROUP_REQUIRED",
            "GRADER_NOT_FOUND",
            "VERSION_NOT_FOUND",
            "GRADER_QUARANTINED",
            "SANDBOX_UNAVAILABLE",
          ),
        },
      },
    },
    async (req, reply) => {
      // the threads as JSON sent them, or packed: checked (its size too) by packed-body.ts, and
      // graded as they came. zod's type says WireThread[]; read them only through Threads' helpers.
      const sent: Threads = req.body.threads;
      if (Array.isArray(sent)) checkBatchSize(sent.length, config.maxBatch);
      const started = performance.now();
      const { deadlineMs, onUnavailable } = req.body;
      const grouped = req.body.groupBy !== undefined || req.body.groups !== undefined;
      // grouping reads thread objects: a grouped packed batch is unpacked
      const objects = grouped ? threadObjects(sent) : undefined;
      const threads = objects ?? sent;
      const grouping = objects && groupsOf(objects, req.body);
      // the deadline counts from the request's arrival: reading a large body is part of the wait
      const deadlineAt = deadlineMs === undefined ? undefined : Math.round(Date.now() - reply.elapsedTime + deadlineMs);
      const { outcomes, version, provenance } = await grading.gradeByKey(req.params.project, req.params.graderKey, threads, {
        version: req.body.version,
        route: "grade-batch",
        clientGone: clientGone(reply.raw),
        ...(deadlineAt === undefined ? {} : { deadlineAt }),
        ...(grouping ? { grouping } : {}),
        ...(onUnavailable ? { onUnavailable } : {}),
      });
      if (!grouping) refuseGroupOnly(outcomes);
      const late =
        deadlineAt === undefined ? 0 : outcomes.filter((o) => "abstained" in o && o.abstained.code === "DEADLINE_EXCEEDED").length;
      const components = componentsOf(outcomes);
      const summary = req.body.summary;
      return {
        results: toResults(outcomes),
        durationMs: Math.round((performance.now() - started) * 1000) / 1000,
        version,
        provenance,
        ...(components ? { components } : {}),
        ...(summary
          ? { summary: summarize(outcomes, { ...(summary === true ? {} : summary), ...(grouping ? { groups: grouping.index } : {}) }) }
          : {}),
        ...(deadlineAt === undefined ? {} : { deadlineExceeded: late }),
      };
    },
  );

  app.put(
    `${base}/:graderKey`,
    {
      schema: {
        operationId: "graders.update",
        tags: ["graders", "versions"],
        summary: "Update a function grader",
        description:
          "Checks a new source as a create does, then stores it as the next version and reports each sample whose score " +
          "changes; `dryRun` checks and reports without storing. A version may change the language (`language`; absent keeps " +
          "the current version's). A locked grader answers 409 GRADER_LOCKED, a concurrent update " +
          "409 GRADER_CONFLICT (retry), another kind of grader 400, a version past the grader's quota of versions or the " +
          "project's of stored bytes 409 QUOTA_EXCEEDED (delete old versions: DELETE …/versions/{version}).",
        params: GraderParams,
        body: z
          .object({
            source: Source.describe("the new source"),
            language: Language.optional().describe("the new source's language; absent: the current version's"),
            description: DescriptionUpdate,
            samples: Samples.optional().describe("the new samples; absent: the current version's"),
            dryRun: z.boolean().optional().describe("check and report, store nothing"),
          })
          .describe("the new version's source, and optionally its description and samples"),
        response: {
          200: json("The updated grader (the current one for a dry run) and the samples report", UpdateResult),
          ...errorResponses(
            ...IN_PROJECT,
            ...WITH_BODY,
            "GRADER_NOT_FOUND",
            "GRADER_LOCKED",
            "GRADER_CONFLICT",
            "QUOTA_EXCEEDED",
            ...CHECKING,
          ),
        },
      },
    },
    async (req) => updated(await versions.update(req.params.project, req.params.graderKey, req.body)),
  );

  const VersionParams = GraderParams.extend({
    version: VersionNumber.describe("a version number: one of the grader's stored versions (GET …/versions)"),
  });

  app.get(
    `${base}/:graderKey/versions`,
    {
      schema: {
        operationId: "graders.versions.list",
        tags: ["versions"],
        summary: "List a grader's versions",
        description: "Every stored version of the grader, from version 1, without their sources (GET …/versions/{version} has one's).",
        params: GraderParams,
        response: {
          200: json(
            "The grader's versions",
            named(config, "GraderVersionList", () =>
              z.object({ data: z.array(GraderVersion).describe("the versions, oldest first") }).describe("the grader's versions"),
            ),
          ),
          ...errorResponses(...IN_PROJECT, "GRADER_NOT_FOUND"),
        },
      },
    },
    async (req) => ({ data: await store.versions(req.params.project, req.params.graderKey) }),
  );

  app.get(
    `${base}/:graderKey/versions/:version`,
    {
      schema: {
        operationId: "graders.versions.get",
        tags: ["versions"],
        summary: "Get a version",
        description: "One stored version of the grader, with its source. A version past the current one answers 404 VERSION_NOT_FOUND.",
        params: VersionParams,
        response: {
          200: json("The version", GraderVersionDetail),
          ...errorResponses(...IN_PROJECT, "GRADER_NOT_FOUND", "VERSION_NOT_FOUND"),
        },
      },
    },
    async (req) => {
      const { version, language, description, sourceSha256, warnings, createdAt, source } = await store.mustGetVersion(
        req.params.project,
        req.params.graderKey,
        req.params.version,
      );
      return { version, language, description, sourceSha256, warnings, createdAt, source };
    },
  );

  app.delete(
    `${base}/:graderKey/versions/:version`,
    {
      schema: {
        operationId: "graders.versions.delete",
        tags: ["versions"],
        summary: "Delete a version",
        description:
          "Deletes one stored version of a function grader, freeing its share of the project's quotas; its number is not reused. " +
          "The current version, or one a combined grader pins, answers 409 VERSION_IN_USE (`usedBy` lists the combined graders); " +
          "a locked grader 409 GRADER_LOCKED.",
        params: VersionParams,
        response: {
          204: z.null().describe("Deleted"),
          ...errorResponses(...IN_PROJECT, "GRADER_NOT_FOUND", "VERSION_NOT_FOUND", "GRADER_LOCKED", "VERSION_IN_USE"),
        },
      },
    },
    async (req, reply) => {
      await graders.deleteVersion(req.params.project, req.params.graderKey, req.params.version);
      return reply.code(204).send(null);
    },
  );

  app.post(
    `${base}/:graderKey/versions/:version/restore`,
    {
      schema: {
        operationId: "graders.versions.restore",
        tags: ["versions"],
        summary: "Restore a version",
        description:
          "Stores an old version's source, language and description as the next version, after the checks and the samples report of an " +
          "update: the current samples must pass (422 VALIDATION_FAILED otherwise). A locked grader answers 409 GRADER_LOCKED.",
        params: VersionParams,
        response: {
          200: json("The grader at its new version, and the samples report", UpdateResult),
          ...errorResponses(
            ...IN_PROJECT,
            "GRADER_NOT_FOUND",
            "VERSION_NOT_FOUND",
            "GRADER_LOCKED",
            "GRADER_CONFLICT",
            "QUOTA_EXCEEDED",
            "VALIDATION_FAILED",
            "VALIDATION_RATE_LIMITED",
            "SANDBOX_UNAVAILABLE",
          ),
        },
      },
    },
    async (req) => updated(await versions.restore(req.params.project, req.params.graderKey, req.params.version)),
  );
}
