// The metered metadata-schema check against ajv (draft-07, strict off: what checked endpoint
// metadata before) as the oracle: every keyword of the subset passes and fails as ajv says, with
// ajv's first error, over a table and over generated schemas; and its work is metered.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Ajv } from "ajv";
import { compileMetadataSchema, SchemaRefused } from "../server/endpoints/metadata-schema.ts";
import { SchemaBudgetExceeded, SchemaMeter } from "../server/endpoints/metered-schema.ts";

const ajv = new Ajv({ strict: false });
/** JSON Schema's keyword, written so that no object literal here looks like a promise */
const THEN = "then";

/** What the old check (ajv) answered: the first error as Gradebox words it, or undefined. */
function oracle(schema: unknown, metadata: unknown): string | undefined {
  const validate = ajv.compile(schema as object);
  if (validate(metadata)) return undefined;
  const e = validate.errors?.[0];
  return e ? `metadata${e.instancePath.replaceAll("/", ".")} ${e.message}` : "metadata is invalid";
}

function ours(schema: unknown, metadata: unknown, meter = new SchemaMeter()): string | undefined {
  meter.startThread();
  return compileMetadataSchema(schema)(metadata as Record<string, unknown>, meter);
}

/** [schema, metadata values that pass, metadata values that fail] */
const TABLE: Array<[Record<string, unknown> | boolean, unknown[], unknown[]]> = [
  [true, [{}, { a: 1 }], []],
  [false, [], [{}]],
  [{ type: "object" }, [{}], []],
  [{ properties: { x: { type: "string" } } }, [{ x: "a" }, {}], [{ x: 1 }, { x: null }]],
  [{ properties: { x: { type: ["string", "null"] } } }, [{ x: null }, { x: "" }], [{ x: 1 }, { x: [] }]],
  [{ properties: { x: { type: "integer" } } }, [{ x: 1 }, { x: 1.0 }, { x: -3 }], [{ x: 1.5 }, { x: "1" }]],
  [{ properties: { x: { type: "number" } } }, [{ x: 1.5 }], [{ x: true }]],
  [{ properties: { x: { type: "boolean" } } }, [{ x: false }], [{ x: 0 }]],
  [{ properties: { x: { type: "array" } } }, [{ x: [] }], [{ x: {} }]],
  [{ properties: { x: { type: "object" } } }, [{ x: {} }], [{ x: [] }, { x: null }]],
  [{ properties: { x: { const: "a" } } }, [{ x: "a" }], [{ x: "b" }, { x: ["a"] }]],
  [{ properties: { x: { const: { a: [1, { b: null }] } } } }, [{ x: { a: [1, { b: null }] } }], [{ x: { a: [1, {}] } }, { x: { a: [1] } }]],
  [{ properties: { x: { const: 0 } } }, [{ x: 0 }, { x: -0 }], [{ x: false }, { x: "0" }]],
  [
    { properties: { x: { enum: [1, "a", null, true, [1], { k: 2 }] } } },
    [{ x: 1 }, { x: "a" }, { x: null }, { x: true }, { x: [1] }, { x: { k: 2 } }],
    [{ x: "1" }, { x: false }, { x: [1, 1] }, { x: { k: 3 } }, { x: {} }],
  ],
  [{ properties: { x: { not: { type: "string" } } } }, [{ x: 1 }], [{ x: "s" }]],
  [{ properties: { x: { anyOf: [{ type: "string" }, { minimum: 3 }] } } }, [{ x: "a" }, { x: 5 }, { x: null }], [{ x: 1 }]],
  [{ properties: { x: { oneOf: [{ type: "integer" }, { minimum: 3 }] } } }, [{ x: 1 }, { x: 3.5 }], [{ x: 4 }, { x: 2.5 }]],
  [
    { properties: { x: { oneOf: [{ type: "string" }, { type: "number" }, { minimum: 0 }] } } },
    [{ x: -1 }, { x: null }],
    [{ x: "a" }, { x: 1 }],
  ],
  [{ properties: { x: { allOf: [{ minimum: 1 }, { maximum: 3 }] } } }, [{ x: 2 }], [{ x: 0 }, { x: 4 }]],
  [
    { properties: { x: { if: { type: "number" }, [THEN]: { minimum: 3 }, else: { type: "string" } } } },
    [{ x: 3 }, { x: "a" }],
    [{ x: 1 }, { x: null }],
  ],
  [{ properties: { x: { if: { type: "number" }, [THEN]: false } } }, [{ x: "a" }], [{ x: 1 }]],
  [{ properties: { x: { if: { type: "number" } } } }, [{ x: "a" }, { x: 1 }], []],
  [{ properties: { x: { [THEN]: false } } }, [{ x: 1 }], []],
  [{ properties: { x: { maximum: 3, minimum: 1 } } }, [{ x: 1 }, { x: 3 }, { x: "big" }], [{ x: 0 }, { x: 3.5 }]],
  [{ properties: { x: { exclusiveMaximum: 3, exclusiveMinimum: 1 } } }, [{ x: 2 }], [{ x: 1 }, { x: 3 }]],
  [{ properties: { x: { multipleOf: 3 } } }, [{ x: 9 }, { x: 0 }], [{ x: 10 }, { x: 1e22 }]],
  [{ properties: { x: { multipleOf: 0.5 } } }, [{ x: 1.5 }], [{ x: 1.2 }]],
  [{ properties: { x: { multipleOf: 0.1 } } }, [{ x: 0.5 }], [{ x: 0.3 }]],
  [
    { properties: { x: { minLength: 2, maxLength: 3 } } },
    [{ x: "ab" }, { x: "abc" }, { x: "😀😀" }, { x: 5 }],
    [{ x: "a" }, { x: "abcd" }, { x: "😀" }],
  ],
  [
    { properties: { x: { maxLength: 2 } } },
    [{ x: "😀😀" }, { x: "é\u0301" }],
    [{ x: "😀😀😀" }, { x: "abc" }, { x: "\ud800\ud800\ud800" }],
  ],
  [{ properties: { x: { minItems: 1, maxItems: 2 } } }, [{ x: [1] }, { x: [1, 2] }], [{ x: [] }, { x: [1, 2, 3] }]],
  [{ properties: { x: { items: { type: "number" } } } }, [{ x: [] }, { x: [1, 2] }], [{ x: [1, "a"] }]],
  [{ properties: { x: { items: false } } }, [{ x: [] }], [{ x: [1] }]],
  [{ properties: { x: { contains: { type: "string" } } } }, [{ x: [1, "a"] }], [{ x: [] }, { x: [1, 2] }]],
  [{ properties: { x: { contains: { type: "string" }, items: { type: "number" } } } }, [], [{ x: ["a"] }, { x: [1] }]],
  [
    { properties: { x: { anyOf: [{ contains: { type: "string" } }, { contains: { const: 1 } }] } } },
    [{ x: [2, 1] }],
    [{ x: [2, 3] }, { x: [] }],
  ],
  [{ minProperties: 1, maxProperties: 2 }, [{ a: 1 }, { a: 1, b: 2 }], [{}, { a: 1, b: 2, c: 3 }]],
  [{ required: ["a", "b"] }, [{ a: 1, b: null }], [{ a: 1 }, {}]],
  [{ required: ["a"], properties: { a: { type: "string" } }, additionalProperties: false }, [{ a: "x" }], [{ a: 1, b: 2 }, { b: 2 }]],
  [{ additionalProperties: { type: "string" }, properties: { a: {} } }, [{ a: 1, b: "x" }], [{ a: 1, "x.y": 2 }]],
  [{ propertyNames: { maxLength: 3 } }, [{ abc: 1 }], [{ abcd: 1 }]],
  [{ propertyNames: { enum: ["a", "b"] } }, [{ a: 1 }], [{ c: 1 }]],
  [{ properties: { "a/b": { type: "string" }, "~t": { type: "string" } } }, [{ "a/b": "x" }], [{ "a/b": 1 }, { "~t": 1 }]],
  [{ properties: { xs: { items: { properties: { k: { type: "string" } } } } } }, [{ xs: [{ k: "a" }] }], [{ xs: [{ k: "a" }, { k: 1 }] }]],
  // ajv checks a single type where its group's keywords run: other groups' keywords come first
  [{ properties: { x: { type: "string", minLength: 1, maximum: 3 } } }, [{ x: "a" }], [{ x: 5 }, { x: 2 }, { x: "" }]],
  [{ properties: { x: { type: "object", enum: [1] } } }, [], [{ x: 5 }, { x: {} }]],
  [
    { properties: { x: { type: "object", required: ["a"], anyOf: [{ const: 1 }, { type: "object" }] } } },
    [{ x: { a: 1 } }],
    [{ x: 5 }, { x: {} }],
  ],
  [{ properties: { x: { type: ["integer"], minimum: 3 } } }, [{ x: 3 }], [{ x: 1.5 }, { x: 1 }]],
  [
    { properties: { x: { prefixItems: [{ type: "string" }] } }, $defs: { a: { type: "string" } }, definitions: { b: {} } },
    [{ x: [1] }],
    [],
  ],
  [
    {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      title: "t",
      description: "d",
      properties: { x: { default: 1, examples: [1] } },
    },
    [{ x: 2 }],
    [],
  ],
];

describe("the metered check answers as ajv did", () => {
  test("every keyword of the subset, passing and failing, with ajv's first error", () => {
    let compared = 0;
    for (const [schema, passing, failing] of TABLE) {
      const { $schema: _draft, ...forAjv } = typeof schema === "object" ? schema : {};
      const oracleSchema = typeof schema === "boolean" ? schema : forAjv;
      for (const value of passing) {
        assert.equal(oracle(oracleSchema, value), undefined, `ajv passes ${JSON.stringify(value)} against ${JSON.stringify(schema)}`);
        assert.equal(ours(schema, value), undefined, `${JSON.stringify(value)} against ${JSON.stringify(schema)}`);
        compared++;
      }
      for (const value of failing) {
        const expected = oracle(oracleSchema, value);
        assert.notEqual(expected, undefined, `ajv fails ${JSON.stringify(value)} against ${JSON.stringify(schema)}`);
        assert.equal(ours(schema, value), expected, `${JSON.stringify(value)} against ${JSON.stringify(schema)}`);
        compared++;
      }
    }
    assert.ok(compared > 100);
  });

  test("generated schemas and values agree with ajv", () => {
    // a small deterministic generator (LCG): nested composites over the subset's keywords
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const pick = <T>(xs: T[]): T => xs[rand(xs.length)];
    const values = (depth: number): unknown => {
      const kind = rand(depth > 2 ? 5 : 7);
      if (kind === 0) return null;
      if (kind === 1) return pick([true, false]);
      if (kind === 2) return pick([0, 1, 2, 3.5, -1, 10]);
      if (kind === 3) return pick(["", "a", "ab", "abc", "😀"]);
      if (kind === 4) return pick([0, "a", null]);
      if (kind === 5) return Array.from({ length: rand(4) }, () => values(depth + 1));
      return Object.fromEntries(Array.from({ length: rand(4) }, () => [pick(["a", "b", "c", "dd"]), values(depth + 1)]));
    };
    const schemaOf = (depth: number): unknown => {
      if (depth > 3 || rand(6) === 0) return pick([true, false, {}, { type: "string" }, { type: "number" }]);
      const s: Record<string, unknown> = {};
      for (let k = 0; k < 1 + rand(3); k++) {
        const key = pick([
          "type",
          "enum",
          "const",
          "not",
          "anyOf",
          "oneOf",
          "allOf",
          "if",
          "minimum",
          "maximum",
          "multipleOf",
          "minLength",
          "maxLength",
          "minItems",
          "maxItems",
          "items",
          "contains",
          "required",
          "properties",
          "additionalProperties",
          "propertyNames",
          "minProperties",
          "maxProperties",
        ]);
        if (key === "type") s.type = pick(["object", "array", "string", "number", "integer", "null", ["string", "number"]]);
        else if (key === "enum") s.enum = [...new Map([values(3), values(3), values(3)].map((v) => [JSON.stringify(v), v])).values()];
        else if (key === "const") s.const = values(2);
        else if (key === "not" || key === "items" || key === "contains" || key === "additionalProperties" || key === "propertyNames")
          s[key] = schemaOf(depth + 1);
        else if (key === "anyOf" || key === "oneOf" || key === "allOf")
          s[key] = Array.from({ length: 1 + rand(3) }, () => schemaOf(depth + 1));
        else if (key === "if")
          Object.assign(s, { if: schemaOf(depth + 1), [THEN]: schemaOf(depth + 1), ...(rand(2) ? { else: schemaOf(depth + 1) } : {}) });
        else if (key === "multipleOf") s.multipleOf = pick([1, 2, 0.5]);
        else if (key === "required") s.required = pick([["a"], ["a", "b"], []]);
        else if (key === "properties") s.properties = { a: schemaOf(depth + 1), b: schemaOf(depth + 1) };
        else s[key] = rand(3);
      }
      return s;
    };
    let failed = 0;
    for (let k = 0; k < 600; k++) {
      const schema = { properties: { x: schemaOf(0) } };
      for (let j = 0; j < 5; j++) {
        const value = { x: values(0) };
        const expected = oracle(schema, value);
        if (expected !== undefined) failed++;
        assert.equal(ours(schema, value), expected, `${JSON.stringify(value)} against ${JSON.stringify(schema)}`);
      }
    }
    assert.ok(failed > 300, `${failed} failing cases compared`);
  });

  test("schemas ajv refuses are refused, in ajv's words", () => {
    for (const schema of [
      { type: "foo" },
      { minimum: "x" },
      { required: [1] },
      { required: ["a", "a"] },
      { multipleOf: 0 },
      { exclusiveMinimum: true },
      { minLength: -1 },
      { anyOf: [] },
      { enum: [] },
      { properties: { a: { type: 1 } } },
      { definitions: { a: { type: "foo" } } },
    ]) {
      let ajvMessage = "";
      try {
        ajv.compile(schema);
      } catch (error) {
        ajvMessage = (error as Error).message;
      }
      assert.match(ajvMessage, /^schema is invalid/, JSON.stringify(schema));
      assert.throws(
        () => compileMetadataSchema(schema),
        (e) => e instanceof SchemaRefused && e.message === `it is not a valid JSON Schema: ${ajvMessage.slice(0, 300)}`,
        JSON.stringify(schema),
      );
    }
  });
});

describe("the meter", () => {
  test("an anyOf of 40 failing contains over a long array stops at the thread's budget, with one error kept", () => {
    const schema = { properties: { xs: { anyOf: Array.from({ length: 40 }, () => ({ contains: { type: "string" } })) } } };
    const meter = new SchemaMeter(100_000, 1_000_000);
    assert.throws(
      () => ours(schema, { xs: new Array(200_000).fill(0) }, meter),
      (e) => e instanceof SchemaBudgetExceeded && e.scope === "thread" && e.limit === 100_000,
    );
    assert.equal(meter.units, 100_001, "stopped at the first unit past the budget");
    // under the budget: the same answer as ajv's
    const small = { xs: new Array(50).fill(0) };
    assert.equal(ours(schema, small), oracle(schema, small));
  });

  test("an enum of 2,400 primitives costs a constant per value, not 2,400", () => {
    const schema = { properties: { xs: { items: { enum: Array.from({ length: 2400 }, (_, i) => i) } } } };
    const meter = new SchemaMeter();
    assert.equal(ours(schema, { xs: new Array(10_000).fill(2399) }, meter), undefined);
    // the root, the property, then per value: the item's node and its enum lookup
    assert.ok(meter.units <= 2 * 10_000 + 10, `${meter.units} units`);
  });

  test("an enum of objects against a metadata object of many keys charges its keys, counted once, not once per enum entry", () => {
    const schema = { type: "object", enum: Array.from({ length: 1000 }, (_, i) => ({ a: i })) };
    const wide = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, 0]));
    const meter = new SchemaMeter();
    assert.equal(ours(schema, wide, meter), oracle(schema, wide));
    // the value's 20,000 keys are charged (they are enumerated) once; each entry's comparison is then a unit
    assert.ok(meter.units >= 20_000 && meter.units < 25_000, `${meter.units} units`);
    // past the thread's budget, the wide value stops the check instead of passing uncharged
    assert.throws(() => ours(schema, wide, new SchemaMeter(10_000, 100_000)), SchemaBudgetExceeded);
  });

  test("the batch's budget bounds the sum of its threads' checks", () => {
    const check = compileMetadataSchema({ properties: { xs: { items: { type: "number" } } } });
    const meter = new SchemaMeter(1_000, 2_500);
    const metadata = { xs: new Array(900).fill(1) };
    meter.startThread();
    assert.equal(check(metadata, meter), undefined);
    meter.startThread();
    assert.equal(check(metadata, meter), undefined);
    meter.startThread();
    assert.throws(
      () => check(metadata, meter),
      (e) => e instanceof SchemaBudgetExceeded && e.scope === "batch" && e.limit === 2_500,
    );
  });
});
