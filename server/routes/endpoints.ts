// External endpoint graders: create one (its /info and /metadata_schema are read first).
// Listing, getting, locking, deleting and grading are the graders routes'.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { EndpointCreate } from "../endpoints/spec.ts";
import { AppError } from "../errors.ts";
import type { Grading } from "../grading.ts";
import { Description, errorResponses, GraderDetail, GraderKey, IN_PROJECT, json, ProjectParams, WITH_BODY } from "../schemas.ts";
import { headerRefs, type Secrets } from "../secrets/secrets.ts";
import type { GraderRow } from "../store/graders.ts";
import { graderExists } from "../store/rules.ts";
import type { Store } from "../store.ts";
import { detail } from "./graders.ts";

export async function endpointRoutes(fastify: FastifyInstance, opts: { store: Store; grading: Grading; secrets: Secrets }) {
  const { store, grading, secrets } = opts;
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
            "VALIDATION_FAILED",
            "EGRESS_DENIED",
            "SECRET_NOT_FOUND",
            "SECRET_HOST_MISMATCH",
          ),
        },
      },
    },
    async (req, reply) => {
      const { project } = req.params;
      const { key, description, ...create } = req.body;
      if (await store.get(project, key)) throw graderExists(project, key);
      const refs = headerRefs(create);
      const twice = Object.keys(create.headersSecret ?? {}).filter((h) =>
        Object.keys(create.headersEnv ?? {}).some((e) => e.toLowerCase() === h.toLowerCase()),
      );
      if (twice.length)
        throw new AppError("INVALID_REQUEST", `header ${twice[0]} is named in both headersEnv and headersSecret; name it once`);
      if (refs.length > 16) throw new AppError("INVALID_REQUEST", "at most 16 secret headers in headersEnv and headersSecret together");
      const unbind = await secrets.bindAll(
        project,
        refs.map(([, ref]) => ref),
        create.url,
      );
      let created: GraderRow;
      try {
        const spec = await grading.endpoints.probe(project, create);
        created = await store.insertEndpoint({ project, key, description, spec });
      } catch (error) {
        // a registration that failed binds nothing: a mistyped URL must not cost setting the secret again
        await unbind();
        throw error;
      }
      return reply.code(201).send(detail(created));
    },
  );
}
