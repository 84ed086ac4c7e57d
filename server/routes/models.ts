// /v1/projects/:project/models — the judge models a project's judges may call.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { Model, ModelCreate, ModelKey, type ModelRow } from "../judges/spec.ts";
import { errorResponses, IN_PROJECT, json, ProjectParams, WITH_BODY } from "../schemas.ts";
import type { Models } from "../services/models.ts";
import type { Store } from "../store.ts";

const ModelParams = ProjectParams.extend({ modelKey: ModelKey.describe("the model's key, unique in its project") });

const ModelList = z
  .object({ data: z.array(Model).describe("the models, by key") })
  .describe("the project's models")
  .meta({ id: "ModelList" });

const view = ({ id: _id, ...model }: ModelRow): z.infer<typeof Model> => model;

export async function modelRoutes(fastify: FastifyInstance, opts: { store: Store; models: Models }) {
  const { store, models } = opts;
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const base = "/v1/projects/:project/models";

  app.post(
    base,
    {
      schema: {
        operationId: "models.create",
        tags: ["models"],
        summary: "Register a judge model",
        description:
          "Registers an OpenAI-compatible chat-completions model the project's judges may call. Its API key is one of the " +
          "project's secrets (apiKeySecret; PUT /v1/projects/{project}/secrets/{name}), bound to this model's host at registration, " +
          "or a server environment secret the operator granted to the project (apiKeyEnv). An address the egress policy refuses " +
          "answers 422 EGRESS_DENIED (the operator allows private ones with GRADEBOX_EGRESS_ALLOW); a taken key 409 MODEL_EXISTS.",
        params: ProjectParams,
        body: ModelCreate,
        response: {
          201: json("The registered model", Model),
          ...errorResponses(
            ...IN_PROJECT,
            ...WITH_BODY,
            "EGRESS_DENIED",
            "MODEL_EXISTS",
            "QUOTA_EXCEEDED",
            "SECRET_NOT_FOUND",
            "SECRET_HOST_MISMATCH",
          ),
        },
      },
    },
    async (req, reply) => reply.code(201).send(view(await models.create(req.params.project, req.body))),
  );

  app.get(
    base,
    {
      schema: {
        operationId: "models.list",
        tags: ["models"],
        summary: "List judge models",
        description: "Every judge model registered in the project.",
        params: ProjectParams,
        response: {
          200: json("The project's models", ModelList),
          ...errorResponses(...IN_PROJECT),
        },
      },
    },
    async (req) => ({ data: (await store.listModels(req.params.project)).map(view) }),
  );

  app.get(
    `${base}/:modelKey`,
    {
      schema: {
        operationId: "models.get",
        tags: ["models"],
        summary: "Get a judge model",
        description: "One judge model of the project (without any secret). An unknown key answers 404 MODEL_NOT_FOUND.",
        params: ModelParams,
        response: { 200: json("The model", Model), ...errorResponses(...IN_PROJECT, "MODEL_NOT_FOUND") },
      },
    },
    async (req) => view(await store.mustGetModel(req.params.project, req.params.modelKey)),
  );

  app.delete(
    `${base}/:modelKey`,
    {
      schema: {
        operationId: "models.delete",
        tags: ["models"],
        summary: "Delete a judge model",
        description:
          "Deletes a model no grader uses; a model a judge grader uses answers 409 MODEL_IN_USE, whose `usedBy` lists the graders to delete first.",
        params: ModelParams,
        response: { 204: z.null().describe("Deleted"), ...errorResponses(...IN_PROJECT, "MODEL_NOT_FOUND", "MODEL_IN_USE") },
      },
    },
    async (req, reply) => {
      await models.delete(req.params.project, req.params.modelKey);
      return reply.code(204).send(null);
    },
  );
}
