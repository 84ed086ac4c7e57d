// The Python client's TypedDicts (clients/python/src/gradebox/types.py) against the OpenAPI
// document the running server serves: each names the fields of its schema, required where the
// schema requires them, with value types that match where Python's can say (str, int, float,
// bool, None, list, dict, Literal, another TypedDict). The .py file is read as text: a class per
// `class Name(Bases, total=…):`, a field per `name: annotation` line.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { OpenAPIDocument } from "../server/openapi.ts";
import { repoRoot, startServer, type TestServer } from "./support/helpers.ts";

/** Each public TypedDict (and alias) of types.py, and the schema of the document it stands for. */
const SCHEMA_OF: Record<string, string> = {
  Role: "RoleInput",
  Language: "Language",
  Turn: "TurnInput",
  Thread: "ThreadInput",
  Grader: "Grader",
  GraderWithSource: "GraderDetail",
  GraderPage: "GraderPage",
  GradeScore: "ScoredResult",
  GradeError: "GradeError",
  GradeResult: "GradeResult",
  GradeResponse: "GradeResponse",
  GradeBatchResponse: "GradeBatchResponse",
  Abstention: "Abstention",
  Provenance: "Provenance",
  PartProvenance: "PartProvenance",
  Histogram: "Histogram",
  GroupSummary: "GroupSummary",
  BatchSummary: "BatchSummary",
  Limits: "Limits",
  Secret: "Secret",
};

// ---- types.py, read as text ----

interface PyClass {
  bases: string[];
  total: boolean;
  fields: Array<{ name: string; annotation: string }>;
}

function readTypes(text: string): { classes: Map<string, PyClass>; aliases: Map<string, string>; exported: string[] } {
  const classes = new Map<string, PyClass>();
  const aliases = new Map<string, string>();
  let current: PyClass | undefined;
  let inDocstring = false;
  for (const line of text.split("\n")) {
    if (inDocstring) {
      if (line.includes('"""')) inDocstring = false;
      continue;
    }
    const header = /^class (\w+)\(([^)]*)\):/.exec(line);
    if (header) {
      const args = header[2].split(",").map((a) => a.trim());
      current = { bases: args.filter((a) => !a.includes("=")), total: !args.includes("total=False"), fields: [] };
      classes.set(header[1], current);
      continue;
    }
    if (/^\S/.test(line)) {
      current = undefined;
      // an alias: a Literal, or a plain str (Role: any role string passes)
      const alias = /^(\w+) = (Literal\[.*\]|str)$/.exec(line);
      if (alias) aliases.set(alias[1], alias[2]);
      continue;
    }
    if (!current) continue;
    const body = line.trim();
    if (body.startsWith('"""')) {
      inDocstring = !(body.length > 3 && body.endsWith('"""'));
      continue;
    }
    const field = /^(\w+): (.+)$/.exec(body);
    if (field) current.fields.push({ name: field[1], annotation: field[2] });
  }
  const all = /__all__ = \[([^\]]*)\]/s.exec(text)?.[1] ?? "";
  return { classes, aliases, exported: [...all.matchAll(/"(\w+)"/g)].map((m) => m[1]) };
}

/** A TypedDict's fields, its bases' first, each required when the class declaring it is total. */
function fieldsOf(classes: Map<string, PyClass>, name: string): Map<string, { annotation: string; required: boolean }> {
  const cls = classes.get(name);
  assert.ok(cls, `types.py has class ${name}`);
  const fields = new Map<string, { annotation: string; required: boolean }>();
  for (const base of cls.bases) if (base !== "TypedDict") for (const [k, v] of fieldsOf(classes, base)) fields.set(k, v);
  for (const { name: field, annotation } of cls.fields) fields.set(field, { annotation, required: cls.total });
  return fields;
}

// ---- annotations: Name, Name[args], A | B, Literal["a", "b"] ----

type Py = { kind: "name"; name: string; args: Py[] } | { kind: "union"; options: Py[] } | { kind: "literal"; values: string[] };

function parseAnnotation(text: string): Py {
  let i = 0;
  const skip = () => {
    while (text[i] === " ") i++;
  };
  const one = (): Py => {
    skip();
    const name = /^[\w.]+/.exec(text.slice(i))?.[0];
    assert.ok(name, `an annotation at "${text.slice(i)}" in "${text}"`);
    i += name.length;
    skip();
    if (name === "Literal") {
      const end = text.indexOf("]", i);
      const values = [...text.slice(i, end).matchAll(/"([^"]*)"|'([^']*)'/g)].map((m) => m[1] ?? m[2]);
      i = end + 1;
      return { kind: "literal", values };
    }
    const args: Py[] = [];
    if (text[i] === "[") {
      i++;
      for (;;) {
        args.push(union());
        skip();
        if (text[i++] === "]") break;
      }
    }
    return { kind: "name", name, args };
  };
  const union = (): Py => {
    const options = [one()];
    skip();
    while (text[i] === "|") {
      i++;
      options.push(one());
      skip();
    }
    return options.length === 1 ? options[0] : { kind: "union", options };
  };
  const parsed = union();
  skip();
  assert.equal(i, text.length, `the whole of "${text}" is read`);
  return parsed;
}

// ---- the document ----

type Schema = Record<string, unknown>;
let s: TestServer;
let doc: OpenAPIDocument;
before(async () => {
  s = await startServer({ listen: true });
  doc = (await (await fetch(`${s.url}/openapi.json`)).json()) as OpenAPIDocument;
});
after(() => s?.close());

const COMPONENT = "#/components/schemas/";
const resolve = (schema: Schema): Schema =>
  typeof schema.$ref === "string" ? resolve(doc.components.schemas[schema.$ref.slice(COMPONENT.length)] as Schema) : schema;
const typesOf = (schema: Schema): string[] => {
  const t = resolve(schema);
  if (Array.isArray(t.anyOf)) return (t.anyOf as Schema[]).flatMap(typesOf);
  if (Array.isArray(t.oneOf)) return (t.oneOf as Schema[]).flatMap(typesOf);
  if (Array.isArray(t.type)) return t.type as string[];
  if (typeof t.type === "string") return [t.type];
  if ("const" in t) return [typeof t.const];
  return [];
};
const nonNull = (schema: Schema): Schema => {
  const t = resolve(schema);
  if (Array.isArray(t.anyOf)) {
    const rest = (t.anyOf as Schema[]).filter((o) => resolve(o).type !== "null");
    return rest.length === 1 ? rest[0] : { anyOf: rest };
  }
  if (Array.isArray(t.type)) return { ...t, type: (t.type as string[]).filter((x) => x !== "null") };
  return t;
};
/** An object schema's fields: a union's are each option's, required only where every option requires them. */
function objectOf(schema: Schema): { properties: Record<string, Schema>; required: Set<string> } {
  const t = resolve(schema);
  const options = (t.anyOf ?? t.oneOf) as Schema[] | undefined;
  if (!options) return { properties: (t.properties ?? {}) as Record<string, Schema>, required: new Set((t.required ?? []) as string[]) };
  const each = options.map(objectOf);
  const properties: Record<string, Schema> = Object.assign({}, ...each.map((o) => o.properties));
  // a discriminated union's tag: each option has its own literal, the union allows them all
  for (const field of Object.keys(properties)) {
    const literals = each.map((o) => (o.properties[field] ? resolve(o.properties[field]) : undefined)).filter((p) => p !== undefined);
    if (literals.length > 1 && literals.every((p) => "const" in p || Array.isArray(p.enum))) {
      properties[field] = { enum: [...new Set(literals.flatMap((p) => ("const" in p ? [p.const] : (p.enum as unknown[]))))] };
    }
  }
  return {
    properties,
    required: new Set([...each[0].required].filter((k) => each.every((o) => o.required.has(k)))),
  };
}

/** Where the annotation does not match the schema, and why ([] when it does). */
function mismatches(py: Py, schema: Schema, at: string, aliases: Map<string, string>): string[] {
  const t = resolve(schema);
  if (Object.keys(t).every((k) => k === "description")) return []; // the document does not constrain it
  const types = typesOf(t);
  const no = (why: string) => [`${at}: ${why}`];
  if (py.kind === "union") {
    const withNone = py.options.filter((o) => !(o.kind === "name" && o.name === "None"));
    if (withNone.length !== py.options.length && !types.includes("null")) return no("None, but the schema is not nullable");
    if (withNone.length !== 1) return no(`a union the test cannot map: ${JSON.stringify(py)}`);
    return mismatches(withNone[0], nonNull(t), at, aliases);
  }
  if (types.includes("null")) return no("the schema is nullable: annotate it `… | None`");
  if (py.kind === "literal") {
    const values = (t.enum ?? ("const" in t ? [t.const] : undefined)) as unknown[] | undefined;
    return values && [...values].sort().join() === [...py.values].sort().join()
      ? []
      : no(`Literal${JSON.stringify(py.values)} but the schema allows ${JSON.stringify(values)}`);
  }
  const alias = aliases.get(py.name);
  if (alias) return mismatches(parseAnnotation(alias), t, at, aliases);
  const expect = (ok: boolean, what: string) => (ok ? [] : no(`${py.name} but the schema is ${JSON.stringify(types)} (${what})`));
  switch (py.name) {
    case "Any":
      return [];
    case "str":
      return expect(types.length === 1 && types[0] === "string", "a string");
    case "bool":
      return expect(types.length === 1 && types[0] === "boolean", "a boolean");
    case "int":
      // integers the server types as numbers (versions, counts, milliseconds) are ints in Python
      return expect(types.length === 1 && (types[0] === "integer" || types[0] === "number"), "a number");
    case "float":
      return expect(types.length === 1 && types[0] === "number", "a number");
    case "list":
      if (!types.includes("array") || types.length !== 1) return expect(false, "a list");
      return mismatches(py.args[0], (t.items ?? {}) as Schema, `${at}[]`, aliases);
    case "dict":
      return expect(types.length > 0 && types.every((x) => x === "object"), "an object");
    default:
      if (SCHEMA_OF[py.name]) {
        const named = doc.components.schemas[SCHEMA_OF[py.name]];
        return resolve(named) === t || schema.$ref === `${COMPONENT}${SCHEMA_OF[py.name]}`
          ? []
          : no(`${py.name} but the schema is not ${SCHEMA_OF[py.name]}: ${JSON.stringify(schema).slice(0, 200)}`);
      }
      return no(`${py.name}: a type the test cannot map`);
  }
}

/** What types.py's text says that the document does not ([] when they agree). */
function problemsOf(text: string): string[] {
  const { classes, aliases, exported } = readTypes(text);
  const problems = exported.filter((name) => !SCHEMA_OF[name]).map((name) => `${name}: no schema is named for it here`);
  for (const [py, name] of Object.entries(SCHEMA_OF)) {
    const schema = doc.components.schemas[name];
    if (!schema) {
      problems.push(`${py}: the document names no ${name}`);
      continue;
    }
    const alias = aliases.get(py);
    if (alias) {
      problems.push(...mismatches(parseAnnotation(alias), schema, py, aliases));
      continue;
    }
    const fields = fieldsOf(classes, py);
    const { properties, required } = objectOf(schema);
    for (const field of Object.keys(properties)) if (!fields.has(field)) problems.push(`${py}.${field}: missing (${name} has it)`);
    for (const [field, { annotation, required: pyRequired }] of fields) {
      if (!properties[field]) {
        problems.push(`${py}.${field}: ${name} has no such field`);
        continue;
      }
      if (pyRequired !== required.has(field)) {
        const is = (yes: boolean) => (yes ? "required" : "optional");
        problems.push(`${py}.${field}: ${is(pyRequired)}, but ${is(required.has(field))} in ${name}`);
      }
      problems.push(...mismatches(parseAnnotation(annotation), properties[field], `${py}.${field}`, aliases));
    }
  }
  return problems;
}

const TYPES_PY = join(repoRoot, "clients/python/src/gradebox/types.py");

test("every TypedDict of the Python client has its schema's fields, required as there, of matching types", () => {
  assert.deepEqual(problemsOf(readFileSync(TYPES_PY, "utf8")), []);
});

test("the check finds a field that drifted: mistyped, missing, optional where required, not nullable", () => {
  const text = readFileSync(TYPES_PY, "utf8");
  const drifted = text
    .replace("    maxSamples: int\n", "    maxSamples: str\n")
    .replace("    recentFaults: int\n", "")
    .replace("class Secret(TypedDict):", "class Secret(TypedDict, total=False):")
    .replace("    nextCursor: str | None\n", "    nextCursor: str\n");
  assert.deepEqual(
    problemsOf(drifted).sort(),
    [
      "GraderPage.nextCursor: the schema is nullable: annotate it `… | None`",
      "GraderWithSource.recentFaults: missing (GraderDetail has it)",
      "Grader.recentFaults: missing (Grader has it)",
      'Limits.maxSamples: str but the schema is ["integer"] (a string)',
      "Secret.createdAt: optional, but required in Secret",
      "Secret.host: optional, but required in Secret",
      "Secret.name: optional, but required in Secret",
      "Secret.updatedAt: optional, but required in Secret",
    ].sort(),
  );
});
