// Code-execution graders: create one. Listing, getting, locking, deleting and grading are the
// graders routes'; the definition is sandbox/code/spec.ts's, and the worker grades with it.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { CodeSpecFields, withinItemCpu } from "../../sandbox/code/spec.ts";
import { Description, errorResponses, GraderDetail, GraderKey, IN_PROJECT, json, ProjectParams, WITH_BODY } from "../schemas.ts";
import type { Store } from "../store.ts";
import { detail } from "./views.ts";

export async function codeRoutes(fastify: FastifyInstance, opts: { store: Store }) {
  const { store } = opts;
  const app = fastify.withTypeProvider<ZodTypeProvider>();

  app.post(
    "/v1/projects/:project/graders/code",
    {
      schema: {
        operationId: "graders.create.code",
        tags: ["code"],
        summary: "Create a code-execution grader",
        description:
          "A grader that runs the program in the completion (the last fenced block in an accepted language) against the tests " +
          "in each thread's metadata (stdin/stdout, assert-style or function-call, in the shapes of APPS, TACO, CodeContests, " +
          "LiveCodeBench, HumanEval and MBPP), each test in a fresh interpreter within the limits given; the score is the " +
          "fraction of tests passed (or all-or-nothing), with a verdict per test in subscores and metadata. Every field but " +
          "`key` has a default. A key already taken answers 409 GRADER_EXISTS.",
        params: ProjectParams,
        body: CodeSpecFields.extend({
          key: GraderKey.describe("the new grader's key, unique in the project"),
          description: Description,
        })
          .strict()
          .refine(withinItemCpu.check, { message: withinItemCpu.message, path: ["maxTests"] })
          .describe("a code-execution grader: its key and its definition"),
        response: {
          201: json("The created code grader", GraderDetail),
          ...errorResponses(...IN_PROJECT, ...WITH_BODY, "GRADER_EXISTS", "QUOTA_EXCEEDED"),
        },
      },
    },
    async (req, reply) => {
      const { key, description, ...spec } = req.body;
      return reply.code(201).send(detail(await store.insertCode({ project: req.params.project, key, description, spec })));
    },
  );
}
