// Structure and signature checks (checks 2 and 3) on the TypeScript AST, plus the small edits
// that make any accepted source expose its entry point as `grade`.

import ts from "typescript";
import { type CheckFailure, IMPORT_ALLOW_LIST } from "./checks.ts";

/** The global the compiled module assigns its entry point to; the prelude's install() reads it. */
export const ENTRY_GLOBAL = "__gradebox_grade";
const ANON_NAME = "__gradebox_entry";

interface FunctionCandidate {
  name: string | undefined;
  node: ts.FunctionLikeDeclaration;
  statement: ts.Statement;
  /** true when the candidate is a `grade` binding whose value is not a function */
  notAFunction?: boolean;
}

export interface Analysis {
  /** the source with the entry point bound to a name, and a trailer that hands it to the prelude */
  code: string;
  warnings: string[];
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
      found.push({ name: statement.name?.text, node: statement, statement });
    } else if (ts.isVariableStatement(statement)) {
      for (const decl of statement.declarationList.declarations) {
        if (!ts.isIdentifier(decl.name)) continue;
        const init = unwrap(decl.initializer);
        if (isFunctionExpr(init)) found.push({ name: decl.name.text, node: init, statement });
        else if (decl.name.text === "grade") found.push({ name: "grade", node: undefined as never, statement, notAFunction: true });
      }
    } else if (ts.isExpressionStatement(statement)) {
      const expr = unwrap(statement.expression);
      if (isFunctionExpr(expr)) found.push({ name: undefined, node: expr, statement });
    } else if (ts.isExportAssignment(statement) && !statement.isExportEquals) {
      const expr = unwrap(statement.expression);
      if (isFunctionExpr(expr)) found.push({ name: undefined, node: expr, statement });
    }
  }
  return found;
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
  const ret = typeText(sf, fn.type);
  if (ret !== "number" && ret !== "Promise<number>") {
    warnings.push(
      ret === undefined
        ? "the return type of grade is not annotated; annotate it as Promise<number>"
        : `the return type of grade is ${ret}, not Promise<number>`,
    );
  }
  return warnings;
}

/** Edits that bind an anonymous entry point to a name, keeping every other line where it was. */
function bindAnonymous(source: string, sf: ts.SourceFile, candidate: FunctionCandidate): string {
  const start = candidate.statement.getStart(sf);
  const isExportDefault = ts.isExportAssignment(candidate.statement) || hasModifier(candidate.statement, ts.SyntaxKind.DefaultKeyword);
  if (isExportDefault) {
    // `export default async function (t) {…}` / `export default async (t) => …`
    const text = source.slice(start);
    const match = /^export\s+default\s+/.exec(text);
    const cut = match ? match[0].length : 0;
    return `${source.slice(0, start)}const ${ANON_NAME} = ${source.slice(start + cut)}`;
  }
  return `${source.slice(0, start)}const ${ANON_NAME} = ${source.slice(start)}`;
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
  const named = functions.filter((f) => f.name === "grade");
  let entry: FunctionCandidate;
  if (named.length > 0) {
    entry = named[0];
    if (entry.notAFunction) {
      return {
        check: "structure",
        message: "grade must be an async function, e.g. `async function grade(thread) { … }`",
        ...position(sf, entry.statement),
      };
    }
  } else if (findNestedGrade(sf)) {
    return {
      check: "structure",
      message: "grade is declared inside another function, class or block; it must be a top-level `async function grade(thread)`",
      ...position(sf, findNestedGrade(sf) as ts.Node),
    };
  } else if (functions.length === 1) {
    entry = functions[0];
  } else if (functions.length === 0) {
    return { check: "structure", message: "no top-level function found: define `async function grade(thread) { … }`" };
  } else {
    const names = functions.map((f) => f.name ?? "(anonymous)").join(", ");
    return {
      check: "structure",
      message: `found ${functions.length} top-level functions (${names}) and none is named grade: name the entry point grade`,
    };
  }

  const label = entry.name ? `function ${entry.name}` : "the function";
  if (!isAsync(entry.node)) {
    return {
      check: "structure",
      message: `${entry.name === "grade" ? "grade" : label} must be async: write \`async function grade(thread)\` (sync graders are rejected)`,
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
  const body = entry.name ? source : bindAnonymous(source, sf, entry);
  return {
    code: `${body}\n;globalThis.${ENTRY_GLOBAL} = ${bound};\n`,
    warnings: signatureWarnings(sf, entry.node),
  };
}
