// Bounds on a grader's source that hold before any parser sees it. esbuild's time grows with the
// square of block nesting and the cube of function nesting (30 000 nested braces held a worker
// 38 s, 4 000 nested arrows 227 s, 13 000 brace-less `if (t)` 14.5 s), and the TypeScript parser
// behind analyze.ts recurses once per level. checkNesting measures the nesting in one linear pass,
// without parsing, and refuses a source past MAX_NESTING.

import type { CheckFailure } from "./checks.ts";

/**
 * Levels of nesting (see checkNesting). At this depth esbuild's transform of the worst shape
 * (nested functions) takes about 10–30 ms and analyze() under 10 ms; the TypeScript parser
 * overflows its stack at about 600 levels of nested arrows, generics or classes. The deepest of
 * 4 426 JavaScript and TypeScript files in node_modules is 83 (a generated validator).
 */
export const MAX_NESTING = 128;

// frame kinds
const PAREN = 0;
const BRACKET = 1;
const BRACE = 2;
const TEMPLATE = 3; // a template literal's ${ … }
const CLOSER_KIND: Record<string, number> = { ")": PAREN, "]": BRACKET, "}": BRACE };

// bodies that nest without a bracket
const NONE = 0;
const ARROW_BODY = 1; // after =>
const STATEMENT_BODY = 2; // after if (…), for (…), while (…), with (…), do
const ELSE_BODY = 3;

// frame flags
const CONTROL = 1; // ( of if / while / for / with: a `/` after its ) starts a regular expression
const FOR = 2; // ( of for: `of` is a keyword inside
const BLOCK = 4; // { of a block or a body (not an object literal)
const EXPR_BODY = 8; // { of a function or class expression: a `/` after its } divides

/** After these words a `/` starts a regular expression (unless the word follows a `.`). */
const EXPRESSION_KEYWORDS = new Set([
  "return",
  "typeof",
  "instanceof",
  "in",
  "new",
  "delete",
  "void",
  "throw",
  "case",
  "do",
  "else",
  "yield",
  "await",
  "extends",
]);
/** Words after which a statement starts (a `function` or `class` there is a declaration). */
const STATEMENT_KEYWORDS = new Set(["do", "else", "export", "default"]);
/** Words that continue an expression from the line before (no automatic semicolon before them). */
const CONTINUING_WORDS = new Set(["in", "instanceof", "as", "satisfies", "of"]);
const CONTROL_KEYWORDS = new Set(["if", "while", "for", "with"]);

const isIdentStart = (c: number) =>
  (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 36 || c === 95 || c === 92 || c === 35 || c >= 128;
const isIdentPart = (c: number) => isIdentStart(c) || (c >= 48 && c <= 57);
const isDigit = (c: number) => c >= 48 && c <= 57;
const isNewline = (c: number) => c === 10 || c === 13 || c === 0x2028 || c === 0x2029;

/**
 * Refuses a source nested more than MAX_NESTING levels deep. A level is a bracket or brace, a
 * template literal's `${`, or a body that nests without one: an arrow function's expression body
 * (`a => b => …`) or the brace-less body of if / for / while / with / else / do (`if (a) if (b) …`;
 * an `else if` chain does not count). Such a body ends at `;`, `,`, its enclosing bracket, or a line
 * break where JavaScript inserts a semicolon.
 *
 * Strings, comments and template text are skipped; a `/` is a regular expression or a division as
 * the previous token says. A regular expression's brackets count while it is read and, if
 * unbalanced, until the enclosing bracket closes, so that a division taken for a regular
 * expression cannot hide nesting. A string or regular expression that runs into the end of its
 * line means the scan lost track of the code there: the source is then refused if more than
 * MAX_NESTING opening brackets follow that point (esbuild reports the real error when fewer do).
 * One pass, linear in the source's length: about 3 ms for 64 KiB.
 */
export function checkNesting(source: string): CheckFailure | undefined {
  return scan(source, MAX_NESTING).failure;
}

/** The deepest nesting in the source, as checkNesting counts it (for tools and tests). */
export function maxNesting(source: string): { depth: number; lost: boolean } {
  const { maxDepth, lost } = scan(source, Number.POSITIVE_INFINITY);
  return { depth: maxDepth, lost };
}

function scan(source: string, limit: number): { failure?: CheckFailure; maxDepth: number; lost: boolean } {
  const n = source.length;
  let i = source.startsWith("#!") ? source.search(/[\n\r\u2028\u2029]|$/) : 0;
  let line = 1;
  let lineStart = 0;

  // the stack of open brackets; index 0 is the top level
  const kinds: number[] = [BRACE];
  const flags: number[] = [BLOCK];
  const bodies: number[] = [0]; // expression-bodied arrows and brace-less statement bodies open in the frame
  const phantoms: number[] = [0]; // unbalanced brackets of regular expressions in the frame
  const ternaries: number[] = [0]; // `?` awaiting their `:` in the frame
  let extra = 0; // the sum of bodies and phantoms over the stack
  let maxDepth = 0;
  /** the depth now; records the deepest, and says whether it is over the limit */
  const over = (more = 0): boolean => {
    const d = kinds.length - 1 + extra + more;
    if (d > maxDepth) maxDepth = d;
    return d > limit;
  };

  // what the previous token lets come next
  let regexOk = true; // a `/` starts a regular expression
  let exprEnd = false; // the previous token ends an expression
  let stmtStart = true; // a statement may start here
  let afterDot = false; // the previous token is `.` or `?.`: a word is a property name
  let control = 0; // the previous word is if / while / for / with: CONTROL | FOR for the next (
  let asyncSaved: [boolean, boolean] | undefined; // regexOk and stmtStart before an `async`
  let fnExprAt = -1; // the stack height of a function or class expression whose body is next
  let bodyPending = NONE; // after `=>`, if (…) and the like: the next token starts the body
  let colonOpensBlock = false; // the previous token is a label's or case's `:`
  let newlineSeen = false; // a line break since the previous token

  let lostAt = -1; // where the scan lost track of the code (see above), or -1

  const fail = (at: number) => {
    const column = at - lineStart + 1;
    const failure: CheckFailure = {
      check: "structure",
      message:
        `the source is nested ${maxDepth} levels deep at line ${line}, column ${column} (brackets, braces, template literals, ` +
        `arrow functions and brace-less if/for/while bodies); the limit is ${limit}. ` +
        "Flatten it: move inner parts into named functions or constants",
      line,
      column,
    };
    return { failure, maxDepth, lost: lostAt >= 0 };
  };
  const push = (kind: number, flag: number): void => {
    kinds.push(kind);
    flags.push(flag);
    bodies.push(0);
    phantoms.push(0);
    ternaries.push(0);
  };
  const pop = (): number => {
    const top = kinds.length - 1;
    extra -= bodies[top] + phantoms[top];
    kinds.pop();
    bodies.pop();
    phantoms.pop();
    ternaries.pop();
    return flags.pop() as number;
  };
  const endBodies = (): void => {
    const top = kinds.length - 1;
    extra -= bodies[top];
    bodies[top] = 0;
  };
  const newline = (at: number): void => {
    line++;
    lineStart = at + 1;
    newlineSeen = true;
  };
  const lose = (at: number): void => {
    if (lostAt < 0) lostAt = at;
  };
  const token = (re: boolean, end: boolean, stmt = false): void => {
    regexOk = re;
    exprEnd = end;
    stmtStart = stmt;
    afterDot = false;
    colonOpensBlock = false;
  };

  /** Template text from i (just past a backtick or a closing `}`) to its end or to a `${`. */
  const templateText = (): ReturnType<typeof fail> | undefined => {
    while (i < n) {
      const c = source.charCodeAt(i);
      if (c === 92) {
        if (source.charCodeAt(i + 1) === 13 && source.charCodeAt(i + 2) === 10) i++;
        if (isNewline(source.charCodeAt(i + 1))) newline(i + 1);
        i += 2;
      } else if (c === 96) {
        i++;
        token(false, true);
        return undefined;
      } else if (c === 36 && source.charCodeAt(i + 1) === 123) {
        push(TEMPLATE, 0);
        if (over()) return fail(i);
        i += 2;
        token(true, false);
        return undefined;
      } else {
        if (c === 10 || c === 0x2028 || c === 0x2029 || (c === 13 && source.charCodeAt(i + 1) !== 10)) newline(i);
        i++;
      }
    }
    return undefined; // unterminated: esbuild says so
  };

  while (i < n) {
    const c = source.charCodeAt(i);

    // white space and comments
    if (c === 32 || c === 9 || c === 11 || c === 12 || c === 0xfeff || c === 0xa0) {
      i++;
      continue;
    }
    if (isNewline(c)) {
      if (c === 13 && source.charCodeAt(i + 1) === 10) i++;
      newline(i);
      i++;
      continue;
    }
    if (c === 47 && source.charCodeAt(i + 1) === 47) {
      while (i < n && !isNewline(source.charCodeAt(i))) i++;
      continue;
    }
    if (c === 47 && source.charCodeAt(i + 1) === 42) {
      const end = source.indexOf("*/", i + 2);
      const stop = end < 0 ? n : end + 2;
      for (let j = i + 2; j < stop; j++) {
        const d = source.charCodeAt(j);
        if (d === 10 || d === 0x2028 || d === 0x2029 || (d === 13 && source.charCodeAt(j + 1) !== 10)) newline(j);
      }
      i = stop;
      continue;
    }

    // a significant token starts at i
    let arrowBody = false;
    if (bodyPending !== NONE) {
      const pending = bodyPending;
      bodyPending = NONE;
      if (c === 123) arrowBody = pending === ARROW_BODY;
      else if (!(pending === ELSE_BODY && c === 105 && source.charCodeAt(i + 1) === 102 && !isIdentPart(source.charCodeAt(i + 2)))) {
        // (an `else if` chain is not nesting as far as esbuild's time is concerned)
        bodies[kinds.length - 1]++;
        extra++;
        if (over()) return fail(i);
      }
    }
    if (newlineSeen) {
      newlineSeen = false;
      // an automatic semicolon ends every body open in the frame (where no semicolon can be
      // inserted, as in an object literal, a word after a complete expression is invalid anyway)
      if (exprEnd) {
        let starts = isIdentStart(c) || isDigit(c) || c === 34 || c === 39 || c === 123 || c === 33 || c === 126 || c === 64;
        if (starts && isIdentStart(c)) {
          let j = i + 1;
          while (j < n && isIdentPart(source.charCodeAt(j))) j++;
          starts = !CONTINUING_WORDS.has(source.slice(i, j));
        }
        if (starts) endBodies();
      }
    }

    if (isIdentStart(c)) {
      const start = i;
      i++;
      while (i < n && isIdentPart(source.charCodeAt(i))) i++;
      const word = source.slice(start, i);
      const top = kinds.length - 1;
      if (afterDot) {
        token(false, true);
      } else if (word === "async") {
        asyncSaved = [regexOk, stmtStart];
        token(false, true);
        continue; // keeps asyncSaved for a following `function`
      } else if (word === "function" || word === "class") {
        const [re, stmt] = asyncSaved ?? [regexOk, stmtStart];
        if (re && !stmt) fnExprAt = kinds.length;
        token(false, false);
      } else if (CONTROL_KEYWORDS.has(word)) {
        control = CONTROL | (word === "for" ? FOR : 0);
        token(false, false);
        asyncSaved = undefined;
        continue; // keeps control for the (
      } else if (word === "await" && control) {
        continue; // for await (
      } else if (word === "of" && flags[top] & FOR && kinds[top] === PAREN) {
        token(true, false);
      } else if (EXPRESSION_KEYWORDS.has(word)) {
        token(true, false, STATEMENT_KEYWORDS.has(word));
        if (word === "else") bodyPending = ELSE_BODY;
        else if (word === "do") bodyPending = STATEMENT_BODY;
      } else if (STATEMENT_KEYWORDS.has(word)) {
        token(true, false, true);
      } else {
        token(false, true);
      }
      control = 0;
      asyncSaved = undefined;
      continue;
    }
    control &= c === 40 ? -1 : 0;
    asyncSaved = undefined;

    if (isDigit(c) || (c === 46 && isDigit(source.charCodeAt(i + 1)))) {
      const hex = c === 48 && (source.charCodeAt(i + 1) | 32) === 120;
      i++;
      while (i < n) {
        const d = source.charCodeAt(i);
        if (isIdentPart(d) || d === 46) i++;
        else if ((d === 43 || d === 45) && (source.charCodeAt(i - 1) | 32) === 101 && !hex)
          i++; // 1e+5
        else break;
      }
      token(false, true);
      continue;
    }

    if (c === 34 || c === 39) {
      const start = i;
      i++;
      for (;;) {
        if (i >= n) {
          lose(start);
          break;
        }
        const d = source.charCodeAt(i);
        if (d === c) {
          i++;
          break;
        }
        if (d === 92) {
          if (source.charCodeAt(i + 1) === 13 && source.charCodeAt(i + 2) === 10) i++;
          if (isNewline(source.charCodeAt(i + 1))) newline(i + 1);
          i += 2;
        } else if (isNewline(d)) {
          lose(start); // unterminated on its line
          break;
        } else i++;
      }
      token(false, true);
      continue;
    }

    if (c === 96) {
      i++;
      const failed = templateText();
      if (failed) return failed;
      continue;
    }

    if (c === 47 && regexOk) {
      // a regular expression: its brackets count while it is read, the unbalanced ones until the
      // enclosing bracket closes (harmless if it is one; if it is a division they were code)
      const start = i;
      const top = kinds.length - 1;
      let open = 0;
      let inClass = false;
      i++;
      for (;;) {
        if (i >= n || isNewline(source.charCodeAt(i))) {
          lose(start);
          break;
        }
        const d = source.charCodeAt(i);
        if (d === 92) {
          i += 2;
          continue;
        }
        if (d === 47 && !inClass) {
          i++;
          break;
        }
        if (d === 91) inClass = true;
        else if (d === 93) inClass = false;
        if (d === 40 || d === 91 || d === 123) {
          open++;
          if (over(open)) return fail(i);
        } else if ((d === 41 || d === 93 || d === 125) && open > 0) open--;
        i++;
      }
      while (i < n && isIdentPart(source.charCodeAt(i))) i++; // flags
      phantoms[top] += open;
      extra += open;
      token(false, true);
      continue;
    }

    // punctuators
    const top = kinds.length - 1;
    if (c === 40 || c === 91) {
      push(c === 40 ? PAREN : BRACKET, c === 40 ? control : 0);
      control = 0;
      if (over()) return fail(i);
      i++;
      token(true, false);
      continue;
    }
    if (c === 123) {
      let flag = 0;
      if (fnExprAt === kinds.length) {
        flag = BLOCK | EXPR_BODY;
        fnExprAt = -1;
      } else if (arrowBody || stmtStart || colonOpensBlock || !regexOk) {
        flag = BLOCK; // a block, a body, a class or interface body
      }
      push(BRACE, flag);
      if (over()) return fail(i);
      i++;
      token(true, false, (flag & BLOCK) !== 0);
      continue;
    }
    if (c === 41 || c === 93 || c === 125) {
      i++;
      if (top === 0) {
        token(false, true);
        continue;
      }
      const kind = CLOSER_KIND[source[i - 1]];
      if (c === 125 && kinds[top] === TEMPLATE) {
        pop();
        const failed = templateText();
        if (failed) return failed;
        continue;
      }
      if (kinds[top] !== kind) {
        token(false, true); // a closer that matches nothing: invalid, esbuild reports it
        continue;
      }
      const flag = pop();
      if (c === 41) {
        token((flag & CONTROL) !== 0, (flag & CONTROL) === 0, (flag & CONTROL) !== 0);
        if (flag & CONTROL) bodyPending = STATEMENT_BODY;
      } else if (c === 93) token(false, true);
      else if (flag & BLOCK && !(flag & EXPR_BODY)) token(true, true, true);
      else token(false, true);
      continue;
    }
    if (c === 44 || c === 59) {
      endBodies();
      i++;
      token(true, false, c === 59);
      continue;
    }
    if (c === 61 && source.charCodeAt(i + 1) === 62) {
      i += 2;
      token(true, false);
      bodyPending = ARROW_BODY;
      continue;
    }
    if (c === 46) {
      const spread = source.startsWith("...", i);
      i += spread ? 3 : 1;
      token(spread, false);
      afterDot = !spread;
      continue;
    }
    if (c === 63) {
      const next = source.charCodeAt(i + 1);
      if (next === 46 && !isDigit(source.charCodeAt(i + 2))) {
        i += 2;
        token(false, false);
        afterDot = true;
      } else if (next === 63) {
        i += 2;
        token(true, false);
      } else {
        ternaries[top]++;
        i++;
        token(true, false);
      }
      continue;
    }
    if (c === 58) {
      i++;
      const ternary = ternaries[top] > 0;
      if (ternary) ternaries[top]--;
      token(true, false);
      colonOpensBlock = !ternary && kinds[top] === BRACE && (flags[top] & BLOCK) !== 0;
      continue;
    }
    if ((c === 43 || c === 45) && source.charCodeAt(i + 1) === c) {
      i += 2;
      // postfix after an operand, prefix otherwise
      token(!exprEnd, exprEnd);
      continue;
    }
    // any other operator: an operand follows
    i++;
    token(true, false);
  }

  if (lostAt >= 0) {
    let opens = 0;
    for (let j = lostAt; j < n; j++) {
      const d = source.charCodeAt(j);
      if (d === 40 || d === 91 || d === 123) opens++;
    }
    if (opens > limit) {
      line = 1;
      for (let j = source.indexOf("\n"); j >= 0 && j < lostAt; j = source.indexOf("\n", j + 1)) line++;
      const column = lostAt - source.lastIndexOf("\n", lostAt - 1);
      const failure: CheckFailure = {
        check: "syntax",
        message:
          `unterminated string or regular expression literal at line ${line}, column ${column}: ` +
          "close it on the line it starts (a string may continue on the next line only after a backslash)",
        line,
        column,
      };
      return { failure, maxDepth, lost: true };
    }
  }
  return { maxDepth, lost: lostAt >= 0 };
}
