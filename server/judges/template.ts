// Judge prompt templates: Handlebars in strict mode, with the built-in block helpers only, no
// partials, no decorators, no prototype access. A template is a project's text, rendered in the
// API process, so it is treated as hostile: it is compiled once, checked before it is stored,
// and every render is metered (each block's every pass and every character it emits are
// charged), so a template cannot make the server do work beyond MAX_PROMPT_CHARS units whatever
// thread it is given: `{{#each turns}}{{#each ../turns}}…` on 1,000 turns stops at the budget.

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

interface Meter {
  left: number;
  perPass: number;
}
// rendering is synchronous: the meter of the render in progress
let meter: Meter | null = null;

function charge(units: number): void {
  if (!meter) return;
  meter.left -= units;
  if (meter.left < 0) {
    throw new TemplateError(
      `the template renders more than ${MAX_PROMPT_CHARS} characters (or passes) for this thread; it stopped there`,
      undefined,
      undefined,
      true,
    );
  }
}

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

/** A block's program that charges for each pass and for what it produced. */
function metered(program: HelperFn | undefined): HelperFn | undefined {
  if (typeof program !== "function") return program;
  const wrapped = function (this: unknown, ...args: unknown[]) {
    charge(meter?.perPass ?? 1);
    const out = program.apply(this, args);
    charge(typeof out === "string" ? out.length : 0);
    return out;
  };
  return Object.assign(wrapped, program);
}

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

export interface CompiledTemplate {
  render(variables: TemplateVariables): string;
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
    render(variables) {
      meter = { left: MAX_PROMPT_CHARS, perPass };
      try {
        const out = fn(variables, RUNTIME_OPTIONS);
        charge(out.length);
        return out;
      } catch (error) {
        throw asTemplateError(error);
      } finally {
        meter = null;
      }
    },
  };
}

/** Handlebars errors carry a 1-based line and a 0-based column; ours are both 1-based. */
function asTemplateError(error: unknown): TemplateError {
  if (error instanceof TemplateError) return error;
  if (error instanceof RangeError) return new TemplateError(`the template's output is too large: ${error.message}`);
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
