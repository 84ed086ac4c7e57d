// One definition per wire type: the server's zod schemas. sdk/wire.ts is generated from the
// document the running server serves (scripts/gen-wire-types.ts), and the SDK's and the sandbox's
// types are aliases of it or, where the SDK takes friendlier input or promises more, held to it
// here at compile time (this file type-checks itself, so running it alone catches a drift too).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import ts from "typescript";
import type { GradeOutcome, GradeScore as SandboxScore } from "../sandbox/validate/checks.ts";
import { serverDocument, WIRE_TYPES, wireTypes } from "../scripts/gen-wire-types.ts";
import type { GradeBatchParams, Graders } from "../sdk/client.ts";
import type { GradeErrorCode, GraderAbstainedError, Role, WireThread, WireTurn } from "../sdk/index.ts";
import type { componentsOf, summarize } from "../sdk/summary.ts";
import type {
  CreateBinaryJudgeParams,
  GradeBatchResponse,
  GradeResponse,
  GradeResult,
  GradeScore,
  Sample,
  SetSecretParams,
  ValidateResponse,
} from "../sdk/types.ts";
import type * as Wire from "../sdk/wire.ts";
import type { OpenAPIDocument } from "../server/openapi.ts";
import { repoRoot, startServer, type TestServer } from "./support/helpers.ts";

// ---- compile time: the SDK's hand-written types against the generated ones ----

/** The same type: as tsc compares them, optional fields and readonly included. */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Fits<A, B> = [A] extends [B] ? true : false;
/** An intersection as one object type, for Same. */
type Flat<T> = { [K in keyof T]: T[K] };
/** Each entry must be `true`: tsc fails on a `false` here. */
const agree: Record<string, true> = {
  // the isolate's and the sandbox's outcomes are the API's
  sandboxScore: true satisfies Same<SandboxScore, Omit<Wire.ScoredResult, "outcome">>,
  // …with `outcome` named by the routes (server/results.ts)
  sandboxOutcome: true satisfies Same<
    GradeOutcome,
    Omit<Wire.ScoredResult, "outcome"> | Omit<Wire.ErrorResult, "outcome"> | Omit<Wire.AbstainedResult, "outcome">
  >,
  // a thread as the SDK and the isolate build it (sdk/thread.ts) is the API's
  thread: true satisfies Same<WireThread, Wire.ThreadInput>,
  turn: true satisfies Same<WireTurn, Wire.TurnInput>,
  role: true satisfies Same<Role, Wire.RoleInput>,
  errorCode: true satisfies Same<GradeErrorCode, Wire.GradeError["code"]>,
  // a score's subscores are SubScores to the SDK (unknown[] to the API): otherwise the same
  score: true satisfies Fits<GradeScore & { outcome: "scored" }, Wire.ScoredResult>,
  scoreFields: true satisfies Same<Omit<GradeScore, "subscores">, Omit<Wire.ScoredResult, "subscores" | "outcome">>,
  result: true satisfies Fits<GradeResult, Wire.GradeResult>,
  response: true satisfies Fits<GradeResponse, Wire.GradeResponse>,
  responseFields: true satisfies Same<Omit<GradeResponse, "subscores">, Omit<Wire.GradeResponse, "subscores">>,
  batch: true satisfies Fits<GradeBatchResponse, Wire.GradeBatchResponse>,
  // provenance, components, summary and deadlineExceeded as the API sends them
  batchFields: true satisfies Same<Omit<GradeBatchResponse, "results">, Omit<Wire.GradeBatchResponse, "results">>,
  // gradeBatch's and grade's parameters are the request's fields (a StringThread sent as a thread)
  batchParams: true satisfies Same<
    Flat<Omit<GradeBatchParams, "graderKey" | "threads" | "concurrency"> & { threads: WireThread[] }>,
    Wire.RequestBody<"graders.gradeBatch">
  >,
  gradeParams: true satisfies Same<
    Flat<Omit<Parameters<Graders["grade"]>[0], "graderKey" | "thread"> & { thread: WireThread }>,
    Wire.RequestBody<"graders.grade">
  >,
  abstention: true satisfies Same<GraderAbstainedError["abstained"], Wire.Abstention>,
  // sdk/summary.ts computes what the API answers
  summary: true satisfies Same<ReturnType<typeof summarize>, Wire.BatchSummary>,
  components: true satisfies Same<NonNullable<ReturnType<typeof componentsOf>>, NonNullable<Wire.GradeBatchResponse["components"]>>,
  validate: true satisfies Fits<ValidateResponse, Wire.ValidateResponse>,
  // the SDK takes a StringThread where the API takes a thread, and sends it as one
  sample: true satisfies Same<Flat<Omit<Sample, "thread"> & { thread: WireThread }>, Wire.SampleInput>,
  binaryJudge: true satisfies Same<
    Flat<Omit<CreateBinaryJudgeParams, "samples"> & { samples?: Array<{ thread: WireThread }> }>,
    Wire.RequestBody<"graders.create.binaryJudge">
  >,
  // the secret's name goes in the path
  secret: true satisfies Same<Omit<SetSecretParams, "name">, Wire.RequestBody<"secrets.set">>,
};

test("the SDK's own types agree with the generated ones (this file type-checks)", () => {
  assert.ok(Object.values(agree).every((v) => v === true));
  const file = new URL(import.meta.url).pathname;
  const config = ts.readConfigFile(join(repoRoot, "tsconfig.json"), ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, repoRoot);
  const program = ts.createProgram([file], options);
  const errors = ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => {
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
    return `line ${line}: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`;
  });
  assert.deepEqual(errors, []);
});

// ---- the document the running server serves ----

let s: TestServer;
let doc: OpenAPIDocument;
before(async () => {
  s = await startServer({ listen: true });
  const res = await fetch(`${s.url}/openapi.json`);
  assert.equal(res.status, 200);
  doc = (await res.json()) as OpenAPIDocument;
});
after(() => s?.close());

describe("sdk/wire.ts", () => {
  test("is what scripts/gen-wire-types.ts generates from the running server's document (make wire-types)", async () => {
    const generated = await wireTypes(doc);
    const committed = readFileSync(WIRE_TYPES, "utf8");
    if (generated !== committed) {
      const a = committed.split("\n");
      const b = generated.split("\n");
      const line = a.findIndex((l, i) => l !== b[i]);
      assert.fail(
        `sdk/wire.ts differs from the server's document from line ${line + 1}:\n  file:      ${a[line]}\n  generated: ${b[line]}\nrun \`make wire-types\``,
      );
    }
  });

  test("the generator's own document (no worker, default limits) is the running server's", async () => {
    assert.deepEqual(await serverDocument(), doc);
  });
});
