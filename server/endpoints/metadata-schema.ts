// An external endpoint's metadata schema, compiled in the API process to check threads before
// they are sent. The schema comes from someone else's server, so it is held to a subset of JSON
// Schema with no unbounded step: no regular expressions (`pattern`, `patternProperties`: a
// crafted one backtracks for minutes), no `$ref` (no recursion), no formats, no `uniqueItems`
// (pairwise: quadratic in an array's length), at most 16 KiB and 32 levels. What is left still
// costs schema nodes × metadata values, both the tenant's, so the check itself is metered
// (metered-schema.ts) and stops at a budget.

import { Ajv } from "ajv";
import { checkValue, compileNode, type SchemaMeter } from "./metered-schema.ts";

export const MAX_SCHEMA_BYTES = 16 * 1024;
const MAX_DEPTH = 32;

const ANNOTATIONS = new Set(["$schema", "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"]);
const VALUE_KEYWORDS = new Set([
  "type",
  "enum",
  "const",
  "required",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
]);
/** Keywords whose value is a schema, a list of schemas, or a map of schemas. */
const SUBSCHEMA = new Set(["items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"]);
const SUBSCHEMA_LIST = new Set(["anyOf", "oneOf", "allOf", "prefixItems"]);
const SUBSCHEMA_MAP = new Set(["properties", "$defs", "definitions"]);

export class SchemaRefused extends Error {}

/** Throws SchemaRefused naming the first keyword outside the subset, with its JSON pointer. */
function checkSubset(schema: unknown): void {
  const stack: Array<[unknown, string, number]> = [[schema, "", 0]];
  while (stack.length > 0) {
    const [node, path, depth] = stack.pop() as [unknown, string, number];
    if (typeof node === "boolean") continue;
    if (node === null || typeof node !== "object" || Array.isArray(node)) throw new SchemaRefused(`${path || "/"} is not a schema`);
    if (depth > MAX_DEPTH) throw new SchemaRefused(`the schema nests more than ${MAX_DEPTH} levels`);
    for (const [key, value] of Object.entries(node)) {
      const at = `${path}/${key}`;
      if (ANNOTATIONS.has(key) || VALUE_KEYWORDS.has(key)) continue;
      if (SUBSCHEMA.has(key)) stack.push([value, at, depth + 1]);
      else if (SUBSCHEMA_LIST.has(key) && Array.isArray(value))
        for (const [i, v] of value.entries()) stack.push([v, `${at}/${i}`, depth + 1]);
      else if (SUBSCHEMA_MAP.has(key) && value && typeof value === "object" && !Array.isArray(value)) {
        for (const [k, v] of Object.entries(value)) stack.push([v, `${at}/${k}`, depth + 1]);
      } else {
        throw new SchemaRefused(
          `${at}: the keyword "${key}" is not checked by Gradebox (regular expressions, $ref and formats from another server are not run); drop it from the endpoint's metadata schema`,
        );
      }
    }
  }
}

/** The first problem of a thread's metadata, or undefined; throws SchemaBudgetExceeded past the meter's budget. */
export type MetadataCheck = (metadata: Record<string, unknown>, meter: SchemaMeter) => string | undefined;

// strict: false lets annotations ajv does not know pass; the subset check above has the last word
const ajv = new Ajv({ strict: false });

/** Compiles an endpoint's schema, or throws SchemaRefused; the check returns the first problem, or undefined. */
export function compileMetadataSchema(schema: unknown): MetadataCheck {
  const bytes = Buffer.byteLength(JSON.stringify(schema) ?? "");
  if (bytes > MAX_SCHEMA_BYTES) throw new SchemaRefused(`the schema is ${bytes} bytes of JSON; at most ${MAX_SCHEMA_BYTES} are accepted`);
  checkSubset(schema);
  // a copy without $schema: ajv would look the draft up, and the check is the same under any
  const { $schema: _draft, ...body } = typeof schema === "object" && schema !== null ? (schema as Record<string, unknown>) : {};
  const compiled = typeof schema === "boolean" ? schema : body;
  // ajv only reads the schema against the draft-07 meta-schema (work bounded by the schema's 16 KiB);
  // the metadata is checked by the metered evaluator, never by ajv
  if (!ajv.validateSchema(compiled)) {
    throw new SchemaRefused(`it is not a valid JSON Schema: ${`schema is invalid: ${ajv.errorsText(ajv.errors)}`.slice(0, 300)}`);
  }
  const root = compileNode(compiled);
  return (metadata, meter) => checkValue(root, metadata, meter);
}
