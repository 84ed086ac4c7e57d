// Structure and signature checks (checks 2 and 3) on the TypeScript AST, plus the small edits
// that make any accepted source expose its entry point as `grade`.

import ts from "typescript";
import { type CheckFailure, IMPORT_ALLOW_LIST } from "./checks.ts";

/** The global the compiled module assigns its entry point to; the prelude's install() reads it. */
export const ENTRY_GLOBAL = "__gradebox_grade";
/** The global the compiled module assigns its gradeGroup to, when it has one. */
export const GROUP_GLOBAL = "__gradebox_grade_group";
/** The name of a group grader's function: it takes a group's threads and returns one result per thread. */
const GROUP_NAME = "gradeGroup";
const ANON_NAME = "__gradebox_entry";

interface FunctionCandidate {
  name: string | undefined;
  node: ts.FunctionLikeDeclaration;
  statement: ts.Statement;
  /** true when the candidate is a `grade` binding whose value is not a function */
  notAFunction?: boolean;
  /** the candidate is the module's default export */
  isDefault?: boolean;
}

export interface Analysis {
  /** the source with the entry point bound to a name, and a trailer that hands it to the prelude */
  code: string;
  warnings: string[];
  /** how `code` differs from the source, so that positions in it can be mapped back (compile.ts) */
  edit: SourceEdit;
}

/**
 * `code` keeps every line of the source where it was. On one line at most (`line`, 0-based),
 * `removed` characters from `column` (0-based) on were replaced by `added` others; the lines from
 * `trailer` (0-based) on are the trailer, which is not the user's.
 */
export interface SourceEdit {
  line: number;
  column: number;
  removed: number;
  added: number;
  trailer: number;
}

function position(sf: ts.SourceFile, node: ts.Node): { line: number; column: number } {
  const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
  return { line: line + 1, column: character + 1 };
}

function unwrap(expr: ts.Expression | undefined): ts.Expression | undefined {
  let e = expr;
  while (e && (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e))) e = e.expression;
  return e;
}

function isFunctionExpr(e: ts.Expression | undefined): e is ts.ArrowFunction | ts.FunctionExpression {
  return !!e && (ts.isArrowFunction(e) || ts.isFunctionExpression(e));
}

function isAsync(node: ts.FunctionLikeDeclaration): boolean {
  return !!ts.getModifiers(node as ts.HasModifiers)?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword);
}

function hasModifier(node: ts.Node, kind: ts.SyntaxKind): boolean {
  return ts.canHaveModifiers(node) && !!ts.getModifiers(node)?.some((m) => m.kind === kind);
}

function importFailure(sf: ts.SourceFile, node: ts.Node, specifier: string): CheckFailure {
  return {
    check: "structure",
    message:
      `import of "${specifier}" is not allowed: graders run in a sandbox without modules. ` +
      `Only ${IMPORT_ALLOW_LIST.map((m) => `"${m}"`).join(", ")} can be imported (type-only imports are fine).`,
    ...position(sf, node),
  };
}

function isTypeOnlyImport(decl: ts.ImportDeclaration): boolean {
  const clause = decl.importClause;
  if (!clause) return false; // `import "x"` runs x for its effects: a value import
  if (clause.isTypeOnly) return true;
  if (clause.name) return false;
  const bindings = clause.namedBindings;
  return !!bindings && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly);
}

/** Imports, re-exports, dynamic import() and require("x") anywhere in the file. */
function findForbiddenModuleUse(sf: ts.SourceFile): CheckFailure | undefined {
  let failure: CheckFailure | undefined;
  const allowed = (s: string) => (IMPORT_ALLOW_LIST as readonly string[]).includes(s);
  const visit = (node: ts.Node): void => {
    if (failure) return;
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      if (!isTypeOnlyImport(node) && !allowed(node.moduleSpecifier.text)) {
        failure = importFailure(sf, node, node.moduleSpecifier.text);
      }
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      if (!node.isTypeOnly && !allowed(node.moduleSpecifier.text)) failure = importFailure(sf, node, node.moduleSpecifier.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const expr = node.moduleReference.expression;
      if (!node.isTypeOnly) failure = importFailure(sf, node, ts.isStringLiteral(expr) ? expr.text : expr.getText(sf));
    } else if (ts.isCallExpression(node)) {
      if (node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        failure = {
          check: "structure",
          message: "dynamic import() is not available: graders run in a sandbox without modules",
          ...position(sf, node),
        };
      } else if (ts.isIdentifier(node.expression) && node.expression.text === "require" && node.arguments.length > 0) {
        const arg = node.arguments[0];
        failure = importFailure(sf, node, ts.isStringLiteralLike(arg) ? arg.text : arg.getText(sf));
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return failure;
}

function topLevelFunctions(sf: ts.SourceFile): FunctionCandidate[] {
  const found: FunctionCandidate[] = [];
  for (const statement of sf.statements) {
    if (ts.isFunctionDeclaration(statement) && statement.body) {
      const isDefault = hasModifier(statement, ts.SyntaxKind.ExportKeyword) && hasModifier(statement, ts.SyntaxKind.DefaultKeyword);
      found.push({ name: statement.name?.text, node: statement, statement, isDefault });
    } else if (ts.isVariableStatement(statement)) {
      for (const decl of statement.declarationList.declarations) {
        if (!ts.isIdentifier(decl.name)) continue;
        const init = unwrap(decl.initializer);
        if (isFunctionExpr(init)) found.push({ name: decl.name.text, node: init, statement });
        else if (decl.name.text === "grade" || decl.name.text === GROUP_NAME)
          found.push({ name: decl.name.text, node: undefined as never, statement, notAFunction: true });
      }
    } else if (ts.isExpressionStatement(statement)) {
      const expr = unwrap(statement.expression);
      if (isFunctionExpr(expr)) found.push({ name: undefined, node: expr, statement });
    } else if (ts.isExportAssignment(statement) && !statement.isExportEquals) {
      const expr = unwrap(statement.expression);
      if (isFunctionExpr(expr)) found.push({ name: undefined, node: expr, statement, isDefault: true });
    }
  }
  return found;
}

const DEFAULT_HINT = "export default the async grading function, e.g. `export default async function (thread) { … }`";

/**
 * The default export, when there is one: `export default [async] function [name](…)`,
 * `export default <function or arrow>`, `export default name` or `export { name as default }`
 * where name is a top-level function. Anything else exported as default is a structure failure.
 */
function defaultExport(sf: ts.SourceFile, functions: FunctionCandidate[]): FunctionCandidate | CheckFailure | undefined {
  const byName = (statement: ts.Node, ref: ts.Identifier): FunctionCandidate | CheckFailure => {
    const target = functions.find((f) => f.name === ref.text && !f.notAFunction);
    if (target) return { ...target, isDefault: true };
    return {
      check: "structure",
      message: `the default export ${ref.text} is not a top-level function: ${DEFAULT_HINT}, or export default the name of one`,
      ...position(sf, statement),
    };
  };
  for (const statement of sf.statements) {
    if (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) {
      if (!hasModifier(statement, ts.SyntaxKind.ExportKeyword) || !hasModifier(statement, ts.SyntaxKind.DefaultKeyword)) continue;
      const found = functions.find((f) => f.statement === statement);
      if (found) return found;
      if (ts.isClassDeclaration(statement)) {
        return { check: "structure", message: `the default export is not a function: ${DEFAULT_HINT}`, ...position(sf, statement) };
      }
    } else if (ts.isExportAssignment(statement) && !statement.isExportEquals) {
      const found = functions.find((f) => f.statement === statement);
      if (found) return found;
      const expr = unwrap(statement.expression);
      if (expr && ts.isIdentifier(expr)) return byName(statement, expr);
      return { check: "structure", message: `the default export is not a function: ${DEFAULT_HINT}`, ...position(sf, statement) };
    } else if (ts.isExportDeclaration(statement) && !statement.moduleSpecifier && !statement.isTypeOnly) {
      const clause = statement.exportClause;
      if (!clause || !ts.isNamedExports(clause)) continue;
      for (const element of clause.elements) {
        if (element.isTypeOnly || element.name.text !== "default") continue;
        const local = element.propertyName ?? element.name;
        if (ts.isIdentifier(local)) return byName(statement, local);
      }
    }
  }
  return undefined;
}

function findNestedGrade(sf: ts.SourceFile): ts.Node | undefined {
  let nested: ts.Node | undefined;
  const visit = (node: ts.Node, depth: number): void => {
    if (nested) return;
    const named =
      (ts.isFunctionDeclaration(node) && node.name?.text === "grade") ||
      (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.name.text === "grade") ||
      (ts.isMethodDeclaration(node) && ts.isIdentifier(node.name) && node.name.text === "grade");
    if (named && depth > 0) nested = node;
    const inner = ts.isFunctionLike(node) || ts.isClassLike(node) || ts.isBlock(node) ? depth + 1 : depth;
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  for (const statement of sf.statements) visit(statement, 0);
  return nested;
}

function typeText(sf: ts.SourceFile, type: ts.TypeNode | undefined): string | undefined {
  return type?.getText(sf).replace(/\s+/g, "");
}

function signatureWarnings(sf: ts.SourceFile, fn: ts.FunctionLikeDeclaration): string[] {
  const warnings: string[] = [];
  const param = typeText(sf, fn.parameters[0].type);
  if (param !== "StringThread") {
    warnings.push(
      param === undefined
        ? "the parameter of grade is not annotated; annotate it as StringThread"
        : `the parameter of grade is annotated ${param}, not StringThread`,
    );
  }
  if (!fn.type || !isResultType(fn.type)) {
    warnings.push(
      fn.type === undefined
        ? "the return type of grade is not annotated; annotate it as Promise<number> or Promise<GradeScore>"
        : `the return type of grade is ${typeText(sf, fn.type)}, not Promise<number>`,
    );
  }
  return warnings;
}

// The documented return types: a number or a result ({score | reward, reason?, metadata?,
// subscores?}, by name or spelled out as an object type), a union of them, or a Promise of one.
const RESULT_TYPE_NAMES = new Set(["GradeScore", "RewardScore", "GraderOutput", "Combined"]);
const RESULT_KEYS = new Set(["score", "reward", "reason", "metadata", "subscores"]);

function stripParens(type: ts.TypeNode): ts.TypeNode {
  let t = type;
  while (ts.isParenthesizedTypeNode(t)) t = t.type;
  return t;
}

function everyMember(type: ts.TypeNode, ok: (t: ts.TypeNode) => boolean): boolean {
  const t = stripParens(type);
  return ts.isUnionTypeNode(t) ? t.types.every((m) => everyMember(m, ok)) : ok(t);
}

const isNumberType = (type: ts.TypeNode): boolean =>
  everyMember(type, (t) => {
    if (t.kind === ts.SyntaxKind.NumberKeyword) return true;
    if (!ts.isLiteralTypeNode(t)) return false;
    const lit = t.literal;
    return ts.isNumericLiteral(lit) || (ts.isPrefixUnaryExpression(lit) && ts.isNumericLiteral(lit.operand));
  });

const isStringType = (type: ts.TypeNode): boolean =>
  everyMember(type, (t) => t.kind === ts.SyntaxKind.StringKeyword || (ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal)));

function isResultObject(t: ts.TypeNode): boolean {
  if (!ts.isTypeLiteralNode(t)) return false;
  let scored = false;
  for (const member of t.members) {
    if (!ts.isPropertySignature(member) || !(ts.isIdentifier(member.name) || ts.isStringLiteral(member.name))) return false;
    const key = member.name.text;
    if (!RESULT_KEYS.has(key)) return false;
    if (key === "score" || key === "reward") {
      if (!member.type || !isNumberType(member.type)) return false;
      if (!member.questionToken) scored = true;
    } else if (key === "reason" && member.type && !isStringType(member.type)) {
      return false;
    }
  }
  return scored;
}

/** number, a result, or a union of them (no Promise). */
const isScoreType = (type: ts.TypeNode): boolean =>
  everyMember(
    type,
    (t) =>
      isNumberType(t) ||
      // null abstains
      (ts.isLiteralTypeNode(t) && t.literal.kind === ts.SyntaxKind.NullKeyword) ||
      isResultObject(t) ||
      (ts.isTypeReferenceNode(t) && ts.isIdentifier(t.typeName) && RESULT_TYPE_NAMES.has(t.typeName.text) && !t.typeArguments),
  );

/** A score type, a Promise of one, or a union of those. */
const isResultType = (type: ts.TypeNode): boolean =>
  everyMember(type, (t) => {
    if (ts.isTypeReferenceNode(t) && ts.isIdentifier(t.typeName) && t.typeName.text === "Promise") {
      return t.typeArguments?.length === 1 && isScoreType(t.typeArguments[0]);
    }
    return isScoreType(t);
  });

/**
 * A top-level `async function gradeGroup(threads)` (or a const bound to an async function): the
 * group entry point, beside grade or alone. Undefined when there is none; a failure when the name
 * is bound to something else, the function is not async, or it does not take one parameter.
 */
function checkGroupFunction(sf: ts.SourceFile, functions: FunctionCandidate[]): FunctionCandidate | CheckFailure | undefined {
  const found = functions.find((f) => f.name === GROUP_NAME);
  if (!found) return undefined;
  if (found.notAFunction) {
    return {
      check: "structure",
      message: "gradeGroup must be an async function, e.g. `async function gradeGroup(threads) { … }`",
      ...position(sf, found.statement),
    };
  }
  if (!isAsync(found.node)) {
    return {
      check: "structure",
      message: "gradeGroup must be async: write `async function gradeGroup(threads)` (sync graders are rejected)",
      ...position(sf, found.node),
    };
  }
  const params = found.node.parameters;
  if (params.length !== 1 || params[0].dotDotDotToken) {
    return {
      check: "signature",
      message: `gradeGroup must take exactly one parameter (the group's threads, an array); it takes ${
        params[0]?.dotDotDotToken ? "a rest parameter" : params.length
      }`,
      ...position(sf, found.node),
    };
  }
  return found;
}

const THREAD_ARRAY = new Set(["StringThread[]", "readonlyStringThread[]", "Array<StringThread>", "ReadonlyArray<StringThread>"]);

function groupWarnings(sf: ts.SourceFile, fn: ts.FunctionLikeDeclaration): string[] {
  const param = typeText(sf, fn.parameters[0].type);
  if (param === undefined) return ["the parameter of gradeGroup is not annotated; annotate it as StringThread[]"];
  return THREAD_ARRAY.has(param) ? [] : [`the parameter of gradeGroup is annotated ${param}, not StringThread[]`];
}

/** line breaks as JavaScript (and so esbuild and TypeScript) count them */
const LINE_BREAKS = /\r\n|[\n\r\u2028\u2029]/g;

/** Edits that bind an anonymous entry point to a name, keeping every line where it was. */
function bindAnonymous(
  source: string,
  sf: ts.SourceFile,
  candidate: FunctionCandidate,
): { body: string; edit: Omit<SourceEdit, "trailer"> } {
  const start = candidate.statement.getStart(sf);
  const isExportDefault = ts.isExportAssignment(candidate.statement) || hasModifier(candidate.statement, ts.SyntaxKind.DefaultKeyword);
  let cut = 0;
  if (isExportDefault) {
    // `export default async function (t) {…}` / `export default async (t) => …`
    const match = /^export\s+default\s+/.exec(source.slice(start));
    cut = match ? match[0].length : 0;
  }
  const prefix = `const ${ANON_NAME} = `;
  const removed = source.slice(start, start + cut);
  // line breaks inside `export\s+default\s+` stay, so that every line keeps its number
  const breaks = removed.match(LINE_BREAKS) ?? [];
  const body = `${source.slice(0, start)}${prefix}${breaks.join("")}${source.slice(start + cut)}`;
  const { line, character } = sf.getLineAndCharacterOfPosition(start);
  if (breaks.length === 0) return { body, edit: { line, column: character, removed: cut, added: prefix.length } };
  // the prefix ends its line; the line where the removed text ends lost that text's last part
  const lastBreak = breaks[breaks.length - 1];
  const lastPart = removed.slice(removed.lastIndexOf(lastBreak) + lastBreak.length);
  return { body, edit: { line: line + breaks.length, column: 0, removed: lastPart.length, added: 0 } };
}

/**
 * Checks 2 and 3. The TypeScript parser and the visitors here recurse once per level of nesting:
 * a source nested deeper than the stack allows is a structure failure, not an exception
 * (checkNesting in source-bounds.ts refuses most such sources before this runs).
 */
export function analyze(source: string): Analysis | CheckFailure {
  try {
    return analyzeTree(source);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return {
      check: "structure",
      message:
        "the source is nested too deeply to analyse (the analyser ran out of stack); flatten it: move inner parts into named functions or constants",
    };
  }
}

function analyzeTree(source: string): Analysis | CheckFailure {
  const sf = ts.createSourceFile("grader.ts", source, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);

  const forbidden = findForbiddenModuleUse(sf);
  if (forbidden) return forbidden;

  const functions = topLevelFunctions(sf);
  const exported = defaultExport(sf, functions);
  if (exported && "check" in exported) return exported;
  const named = functions.filter((f) => f.name === "grade");
  const group = checkGroupFunction(sf, functions);
  if (group && "check" in group) return group;
  let entry: FunctionCandidate | undefined;
  if (exported) {
    // the default export is the entry point, whatever helpers (even one called grade) sit beside it
    entry = exported;
  } else if (named.length > 0) {
    entry = named[0];
    if (entry.notAFunction) {
      return {
        check: "structure",
        message: "grade must be an async function, e.g. `async function grade(thread) { … }`",
        ...position(sf, entry.statement),
      };
    }
  } else if (group) {
    // a grader of groups only: gradeGroup is its one entry point
    entry = undefined;
  } else if (findNestedGrade(sf)) {
    return {
      check: "structure",
      message: "grade is declared inside another function, class or block; it must be a top-level `async function grade(thread)`",
      ...position(sf, findNestedGrade(sf) as ts.Node),
    };
  } else if (functions.length === 1) {
    entry = functions[0];
  } else if (functions.length === 0) {
    return {
      check: "structure",
      message:
        "no top-level function found: define `async function grade(thread) { … }` (or `export default async function (thread) { … }`)",
    };
  } else {
    const names = functions.map((f) => f.name ?? "(anonymous)").join(", ");
    return {
      check: "structure",
      message: `found ${functions.length} top-level functions (${names}) and none is named grade: name the entry point grade, or mark it \`export default\``,
    };
  }

  if (entry === undefined) {
    const { node } = group as FunctionCandidate;
    return {
      code: `${source}\n;globalThis.${GROUP_GLOBAL} = ${GROUP_NAME};\n`,
      warnings: groupWarnings(sf, node),
      edit: { line: 0, column: 0, removed: 0, added: 0, trailer: (source.match(LINE_BREAKS)?.length ?? 0) + 1 },
    };
  }
  const label = entry.name ? `function ${entry.name}` : "the function";
  if (!isAsync(entry.node)) {
    return {
      check: "structure",
      message: entry.isDefault
        ? `the default export${entry.name ? ` ${entry.name}` : ""} must be async: write \`export default async function (thread)\` (sync graders are rejected)`
        : `${entry.name === "grade" ? "grade" : label} must be async: write \`async function grade(thread)\` (sync graders are rejected)`,
      ...position(sf, entry.node),
    };
  }
  if (entry.node.parameters.length !== 1 || entry.node.parameters[0].dotDotDotToken) {
    return {
      check: "signature",
      message: `grade must take exactly one parameter (the thread); it takes ${
        entry.node.parameters[0]?.dotDotDotToken ? "a rest parameter" : entry.node.parameters.length
      }`,
      ...position(sf, entry.node),
    };
  }

  const bound = entry.name ?? ANON_NAME;
  const { body, edit } = entry.name
    ? { body: source, edit: { line: 0, column: 0, removed: 0, added: 0 } }
    : bindAnonymous(source, sf, entry);
  const groupTrailer = group ? `globalThis.${GROUP_GLOBAL} = ${GROUP_NAME};\n` : "";
  return {
    code: `${body}\n;globalThis.${ENTRY_GLOBAL} = ${bound};\n${groupTrailer}`,
    warnings: [...signatureWarnings(sf, entry.node), ...(group ? groupWarnings(sf, group.node) : [])],
    edit: { ...edit, trailer: (body.match(LINE_BREAKS)?.length ?? 0) + 1 },
  };
}
