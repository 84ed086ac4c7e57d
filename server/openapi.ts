// The OpenAPI document's named schemas and examples. A wire schema gets its name from its zod id
// (`.meta({ id })`): the document refers to it by $ref under components.schemas, so clients
// generated from the document get named types (sdk/wire.ts is one: scripts/gen-wire-types.ts).
// fastify-type-provider-zod names a schema used in a request `<id>Input` (a default makes a
// field optional there) and one used in a response `<id>`. Request bodies are not named:
// openapi-typescript takes a default in a named schema to mean the field is always there, and a
// generated client would then have to send it (test/wire-types.test.ts keeps defaults out).

import { createJsonSchemaTransform, createJsonSchemaTransformObject } from "fastify-type-provider-zod";
import { z } from "zod";
import { PACKED_BATCH_FORM, PACKED_BATCH_TYPE } from "../sdk/packed-batch.ts";
import { EXAMPLES } from "./examples.ts";

/** Request bodies an operation takes besides JSON (zod documents the JSON one), by media type. */
const OTHER_BODIES: Record<string, Record<string, Media>> = {
  "graders.gradeBatch": { [PACKED_BATCH_TYPE]: { schema: { type: "string", description: PACKED_BATCH_FORM } } },
};

/** Named schemas each server builds for itself, by its configuration and id. */
const configured = new WeakMap<object, Map<string, z.ZodType>>();

/**
 * The schema `build` makes, named `id`, built once per configuration: for a schema a server
 * builds (from its limits, or in a route plugin) rather than a module. zod's registry holds one
 * schema per id: a server claims its ids back before its document is built (documentTransforms),
 * so two servers in one process (the tests) each document their own.
 */
export function named<T extends z.ZodType>(config: object, id: string, build: () => T): T {
  const schemas = configured.get(config) ?? new Map<string, z.ZodType>();
  configured.set(config, schemas);
  let schema = schemas.get(id) as T | undefined;
  if (!schema) {
    schema = build().meta({ id });
    schemas.set(id, schema);
  }
  return schema;
}

type Transform = ReturnType<typeof createJsonSchemaTransform>;
type TransformObject = ReturnType<typeof createJsonSchemaTransformObject>;

/** @fastify/swagger's transforms for one server: its routes' zod schemas to JSON Schema, its named schemas as components. */
export function documentTransforms(config: object): { transform: Transform; transformObject: TransformObject } {
  // @fastify/swagger builds the whole document in one synchronous call: no other server's
  // claim can come between this one and the conversion
  const claim = () => {
    for (const [id, schema] of configured.get(config) ?? []) z.globalRegistry.add(schema, { id });
  };
  // one of each per server: the transform caches the registry's ids
  const transform = createJsonSchemaTransform({});
  const transformObject = createJsonSchemaTransformObject({});
  return {
    transform: (route) => {
      claim();
      return transform(route);
    },
    transformObject: (document) => {
      claim();
      return finish(transformObject(document) as OpenAPIDocument) as ReturnType<TransformObject>;
    },
  };
}

export interface Media {
  schema: Record<string, unknown>;
  example?: unknown;
}
export interface Operation {
  operationId?: string;
  requestBody?: { description?: string; content: Record<string, Media> };
  responses: Record<string, { content?: Record<string, Media> }>;
}
export interface OpenAPIDocument {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Record<string, unknown>> } & Record<string, unknown>;
}

const COMPONENT = "#/components/schemas/";

/** The names of the components `value` refers to, directly. */
function refsIn(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) refsIn(v, into);
  else if (value !== null && typeof value === "object") {
    for (const [key, v] of Object.entries(value)) {
      if (key === "$ref" && typeof v === "string" && v.startsWith(COMPONENT)) into.add(v.slice(COMPONENT.length));
      else refsIn(v, into);
    }
  }
  return into;
}

/**
 * The document as published: each operation's examples (server/examples.ts), a request body
 * described by its component's description, and only the components an operation reaches, by name.
 */
function finish(document: OpenAPIDocument): OpenAPIDocument {
  const { schemas } = document.components;
  for (const operations of Object.values(document.paths)) {
    for (const op of Object.values(operations)) {
      const examples = op.operationId === undefined ? undefined : EXAMPLES[op.operationId];
      const body = op.requestBody?.content["application/json"];
      if (op.requestBody && body) {
        if (examples && "request" in examples) body.example = examples.request;
        const ref = body.schema.$ref;
        const described = typeof ref === "string" ? schemas[ref.slice(COMPONENT.length)]?.description : undefined;
        if (op.requestBody.description === undefined && typeof described === "string") op.requestBody.description = described;
      }
      const other = op.operationId === undefined ? undefined : OTHER_BODIES[op.operationId];
      if (op.requestBody && other) Object.assign(op.requestBody.content, other);
      for (const [status, example] of Object.entries(examples?.responses ?? {})) {
        const media = op.responses[status]?.content?.["application/json"];
        if (media) media.example = example;
      }
    }
  }
  // a named schema used only in requests has an unused response twin (and the other way round)
  const reached = new Set<string>();
  const pending = [...refsIn(document.paths)];
  while (pending.length > 0) {
    const name = pending.pop() as string;
    if (reached.has(name)) continue;
    reached.add(name);
    pending.push(...refsIn(schemas[name]));
  }
  // by name: the registry's order is the order modules were loaded in
  const kept = [...reached].sort().map((name) => [name, schemas[name]] as const);
  return { ...document, components: { ...document.components, schemas: Object.fromEntries(kept) } };
}
