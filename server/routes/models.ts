// /v1/projects/:project/models — the judge models a project's judges may call.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { authenticate } from "../auth.ts";
import { EgressDeniedError, type EgressPolicy } from "../egress.ts";
import { AppError } from "../errors.ts";
import type { Judges } from "../judges/judges.ts";
import { Model, ModelCreate, ModelKey, type ModelRow } from "../judges/spec.ts";
import { ErrorResponses, ProjectParams } from "../schemas.ts";
import type { Store } from "../store.ts";

const ModelParams = ProjectParams.extend({ modelKey: ModelKey });

const view = ({ id: _id, ...model }: ModelRow): z.infer<typeof Model> => model;

export async function modelRoutes(fastify: FastifyInstance, opts: { store: Store; judges: Judges; egress: EgressPolicy }) {
  const { store, judges, egress } = opts;
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addHook("onRequest", authenticate(store.keys));
  const base = "/v1/projects/:project/models";

  app.post(
    base,
    { schema: { operationId: "models.create", params: ProjectParams, body: ModelCreate, response: { 201: Model, ...ErrorResponses } } },
    async (req, reply) => {
      const body = req.body;
      if (body.apiKeyEnv && !process.env[body.apiKeyEnv]) {
        throw new AppError(
          "INVALID_REQUEST",
          `apiKeyEnv: the server has no environment variable ${body.apiKeyEnv}; ask its operator to set it`,
        );
      }
      // refused now when the address already is; every call checks again (DNS can change)
      const host = new URL(body.baseURL).hostname;
      try {
        await egress.resolve(host);
      } catch (error) {
        if (error instanceof EgressDeniedError) throw new AppError("EGRESS_DENIED", `baseURL: ${error.message}`);
        // a name that does not resolve yet is not refused: the model may come up later
      }
      const model = store.insertModel({ project: req.params.project, ...body });
      return reply.code(201).send(view(model));
    },
  );

  app.get(
    base,
    {
      schema: {
        operationId: "models.list",
        params: ProjectParams,
        response: { 200: z.object({ data: z.array(Model) }), ...ErrorResponses },
      },
    },
    async (req) => ({ data: store.listModels(req.params.project).map(view) }),
  );

  app.get(
    `${base}/:modelKey`,
    { schema: { operationId: "models.get", params: ModelParams, response: { 200: Model, ...ErrorResponses } } },
    async (req) => view(store.mustGetModel(req.params.project, req.params.modelKey)),
  );

  app.delete(
    `${base}/:modelKey`,
    { schema: { operationId: "models.delete", params: ModelParams, response: { 204: z.null(), ...ErrorResponses } } },
    async (req, reply) => {
      judges.forget(store.deleteModel(req.params.project, req.params.modelKey));
      return reply.code(204).send(null);
    },
  );
}
