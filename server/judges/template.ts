// Judge prompt templates: Handlebars in strict mode, with the built-in block helpers only, no
// partials, no decorators, no prototype access. A template is a project's text, rendered in the
// API process, so it is treated as hostile: it is compiled once, checked before it is stored,
// and every render is metered, each unit charged BEFORE the work is done: every block pass, and
// every string appended to the output (static text, `{{{x}}}`, a block's result, and `{{x}}` by
// the length of its escaped form, counted before escaping). So a render does at most
// MAX_PROMPT_CHARS units of work and allocates at most that many characters, whatever the
// template and thread: `{{#each turns}}{{#each ../turns}}…` on 1,000 turns, or `{{completion}}`
// 1,170 times on a completion of 1,000,000 `&` (5 characters each once escaped), stop there.

import Handlebars from "handlebars";
import type { WireThread, WireTurn } from "../../sdk/thread.ts";

/** The longest prompt a template may render, in characters; also the work budget of one render. */
export const MAX_PROMPT_CHARS = 1_000_000;
export const MAX_TEMPLATE_CHARS = 16_384;
const MAX_BLOCK_DEPTH = 16;

const KNOWN_HELPERS = { if: true, unless: true, each: true, with: true, lookup: true, log: false } as const;
const COMPILE_OPTIONS = { strict: true, knownHelpersOnly: true, knownHelpers: KNOWN_HELPERS };
const RUNTIME_OPTIONS = { allowProtoPropertiesByDefault: false, allowProtoMethodsByDefault: false };

/** A template that cannot be stored or could not render; line/column (1-based) in the template. */
export class TemplateError extends Error {
  override name = "TemplateError";
  constructor(
    message: string,
    readonly line?: number,
    readonly column?: number,
    /** the render hit MAX_PROMPT_CHARS: any thread as large fails the same way */
    readonly overBudget = false,
  ) {
    super(message);
  }
}

/** "1,000,000": the budget as the messages name it */
export const BUDGET_TEXT = MAX_PROMPT_CHARS.toLocaleString("en-US");

/** The render went over its budget: the template's fault on this thread (the same on any thread as large). */
export const overBudget = () =>
  new TemplateError(
    `the template renders more than ${BUDGET_TEXT} characters (or passes) for this thread, its budget; it stopped there`,
    undefined,
    undefined,
    true,
  );

interface Meter {
  left: number;
  perPass: number;
}
// rendering is synchronous: the meter of the render in progress
let meter: Meter | null = null;

/** Throws unless `units` more fit in the budget; charges nothing. */
function afford(units: number): void {
  if (meter && units > meter.left) throw overBudget();
}

function charge(units: number): void {
  afford(units);
  if (meter) meter.left -= units;
}

// what escaping adds per character (`&` → `&amp;`: 4 more), read from Handlebars' own escaping
const ESCAPE_EXTRA = new Uint8Array(128);
for (const c of "&<>\"'`=") ESCAPE_EXTRA[c.charCodeAt(0)] = Handlebars.Utils.escapeExpression(c).length - 1;
const ESCAPABLE = /[&<>"'`=]/;

/** The length of `s` once escaped, counted without building it. */
export function escapedLength(s: string): number {
  if (!ESCAPABLE.test(s)) return s.length;
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 128) n += ESCAPE_EXTRA[c];
  }
  return n;
}

/**
 * What compiled templates append their output through (see MeteredCompiler): a string is charged
 * its length before it joins the output, and `{{x}}` the length of its escaped form before it is
 * escaped (its scan is bounded by the budget left: the escaped form is never shorter).
 */
const output = {
  raw(value: unknown): string {
    const s = typeof value === "string" ? value : `${value}`;
    charge(s.length);
    return s;
  },
  escaped(value: unknown): string {
    if (value == null) return "";
    if (typeof value === "object" && "toHTML" in value) return output.raw(Handlebars.Utils.escapeExpression(value as never));
    const s = typeof value === "string" ? value : `${value}`;
    afford(s.length);
    charge(escapedLength(s));
    return Handlebars.Utils.escapeExpression(s);
  },
};
// a helper's name no template can use (a space; and knownHelpersOnly refuses unknown helpers)
const OUTPUT = " output";

const env = Handlebars.create();
// Handlebars' parser drops the position of a syntax error; keep it (the parser is this module's alone)
(env as unknown as { Parser: { parseError: (message: string, hash: unknown) => never } }).Parser.parseError = (message, hash) => {
  throw Object.assign(new Error(message), { hash });
};
env.unregisterHelper("log");
// Handlebars reports refused prototype lookups on the console: a template could flood the log
(env as unknown as { logger: { level: number } }).logger.level = 99;
type HelperFn = (this: unknown, ...args: unknown[]) => unknown;
for (const name of ["if", "unless", "each", "with", "blockHelperMissing"]) {
  const builtin = env.helpers[name] as HelperFn;
  env.registerHelper(name, function (this: unknown, ...args: unknown[]) {
    const options = args.at(-1) as { fn?: HelperFn; inverse?: HelperFn };
    args[args.length - 1] = { ...options, fn: metered(options.fn), inverse: metered(options.inverse) };
    return builtin.apply(this, args);
  });
}

/** A block's program that charges for each pass (what it produces is charged as it is appended). */
function metered(program: HelperFn | undefined): HelperFn | undefined {
  if (typeof program !== "function") return program;
  const wrapped = function (this: unknown, ...args: unknown[]) {
    charge(meter?.perPass ?? 1);
    return program.apply(this, args);
  };
  return Object.assign(wrapped, program);
}

// Handlebars appends escaped values through `container.escapeExpression`, which is its shared
// Utils' (not this environment's), and raw values, static text and blocks' results with a bare
// `buffer += …`: no runtime hook sees them all. Its code generator has one place that emits
// every append, appendToBuffer, and one for escaping, appendEscaped; ours route both through
// `output`, registered as a helper object (compiled code reaches only its arguments: container,
// context, helpers, …).
type Code = unknown;
interface CodeGenerator {
  appendToBuffer(source: Code, location?: unknown, explicit?: boolean): Code;
  popStack(): Code;
  pushSource(source: Code): void;
}
const handlebarsCompiler = (env as unknown as { JavaScriptCompiler: new () => CodeGenerator }).JavaScriptCompiler;
const outputRef = `helpers[${JSON.stringify(OUTPUT)}]`;
class MeteredCompiler extends handlebarsCompiler {
  override appendToBuffer(source: Code, location?: unknown, explicit?: boolean): Code {
    return super.appendToBuffer([`${outputRef}.raw(`, source, ")"], location, explicit);
  }
  appendEscaped(): void {
    // escaped() charges its own output: appended as is
    this.pushSource(super.appendToBuffer([`${outputRef}.escaped(`, this.popStack(), ")"]));
  }
}
// blocks' programs are compiled by `new this.compiler()`: ours too
(MeteredCompiler.prototype as unknown as { compiler: unknown }).compiler = MeteredCompiler;
(env as unknown as { JavaScriptCompiler: unknown }).JavaScriptCompiler = MeteredCompiler;
env.registerHelper(OUTPUT, output as never);

interface Node {
  type: string;
  loc?: { start: { line: number; column: number } };
  [child: string]: unknown;
}

/** Refuses partials and decorators, bounds nesting, and counts statements (the charge per pass). */
function inspect(ast: Node): number {
  let statements = 0;
  const stack: Array<[Node, number]> = [[ast, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [Node, number];
    const at = node.loc?.start;
    const fail = (message: string): never => {
      throw new TemplateError(message, at?.line, at === undefined ? undefined : at.column + 1);
    };
    if (node.type === "PartialStatement" || node.type === "PartialBlockStatement") fail("partials are not available in judge templates");
    if (node.type === "Decorator" || node.type === "DecoratorBlock") fail("decorators are not available in judge templates");
    if (depth > MAX_BLOCK_DEPTH) fail(`blocks nest more than ${MAX_BLOCK_DEPTH} deep`);
    if (node.type.endsWith("Statement")) statements++;
    for (const key of ["body", "program", "inverse", "params", "path", "hash", "pairs", "value"]) {
      const child = node[key];
      const childDepth = key === "program" || key === "inverse" ? depth + 1 : depth;
      if (Array.isArray(child)) for (const c of child) if (c && typeof c === "object") stack.push([c as Node, childDepth]);
      if (child && typeof child === "object" && !Array.isArray(child) && typeof (child as Node).type === "string") {
        stack.push([child as Node, childDepth]);
      }
    }
  }
  return statements;
}

/** What a render was charged, in units of MAX_PROMPT_CHARS (filled in when the render ends, over budget or not). */
export interface RenderCost {
  units: number;
}

export interface CompiledTemplate {
  render(variables: TemplateVariables, cost?: RenderCost): string;
}

/** Parses and compiles a template, or throws TemplateError with the position of the fault. */
export function compileTemplate(source: string): CompiledTemplate {
  if (source.length > MAX_TEMPLATE_CHARS) throw new TemplateError(`a template is at most ${MAX_TEMPLATE_CHARS} characters`);
  let ast: Node;
  try {
    ast = env.parse(source) as unknown as Node;
  } catch (error) {
    throw asTemplateError(error);
  }
  // a pass costs more than a character: it runs the statements of its block
  const perPass = 16 * (inspect(ast) + 1);
  let fn: (context: unknown, options: unknown) => string;
  try {
    fn = env.compile(ast as never, COMPILE_OPTIONS) as never;
  } catch (error) {
    throw asTemplateError(error);
  }
  return {
    render(variables, cost) {
      const running: Meter = { left: MAX_PROMPT_CHARS, perPass };
      meter = running;
      try {
        // every character of the output was charged as it was appended; the top level's one pass is
        // not (its work is bounded by the template's size), so a prompt may be all of MAX_PROMPT_CHARS
        return fn(variables, RUNTIME_OPTIONS);
      } catch (error) {
        throw asTemplateError(error);
      } finally {
        meter = null;
        if (cost) cost.units = MAX_PROMPT_CHARS - running.left;
      }
    },
  };
}

/** Handlebars errors carry a 1-based line and a 0-based column; ours are both 1-based. */
function asTemplateError(error: unknown): TemplateError {
  if (error instanceof TemplateError) return error;
  // a string or stack past V8's limits: the meter should have stopped it first, and it is the budget's all the same
  if (error instanceof RangeError) return overBudget();
  const e = error as {
    message?: string;
    lineNumber?: number;
    column?: number;
    hash?: { loc?: { first_line: number; first_column: number } };
  };
  const text = String(e?.message ?? error);
  const syntax = /^Parse error on line \d+:\n(.*)\n-*\^\nExpecting (.*), got (.*)$/s.exec(text);
  if (syntax) {
    const expected = syntax[2].split(", ");
    const message = `syntax error near "${syntax[1].trim()}": expected ${expected.slice(0, 4).join(", ")}${expected.length > 4 ? ", …" : ""}, got ${syntax[3] === "'EOF'" ? "the end of the template" : syntax[3]}`;
    const loc = e.hash?.loc;
    return new TemplateError(message, loc?.first_line, loc === undefined ? undefined : loc.first_column + 1);
  }
  const message = text.replace(/ - \d+:\d+$/, "").replace("[object Object]", "the context");
  return new TemplateError(message, e?.lineNumber, typeof e?.column === "number" ? e.column + 1 : undefined);
}

// ---------------------------------------------------------------------------------------------
// The variables of the function-grader contract's judge templates (004)

export interface TemplateVariables {
  completion: string;
  last_user_turn_content: string;
  context_str: string;
  context_str_without_last_user: string;
  turns: WireTurn[];
  context_turns: WireTurn[];
  context_turns_without_last_user: WireTurn[];
  metadata: Record<string, unknown>;
  output_schema: string;
  template_variables: Record<string, string>;
  criteria: string;
}

/** `role: content` blocks separated by blank lines. */
export const formatTurns = (turns: readonly WireTurn[]) => turns.map((t) => `${t.role}: ${t.content}`).join("\n\n");

/**
 * The completion is the final turn, which must be the assistant's; the context is every turn
 * before it. Returns undefined for a thread that does not end with an assistant turn.
 */
export function splitThread(thread: WireThread): { completion: string; context: WireTurn[]; lastUser: number } | undefined {
  const last = thread.turns.at(-1);
  if (last?.role !== "assistant") return undefined;
  const context = thread.turns.slice(0, -1).map((t) => ({ role: t.role, content: t.content }));
  let lastUser = -1;
  for (let i = context.length - 1; i >= 0; i--) {
    if (context[i].role === "user") {
      lastUser = i;
      break;
    }
  }
  return { completion: last.content, context, lastUser };
}

export function templateVariables(
  thread: WireThread,
  extra: { outputSchema: unknown; templateVariables?: Record<string, string>; criteria?: string },
): TemplateVariables | undefined {
  const split = splitThread(thread);
  if (!split) return undefined;
  const { completion, context, lastUser } = split;
  const withoutLastUser = lastUser < 0 ? context : [...context.slice(0, lastUser), ...context.slice(lastUser + 1)];
  return {
    completion,
    last_user_turn_content: lastUser < 0 ? "" : context[lastUser].content,
    context_str: formatTurns(context),
    context_str_without_last_user: formatTurns(withoutLastUser),
    turns: [...context, { role: "assistant", content: completion }],
    context_turns: context,
    context_turns_without_last_user: withoutLastUser,
    metadata: thread.metadata ?? {},
    output_schema: JSON.stringify(extra.outputSchema),
    template_variables: { ...extra.templateVariables },
    criteria: extra.criteria ?? "",
  };
}
