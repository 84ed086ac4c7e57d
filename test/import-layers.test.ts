// The two layers that refuse value imports, each tested alone: the TypeScript-AST structure
// check (analyze) and the bundler's resolver (compile). Either one must hold if the other had a
// gap, so neither test goes through the other.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { analyze } from "../sandbox/validate/analyze.ts";
import { bundle } from "../sandbox/validate/compile.ts";

// each import's binding is used as a value, so neither layer may drop it as type-only
const imports = [
  ["a node module", 'import fs from "node:fs";\nglobalThis.used = fs;'],
  ["a package", 'import { readFileSync } from "fs";\nglobalThis.used = readFileSync;'],
  ["a relative file", 'import x from "./secret";\nglobalThis.used = x;'],
  ["a side effect", 'import "os";'],
  ["a re-export", 'export { x } from "child_process";'],
] as const;

describe("layer 1 alone: the structure check on the AST", () => {
  for (const [what, line] of imports) {
    test(`refuses ${what}`, () => {
      const result = analyze(`${line}\nasync function grade(t) { return 1 }`);
      assert.ok("check" in result, `analyze accepted ${line}`);
      assert.equal(result.check, "structure");
      assert.match(result.message, /not allowed/);
      assert.equal(result.line, 1);
    });
  }
  test("allows gradebox and type-only imports", () => {
    const result = analyze('import type { X } from "fs";\nimport { StringThread } from "gradebox";\nasync function grade(t) { return 1 }');
    assert.ok(!("check" in result), JSON.stringify(result));
  });
});

describe("layer 2 alone: the bundler's resolver, given source the AST check never saw", () => {
  for (const [what, line] of imports) {
    test(`refuses ${what}`, async () => {
      const code = `${line}\nglobalThis.__gradebox_grade = async (t) => 1;\n`;
      const result = await bundle(code);
      assert.ok("check" in result, `the bundler resolved ${line}`);
      assert.equal(result.check, "structure");
      assert.match(result.message, /is not allowed in a grader|not allowed/);
    });
  }
  test("resolves gradebox and gradebox/graders", async () => {
    const result = await bundle(
      'import { StringThread } from "gradebox";\nimport { exactMatch } from "gradebox/graders";\nglobalThis.g = [StringThread, exactMatch];\n',
    );
    assert.ok(!("check" in result), JSON.stringify(result));
  });
});
