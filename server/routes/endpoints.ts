// External endpoint graders: create one (its /info and /metadata_schema are read first).
// Listing, getting, locking, deleting and grading are the graders routes'.

import { createHash } from "node:crypto";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { authenticate } from "../auth.ts";
import { EndpointCreate } from "../endpoints/spec.ts";
import type { Grading } from "../grading.ts";
import { Description, ErrorResponses, GraderDetail, GraderKey, ProjectParams } from "../schemas.ts";
import { graderExists, type Store } from "../store.ts";
import { detail } from "./graders.ts";

export async function endpointRoutes(fastify: FastifyInstance, opts: { store: Store; grading: Grading }) {
  const { store, grading } = opts;
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addHook("onRequest", authenticate(store.keys));

  app.post(
    "/v1/projects/:project/graders/external-endpoint",
    {
      schema: {
        operationId: "graders.create.externalEndpoint",
        params: ProjectParams,
        body: EndpointCreate.extend({ key: GraderKey, description: Description }),
        response: { 201: GraderDetail, ...ErrorResponses },
      },
    },
    async (req, reply) => {
      const { project } = req.params;
      const { key, description, ...create } = req.body;
      if (store.get(project, key)) throw graderExists(project, key);
      const spec = await grading.endpoints.probe(create);
      const sha256 = createHash("sha256").update(JSON.stringify(spec)).digest("hex");
      return reply.code(201).send(detail(store.insertEndpoint({ project, key, description, spec, sha256 })));
    },
  );
}
