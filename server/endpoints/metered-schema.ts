// The check of a thread's metadata against an endpoint's metadata schema, for exactly the subset
// metadata-schema.ts admits, under a meter. Both the schema and the metadata are the tenant's, so
// "schema nodes × metadata values" is no bound at all (an anyOf of 40 `contains` over a 1 M
// element array ran ajv out of heap): every unit of work is counted and the check stops at a
// budget. It answers what ajv (draft-07, strict off, first error) answers for the same schema, in
// ajv's keyword order, with ajv's messages, and keeps one error: branches that may recover (anyOf,
// oneOf, not, if, contains) are tried without building errors beyond the one ajv would report.

/** A unit: one schema node applied to one value, one enum/const lookup, one property looked up, one error built. */
export const SCHEMA_UNITS = {
  /**
   * per thread: 20-35 ns a unit warm on this 2-core machine, so 20-40 ms (~150 ms cold under
   * load); a schema node over a 1 M element array, far past any sane grading metadata
   */
  thread: 1_000_000,
  /**
   * per batch: 1,000 threads × the thread's would be 20-40 s of the API's event loop; 4 M is
   * thousands of units a thread for a full batch, and the loop is yielded between threads
   */
  batch: 4_000_000,
};
/** Characters of a string whose code points are counted per unit (minLength/maxLength). */
const CHARS_PER_UNIT = 64;

export class SchemaBudgetExceeded extends Error {
  constructor(
    readonly scope: "thread" | "batch",
    readonly limit: number,
  ) {
    super(`the metadata schema check went over its ${scope} budget of ${limit} units`);
  }
}

/** The units a batch's checks spent; each thread gets its own budget within the batch's. */
export class SchemaMeter {
  units = 0;
  private limit = 0;
  private scope: "thread" | "batch" = "thread";
  constructor(
    readonly perThread = SCHEMA_UNITS.thread,
    readonly perBatch = SCHEMA_UNITS.batch,
  ) {}

  startThread(): void {
    const threadEnd = this.units + this.perThread;
    this.scope = threadEnd <= this.perBatch ? "thread" : "batch";
    this.limit = Math.min(threadEnd, this.perBatch);
  }

  charge(units: number): void {
    this.units += units;
    if (this.units > this.limit) throw new SchemaBudgetExceeded(this.scope, this.scope === "thread" ? this.perThread : this.perBatch);
  }
}

type TypeName = "null" | "boolean" | "object" | "array" | "number" | "integer" | "string";
type Group = "number" | "string" | "array" | "object";
type Limit = "maximum" | "minimum" | "exclusiveMaximum" | "exclusiveMinimum" | "multipleOf";

interface Equals {
  /** primitives, looked up in O(1) */
  primitives: Set<unknown>;
  /** objects and arrays, compared deeply (the schema's size bounds the work per value) */
  composites: unknown[];
  message: string;
}

/** A compiled schema object (a boolean schema is `true`/`false`). */
interface Node {
  types?: TypeName[];
  /** ajv checks a single type with keywords of its group where that group runs, not first */
  deferType?: Group;
  const?: Equals;
  enum?: Equals;
  not?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  if?: Schema;
  whenValid?: Schema;
  whenInvalid?: Schema;
  limits: Array<[Limit, number]>;
  maxLength?: number;
  minLength?: number;
  maxItems?: number;
  minItems?: number;
  items?: Schema;
  contains?: Schema;
  maxProperties?: number;
  minProperties?: number;
  required?: string[];
  propertyNames?: Schema;
  additionalProperties?: Schema;
  properties?: Map<string, Schema>;
  /** the typed keyword groups present, in ajv's order */
  groups: Group[];
}
type Schema = Node | boolean;

const GROUP_OF: Record<string, Group> = {
  maximum: "number",
  minimum: "number",
  exclusiveMaximum: "number",
  exclusiveMinimum: "number",
  multipleOf: "number",
  maxLength: "string",
  minLength: "string",
  maxItems: "array",
  minItems: "array",
  items: "array",
  contains: "array",
  maxProperties: "object",
  minProperties: "object",
  required: "object",
  propertyNames: "object",
  additionalProperties: "object",
  properties: "object",
};
const GROUPS: Group[] = ["number", "string", "array", "object"];
const LIMITS: Limit[] = ["maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf"];

/**
 * Compiles a schema already held to the subset and valid against the draft-07 meta-schema
 * (metadata-schema.ts checks both). Keywords outside draft-07 (prefixItems, $defs) and
 * definitions are not evaluated, as ajv does not evaluate them.
 */
export function compileNode(schema: unknown): Schema {
  if (typeof schema === "boolean") return schema;
  const s = schema as Record<string, unknown>;
  const sub = (v: unknown) => compileNode(v);
  const present = new Set(Object.keys(s).map((k) => GROUP_OF[k]));
  const node: Node = { limits: [], groups: GROUPS.filter((g) => present.has(g)) };
  if (s.type !== undefined) {
    node.types = (Array.isArray(s.type) ? s.type : [s.type]) as TypeName[];
    const only = node.types.length === 1 ? node.types[0] : undefined;
    if ((only === "number" || only === "string" || only === "array" || only === "object") && present.has(only)) node.deferType = only;
  }
  if ("const" in s) node.const = equals([s.const], "must be equal to constant");
  if (Array.isArray(s.enum)) node.enum = equals(s.enum, "must be equal to one of the allowed values");
  if (s.not !== undefined) node.not = sub(s.not);
  if (Array.isArray(s.anyOf)) node.anyOf = s.anyOf.map(sub);
  if (Array.isArray(s.oneOf)) node.oneOf = s.oneOf.map(sub);
  if (Array.isArray(s.allOf)) node.allOf = s.allOf.map(sub);
  // as ajv: `if` without `then` or `else` checks nothing, nor do `then`/`else` without `if`
  if (s.if !== undefined && (s.then !== undefined || s.else !== undefined)) {
    node.if = sub(s.if);
    if (s.then !== undefined) node.whenValid = sub(s.then);
    if (s.else !== undefined) node.whenInvalid = sub(s.else);
  }
  for (const limit of LIMITS) if (typeof s[limit] === "number") node.limits.push([limit, s[limit] as number]);
  for (const k of ["maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties"] as const) {
    if (typeof s[k] === "number") node[k] = s[k] as number;
  }
  if (s.items !== undefined) node.items = sub(s.items);
  if (s.contains !== undefined) node.contains = sub(s.contains);
  if (Array.isArray(s.required)) node.required = s.required as string[];
  if (s.propertyNames !== undefined) node.propertyNames = sub(s.propertyNames);
  if (s.additionalProperties !== undefined) node.additionalProperties = sub(s.additionalProperties);
  if (s.properties && typeof s.properties === "object") {
    node.properties = new Map(Object.entries(s.properties).map(([k, v]) => [k, sub(v)]));
  }
  return node;
}

function equals(values: unknown[], message: string): Equals {
  const primitives = new Set<unknown>();
  const composites: unknown[] = [];
  for (const v of values) {
    if (v !== null && typeof v === "object") composites.push(v);
    else primitives.add(v);
  }
  return { primitives, composites, message };
}

/** The first problem of `value` against `schema` as ajv words it (`metadata.a.0 must be string`), or undefined. */
export function checkValue(schema: Schema, value: unknown, meter: SchemaMeter): string | undefined {
  const run = new Run(meter);
  if (run.valid(schema, value)) return undefined;
  const failure = run.failure;
  if (!failure) return "metadata is invalid";
  return `metadata${failure.path.map((p) => `.${String(p).replaceAll("~", "~0").replaceAll("/", "~1")}`).join("")} ${failure.message}`;
}

/**
 * One check. ajv's errors[0], which the caller reports, follows ajv's rules: a keyword failing
 * outside any composite returns its own error; inside a composite (anyOf, oneOf, contains,
 * propertyNames) errors pile up and the first of them is reported when an anyOf, oneOf or
 * propertyNames fails (a composite that passes drops its pile); `not` and `if` build none. Only
 * that first error is ever built: later ones would never be read.
 */
class Run {
  failure: { path: Array<string | number>; message: string } | undefined;
  /** > 0 inside `not` or `if`: no errors */
  private quiet = 0;
  /** > 0 inside a composite: errors pile up rather than return */
  private composite = 0;
  private readonly path: Array<string | number> = [];

  private readonly keyCounts = new WeakMap<object, number>();
  constructor(private readonly meter: SchemaMeter) {}

  /** A keyword's own error; `extra`: one that comes after the errors piled up under it (anyOf, oneOf, propertyNames). */
  private fail(message: string, extra = false): false {
    if (this.quiet > 0) return false;
    if (this.failure && (extra || this.composite > 0)) return false;
    this.meter.charge(1);
    this.failure = { path: [...this.path], message };
    return false;
  }

  private silently(schema: Schema, value: unknown): boolean {
    this.quiet++;
    const ok = this.valid(schema, value);
    this.quiet--;
    return ok;
  }

  private inComposite(schema: Schema, value: unknown, key?: string | number): boolean {
    this.composite++;
    const ok = key === undefined ? this.valid(schema, value) : this.at(key, schema, value);
    this.composite--;
    return ok;
  }

  private at(key: string | number, schema: Schema, value: unknown): boolean {
    this.path.push(key);
    const ok = this.valid(schema, value);
    this.path.pop();
    return ok;
  }

  valid(schema: Schema, v: unknown): boolean {
    this.meter.charge(1);
    if (schema === true) return true;
    if (schema === false) return this.fail("boolean schema is false");
    const n = schema;
    if (n.types && !n.deferType && !isAnyType(n.types, v)) return this.fail(`must be ${n.types.join(",")}`);
    if (n.const && !this.equal(n.const, v)) return this.fail(n.const.message);
    if (n.enum && !this.equal(n.enum, v)) return this.fail(n.enum.message);
    if (n.not !== undefined && this.silently(n.not, v)) return this.fail("must NOT be valid");
    if (n.anyOf && !this.anyOf(n.anyOf, v)) return false;
    if (n.oneOf && !this.oneOf(n.oneOf, v)) return false;
    if (n.allOf) for (const s of n.allOf) if (!this.valid(s, v)) return false;
    if (n.if !== undefined) {
      const branch = this.silently(n.if, v) ? n.whenValid : n.whenInvalid;
      if (branch !== undefined && !this.valid(branch, v)) return false;
    }
    for (const group of n.groups) {
      if (!isType(group, v)) {
        if (n.deferType === group) return this.fail(`must be ${group}`);
        continue;
      }
      const ok =
        group === "number"
          ? this.number(n, v as number)
          : group === "string"
            ? this.string(n, v as string)
            : group === "array"
              ? this.array(n, v as unknown[])
              : this.object(n, v as Record<string, unknown>);
      if (!ok) return false;
    }
    return true;
  }

  private anyOf(branches: Schema[], v: unknown): boolean {
    const had = this.failure;
    for (const s of branches) {
      if (this.inComposite(s, v)) {
        this.failure = had;
        return true;
      }
    }
    return this.fail("must match a schema in anyOf", true);
  }

  private oneOf(branches: Schema[], v: unknown): boolean {
    const had = this.failure;
    let passing = 0;
    for (const s of branches) {
      // as ajv: the branches after a second match are not tried
      if (this.inComposite(s, v) && ++passing > 1) break;
    }
    if (passing === 1) {
      this.failure = had;
      return true;
    }
    return this.fail("must match exactly one schema in oneOf", true);
  }

  private equal(e: Equals, v: unknown): boolean {
    this.meter.charge(1);
    if (v === null || typeof v !== "object") return e.primitives.has(v);
    for (const c of e.composites) if (this.deepEqual(c, v)) return true;
    return false;
  }

  /**
   * The number of keys of a value of the metadata, counted once per value and charged a unit per
   * key: an enum of 1,000 objects compared with a metadata object of 20,000 keys enumerated
   * them 1,000 times for one unit each (9 s of the event loop for a batch of 4).
   */
  private keyCount(b: object): number {
    let n = this.keyCounts.get(b);
    if (n === undefined) {
      n = Object.keys(b).length;
      this.keyCounts.set(b, n);
      this.meter.charge(n);
    }
    return n;
  }

  /** fast-deep-equal's answer (ajv's) for JSON values; each pair of nodes compared is a unit */
  private deepEqual(a: unknown, b: unknown): boolean {
    this.meter.charge(1);
    if (a === b) return true;
    if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    if (Array.isArray(a)) {
      const bs = b as unknown[];
      if (a.length !== bs.length) return false;
      for (let i = 0; i < a.length; i++) if (!this.deepEqual(a[i], bs[i])) return false;
      return true;
    }
    const ak = Object.keys(a);
    if (ak.length !== this.keyCount(b)) return false;
    this.meter.charge(ak.length);
    for (const k of ak) {
      if (!Object.hasOwn(b, k) || !this.deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
    }
    return true;
  }

  private number(n: Node, v: number): boolean {
    for (const [limit, x] of n.limits) {
      const ok =
        limit === "maximum"
          ? v <= x
          : limit === "minimum"
            ? v >= x
            : limit === "exclusiveMaximum"
              ? v < x
              : limit === "exclusiveMinimum"
                ? v > x
                : isMultiple(v, x);
      if (!ok) return this.fail(limit === "multipleOf" ? `must be multiple of ${x}` : `must be ${COMPARISON[limit]} ${x}`);
    }
    return true;
  }

  private string(n: Node, v: string): boolean {
    if (n.maxLength !== undefined && this.codePointsAbove(v, n.maxLength))
      return this.fail(`must NOT have more than ${n.maxLength} characters`);
    if (n.minLength !== undefined && !this.codePointsAbove(v, n.minLength - 1)) {
      return this.fail(`must NOT have fewer than ${n.minLength} characters`);
    }
    return true;
  }

  /** Whether `s` has more than `limit` code points; counted only when its UTF-16 length does not tell. */
  private codePointsAbove(s: string, limit: number): boolean {
    if (s.length <= limit) return false;
    // every code point is one or two UTF-16 units
    if (Math.ceil(s.length / 2) > limit) return true;
    this.meter.charge(Math.ceil(s.length / CHARS_PER_UNIT));
    let count = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      // ajv's ucs2length: a high surrogate followed by a low one is one character
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
      if (++count > limit) return true;
    }
    return false;
  }

  private array(n: Node, v: unknown[]): boolean {
    if (n.maxItems !== undefined && v.length > n.maxItems) return this.fail(`must NOT have more than ${n.maxItems} items`);
    if (n.minItems !== undefined && v.length < n.minItems) return this.fail(`must NOT have fewer than ${n.minItems} items`);
    if (n.items !== undefined) for (let i = 0; i < v.length; i++) if (!this.at(i, n.items, v[i])) return false;
    if (n.contains !== undefined) {
      const had = this.failure;
      for (let i = 0; i < v.length; i++) {
        if (this.inComposite(n.contains, v[i], i)) {
          this.failure = had;
          return true;
        }
      }
      return this.fail("must contain at least 1 valid item(s)");
    }
    return true;
  }

  private object(n: Node, v: Record<string, unknown>): boolean {
    let keys: string[] | undefined;
    const keysOf = () => {
      if (!keys) {
        keys = Object.keys(v);
        this.meter.charge(keys.length);
      }
      return keys;
    };
    if (n.maxProperties !== undefined && keysOf().length > n.maxProperties) {
      return this.fail(`must NOT have more than ${n.maxProperties} properties`);
    }
    if (n.minProperties !== undefined && keysOf().length < n.minProperties) {
      return this.fail(`must NOT have fewer than ${n.minProperties} properties`);
    }
    if (n.required) {
      this.meter.charge(n.required.length);
      for (const name of n.required) if (!Object.hasOwn(v, name)) return this.fail(`must have required property '${name}'`);
    }
    // ajv reports a property name's error at the object, not at the name
    if (n.propertyNames !== undefined) {
      for (const k of keysOf()) if (!this.inComposite(n.propertyNames, k)) return this.fail("property name must be valid", true);
    }
    if (n.additionalProperties !== undefined) {
      for (const k of keysOf()) {
        if (n.properties?.has(k)) continue;
        if (n.additionalProperties === false) return this.fail("must NOT have additional properties");
        if (!this.at(k, n.additionalProperties, v[k])) return false;
      }
    }
    if (n.properties) {
      this.meter.charge(n.properties.size);
      for (const k of n.properties.keys()) if (Object.hasOwn(v, k) && !this.at(k, n.properties.get(k) as Schema, v[k])) return false;
    }
    return true;
  }
}

const COMPARISON = { maximum: "<=", minimum: ">=", exclusiveMaximum: "<", exclusiveMinimum: ">" } as const;

/** ajv's multipleOf without multipleOfPrecision, quirks included (parseInt of the quotient's text). */
function isMultiple(v: number, m: number): boolean {
  const q = v / m;
  return q === Number.parseInt(String(q), 10);
}

function isAnyType(types: TypeName[], v: unknown): boolean {
  for (const t of types) if (isType(t, v)) return true;
  return false;
}

function isType(t: TypeName, v: unknown): boolean {
  switch (t) {
    case "null":
      return v === null;
    case "boolean":
      return typeof v === "boolean";
    case "number":
      return typeof v === "number";
    case "integer":
      return typeof v === "number" && Number.isInteger(v);
    case "string":
      return typeof v === "string";
    case "array":
      return Array.isArray(v);
    case "object":
      return v !== null && typeof v === "object" && !Array.isArray(v);
  }
}
