// External endpoint graders: create one (its /info and /metadata_schema are read first).
// Listing, getting, locking, deleting and grading are the graders routes'.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { EndpointCreate } from "../endpoints/spec.ts";
import { Description, errorResponses, GraderDetail, GraderKey, IN_PROJECT, json, ProjectParams, WITH_BODY } from "../schemas.ts";
import type { EndpointGraders } from "../services/endpoint-graders.ts";
import { detail } from "./views.ts";

export async function endpointRoutes(fastify: FastifyInstance, opts: { endpointGraders: EndpointGraders }) {
  const { endpointGraders } = opts;
  const app = fastify.withTypeProvider<ZodTypeProvider>();

  app.post(
    "/v1/projects/:project/graders/external-endpoint",
    {
      schema: {
        operationId: "graders.create.externalEndpoint",
        tags: ["endpoints"],
        summary: "Create an external endpoint grader",
        description:
          "A grader that calls a reward server speaking the reward-server protocol ({url}/score, /batch_score, /info, " +
          "/metadata_schema). Its /info and /metadata_schema are read first: a server that does not answer them properly is " +
          "refused with 422 VALIDATION_FAILED (check `endpoint`); an address the egress policy refuses with 422 EGRESS_DENIED.",
        params: ProjectParams,
        body: EndpointCreate.extend({
          key: GraderKey.describe("the new grader's key, unique in the project"),
          description: Description,
        }).describe("an external endpoint grader: its key, its reward server's URL and how to call it"),
        response: {
          201: json("The created grader, with what the endpoint's /info said", GraderDetail),
          ...errorResponses(
            ...IN_PROJECT,
            ...WITH_BODY,
            "GRADER_EXISTS",
            "QUOTA_EXCEEDED",
            "VALIDATION_FAILED",
            "EGRESS_DENIED",
            "SECRET_NOT_FOUND",
            "SECRET_HOST_MISMATCH",
          ),
        },
      },
    },
    async (req, reply) => {
      const { key, description, ...create } = req.body;
      return reply.code(201).send(detail(await endpointGraders.create(req.params.project, key, description, create)));
    },
  );
}
