// Authoring frictions a new user hit (issue 12): which function is the entry point, the return
// types the SDK and the signature check accept, and what test_run says about the sample thread.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import ts from "typescript";
import { analyze } from "../sandbox/validate/analyze.ts";
import { call, repoRoot, startServer, type TestServer } from "./support/helpers.ts";

function warningsOf(source: string): string[] {
  const analysis = analyze(source);
  assert.ok(!("check" in analysis), `analysis failed: ${JSON.stringify(analysis)}`);
  return analysis.warnings;
}

describe("the signature check accepts the documented return types", () => {
  for (const ret of [
    "number",
    "Promise<number>",
    "GradeScore",
    "Promise<GradeScore>",
    "Promise<number | GradeScore>",
    "Promise<GradeScore | number>",
    "number | GradeScore",
    "Promise<(number | GradeScore)>",
    "Promise<{ score: number; reason?: string }>",
    "Promise<{ score: number, reason: string, metadata?: Record<string, unknown>, subscores?: SubScore[] }>",
    "Promise<number | { score: number; reason?: string }>",
    "Promise<{ reward: number; subscores: SubScore[] }>",
    "Promise<Combined>",
  ]) {
    test(ret, () => {
      assert.deepEqual(warningsOf(`async function grade(thread: StringThread): ${ret} { return 1 }`), []);
    });
  }
  test("an arrow annotated Promise<GradeScore>", () => {
    assert.deepEqual(warningsOf("const grade = async (t: StringThread): Promise<GradeScore> => ({ score: 1 });"), []);
  });
});

describe("the signature check still warns", () => {
  for (const [ret, shown] of [
    ["Promise<string>", "Promise<string>"],
    ["Promise<number | string>", "Promise<number|string>"],
    ["Promise<{ score: string }>", "Promise<{score:string}>"],
    ["Promise<{ reason: string }>", "Promise<{reason:string}>"],
    ["Promise<{ score: number; extra: number }>", "Promise<{score:number;extra:number}>"],
    ["Promise<Promise<number>>", "Promise<Promise<number>>"],
    ["Promise<any>", "Promise<any>"],
    ["Promise<{ score?: number }>", "Promise<{score?:number}>"],
  ]) {
    test(`for ${ret}`, () => {
      assert.deepEqual(warningsOf(`async function grade(t: StringThread): ${ret} { return 1 }`), [
        `the return type of grade is ${shown}, not Promise<number>`,
      ]);
    });
  }
  test("for a missing parameter annotation, whatever the return type", () => {
    assert.deepEqual(warningsOf("async function grade(t): Promise<GradeScore> { return { score: 1 } }"), [
      "the parameter of grade is not annotated; annotate it as StringThread",
    ]);
  });
  test("for a missing return annotation, naming both documented forms", () => {
    const [warning] = warningsOf("async function grade(t: StringThread) { return 1 }");
    assert.match(warning, /^the return type of grade is not annotated; annotate it as Promise<number> or Promise<GradeScore>/);
  });
});

describe("the SDK's function type", () => {
  const dir = mkdtempSync(join(tmpdir(), "gradebox-authoring-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("accepts async functions resolving to number | GradeScore (or {reward, …}), refuses the rest", () => {
    const sdk = join(repoRoot, "sdk/index.ts");
    const file = join(dir, "graders.ts");
    writeFileSync(
      file,
      `import { combine, Gradebox, type GradeScore, type StringThread } from ${JSON.stringify(sdk)};
const client = new Gradebox();
export const ok = [
  client.graders.create.function({ key: "a", fn: async (t: StringThread) => (t.completion() === "4" ? 1 : 0) }),
  client.graders.create.function({ key: "b", fn: async (t: StringThread): Promise<number> => t.getTurns().length }),
  client.graders.create.function({ key: "c", fn: async (t) => ({ score: 1, reason: t.lastContent() ?? "" }) }),
  client.graders.create.function({ key: "d", fn: async (): Promise<GradeScore> => ({ score: 1, metadata: { n: 1 }, subscores: [] }) }),
  client.graders.create.function({ key: "e", fn: async (t) => (t.metadata.x ? 1 : { score: 0, reason: "no x" }) }),
  client.graders.create.function({ key: "f", fn: async () => combine([{ name: "a", value: 1, weight: 1 }]) }),
  client.graders.create.function({ key: "g", fn: async () => ({ ...combine([{ name: "a", value: 1 }]), reason: "why" }) }),
  client.graders.validate({ fn: async () => ({ score: 0.5, reason: "half" }), threads: [] }),
];
export const refused = [
  // @ts-expect-error a string is not a score
  client.graders.create.function({ key: "x", fn: async () => "1" }),
  // @ts-expect-error a score must be a number
  client.graders.create.function({ key: "y", fn: async () => ({ score: "1" }) }),
  // @ts-expect-error a result needs a score (or reward)
  client.graders.create.function({ key: "z", fn: async () => ({ reason: "no score" }) }),
  // @ts-expect-error a reason must be a string
  client.graders.create.function({ key: "w", fn: async () => ({ score: 1, reason: 2 }) }),
  // @ts-expect-error a sync grader fails the structure check: the types refuse it too
  client.graders.create.function({ key: "h", fn: () => 1 }),
  // @ts-expect-error a sync grader returning a GradeScore, likewise
  client.graders.create.function({ key: "i", fn: (): GradeScore => ({ score: 1 }) }),
  // @ts-expect-error the parameter is a thread
  client.graders.create.function({ key: "v", fn: async (t: number) => t }),
];
`,
    );
    const program = ts.createProgram([file], {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      noEmit: true,
      allowImportingTsExtensions: true,
      skipLibCheck: true,
      types: ["node"],
      typeRoots: [join(repoRoot, "node_modules/@types")],
      lib: ["lib.es2023.d.ts", "lib.dom.d.ts"],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
      return `${where ? `${d.file?.fileName}:${where.line + 1}: ` : ""}${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
    });
    assert.deepEqual(diagnostics, []);
  });
});

describe("test_run on the built-in sample thread", () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({ env: { GRADEBOX_TIMEOUT_MS: "300" } });
  });
  after(() => s.close());

  test("a grader that reads metadata.expected is told the sample thread's metadata is {} and how to guard", async () => {
    const res = await call(s.app, "POST", "/v1/projects/p/graders", {
      key: "expects",
      source:
        "async function grade(thread: StringThread): Promise<number> {\n" +
        "  return thread.completion() === thread.metadata.expected.trim() ? 1 : 0;\n}",
    });
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.equal(res.body.check, "test_run");
    const { message } = res.body as { message: string };
    assert.match(message, /GRADER_ERROR: TypeError/, "the grader's own error is still there");
    assert.match(message, /built-in sample thread/);
    assert.match(message, /metadata is \{\}/);
    assert.match(message, /thread\.metadata\.expected \?\? ""/);
    assert.match(message, /samples/);
  });

  test("a Python grader is told how to guard in Python (dict.get), not with TypeScript's ??", async () => {
    const res = await call(s.app, "POST", "/v1/projects/p/graders", {
      key: "expects-py",
      language: "python",
      source: 'async def grade(thread) -> float:\n    return 1.0 if thread.metadata["expected"] == "4" else 0.0\n',
    });
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.equal(res.body.check, "test_run");
    const { message } = res.body as { message: string };
    assert.match(message, /GRADER_ERROR: KeyError: 'expected'/);
    assert.match(message, /thread\.metadata\.get\("expected", ""\)/);
    assert.doesNotMatch(message, /\?\?/, "no TypeScript operator in a Python grader's hint");
    assert.equal(res.body.line, 2);
  });
});
