// One example per operation of the OpenAPI document, by operationId: its request body and its
// success responses, by status (server/openapi.ts puts them on the operation's media). Small and
// true to the schemas: test/wire-types.test.ts validates each against the schema it stands for.

import { createHash } from "node:crypto";
import type { WireThread } from "../sdk/thread.ts";
import { binaryPrompt, binaryTemplate } from "./judges/kinds.ts";
import type { BinaryJudgeSpec } from "./judges/spec.ts";

export interface OperationExamples {
  request?: unknown;
  /** by status; a response without a body (204) has none */
  responses: Record<number, unknown>;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const AT = "2026-01-15T09:30:00.000Z";
const LATER = "2026-01-16T14:05:00.000Z";
const PROJECT = "acme";

const QUESTION = { role: "user", content: "What is the capital of France?" } as const;
const THREAD: WireThread = { turns: [QUESTION, { role: "assistant", content: "Paris" }], metadata: { expected: "Paris" } };
const WRONG: WireThread = { ...THREAD, turns: [QUESTION, { role: "assistant", content: "Lyon" }] };

const SOURCE = `import type { StringThread } from "gradebox";
import { exactMatch } from "gradebox/graders";

export default async function grade(thread: StringThread): Promise<number> {
  return exactMatch(thread.completion(), thread.metadata.expected);
}
`;
const SOURCE_V2 = `import type { StringThread } from "gradebox";
import { contains } from "gradebox/graders";

export default async function grade(thread: StringThread): Promise<number> {
  return contains(thread.completion(), thread.metadata.expected);
}
`;

const API_KEY = {
  id: "key_5f3a9c2e7b1d",
  project: PROJECT,
  prefix: "gbx_3q2V7w",
  label: "ci",
  role: "grader",
  createdAt: AT,
  revokedAt: null,
};
const TOKEN = "gbr-9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c0b2d4f6e";
const GRADE_TOKEN = {
  id: "tok_7c1e9a3b5d2f",
  project: PROJECT,
  grader: "exact-answer",
  prefix: TOKEN.slice(0, 10),
  label: "ppo run 7",
  options: {
    labelKey: "label",
    strip: "prompt",
    onPromptMismatch: "whole",
    stopStrings: ["<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<|end|>", "<end_of_turn>", "</s>"],
    fallback: 0,
  },
  createdAt: AT,
  revokedAt: null,
};
const ADMIN_KEY = { ...API_KEY, id: "key_0a1b2c3d4e5f", prefix: "gbx_Xk9pQ2", label: "created at first start", role: "admin" };

const grader = (key: string, kind: string, definition: string, extra: Record<string, unknown> = {}) => ({
  project: PROJECT,
  key,
  kind,
  version: 1,
  description: "",
  locked: false,
  quarantinedAt: null,
  recentFaults: 0,
  warnings: [],
  sourceSha256: sha256(definition),
  createdAt: AT,
  updatedAt: AT,
  ...extra,
});

const FUNCTION = grader("exact-answer", "function", SOURCE, {
  language: "typescript",
  description: "1 when the answer is metadata.expected",
});
const FUNCTION_DETAIL = { ...FUNCTION, source: SOURCE };
/** which grader graded: the example function grader's version 1 */
const PROVENANCE = {
  grader: "exact-answer",
  kind: "function",
  version: 1,
  sourceSha256: sha256(SOURCE),
  language: "typescript",
} as const;
const VERSION_2 = { ...FUNCTION, version: 2, sourceSha256: sha256(SOURCE_V2), updatedAt: LATER };
const UPDATED = {
  ...VERSION_2,
  source: SOURCE_V2,
  report: {
    samples: 2,
    changed: [{ index: 1, before: 0, after: 1 }],
    scores: [
      { index: 0, before: 1, after: 1 },
      { index: 1, before: 0, after: 1 },
    ],
  },
};
const version = (n: number, source: string, createdAt: string) => ({
  version: n,
  language: "typescript",
  description: FUNCTION.description,
  sourceSha256: sha256(source),
  warnings: [],
  createdAt,
});

const PARTS = [
  { graderKey: "exact-answer", name: "exact-answer", weight: 0.7, version: 1, pinned: false },
  { graderKey: "polite", name: "polite", weight: 0.3, version: 1, pinned: false },
];
const COMBINED_SUMMARY = grader("answer-quality", "combined", JSON.stringify(PARTS), { mode: "weighted" });
const COMBINED = { ...COMBINED_SUMMARY, parts: PARTS };

const BINARY: BinaryJudgeSpec = { type: "binary", model: "judge-small", criteria: "The assistant answers politely" };
const PREBUILT = { type: "prebuilt", model: "judge-small", metric: "FAITHFULNESS" };
const RUBRIC_CRITERIA = [
  { name: "correct", requirement: "The answer names Paris", weight: 10 },
  {
    name: "tone",
    requirement: "The answer's tone",
    weight: 5,
    options: [
      { label: "warm", value: 1 },
      { label: "neutral", value: 0.5 },
      { label: "rude", value: 0 },
    ],
  },
];
const RUBRIC = { type: "rubric", model: "judge-small", criteria: RUBRIC_CRITERIA, cannotAssess: "partial", partialCredit: 0.5 };
const judge = (key: string, spec: object) => grader(key, "judge", JSON.stringify(spec), { judge: spec });

const ENDPOINT = {
  url: "https://rewards.example.com",
  headersSecret: { Authorization: "rm-token" },
  transport: "http",
  timeoutMs: 30_000,
  batch: true,
  batchSize: 64,
  maxConcurrency: 8,
  info: { version: "1.2.0", name: "math-verifier", description: "Checks a final numeric answer" },
  metadataSchema: { type: "object", properties: { expected: { type: "string" } }, required: ["expected"] },
};

/** a code grader as `{languages: ["python", "javascript"], scoring: "all_or_nothing"}` stores it: every default filled in */
const CODE = {
  languages: ["python", "javascript"],
  extract: "fenced_or_whole",
  tests: "auto",
  compare: "whitespace",
  absTol: 1e-6,
  relTol: 1e-6,
  scoring: "all_or_nothing",
  limits: { cpuMs: 2000, memoryMb: 256, outputBytes: 65536 },
  maxTests: 32,
};

const MODEL = {
  key: "judge-small",
  baseURL: "https://api.openai.com/v1",
  model: "gpt-4o-mini",
  apiKeySecret: "openai-key",
  maxConcurrency: 8,
  timeoutMs: 60_000,
  project: PROJECT,
  createdAt: AT,
};
const SECRET = { name: "openai-key", host: null, createdAt: AT, updatedAt: AT };
const BOUND = { ...SECRET, host: "api.openai.com" };

const REWARD_REQUEST = { ...THREAD, id: "row-17" };

export const EXAMPLES: Record<string, OperationExamples> = {
  health: { responses: { 200: { status: "ok", workers: 4 } } },
  ready: {
    responses: { 200: { status: "ready", database: true, workers: 4 }, 503: { status: "not ready", database: true, workers: 0 } },
  },
  me: { responses: { 200: { project: PROJECT } } },
  usage: {
    // a project with a few graders, under the default quotas
    responses: {
      200: {
        graders: { used: 3, limit: 1000 },
        bytes: { used: 48_211, limit: 268_435_456 },
        models: { used: 1, limit: 100 },
        secrets: { used: 1, limit: 100 },
        gradeTokens: { used: 2, limit: 1000 },
        versionsPerGrader: 500,
      },
    },
  },
  limits: {
    // the defaults
    responses: {
      200: {
        maxBatchThreads: 1000,
        maxBodyBytes: 10_485_760,
        maxTurns: 1000,
        maxContentChars: 1_000_000,
        maxSourceBytes: 65_536,
        maxSamples: 100,
        timeoutMs: 1000,
        memoryMb: 64,
      },
    },
  },
  "graders.create.function": {
    request: {
      key: "exact-answer",
      source: SOURCE,
      language: "typescript",
      description: FUNCTION.description,
      samples: [{ thread: THREAD, expected: 1 }],
    },
    responses: { 201: FUNCTION_DETAIL },
  },
  "graders.validate": {
    request: { source: SOURCE, threads: [THREAD, WRONG] },
    responses: {
      200: {
        valid: true,
        warnings: [],
        shape: "thread",
        results: [
          { outcome: "scored", score: 1 },
          { outcome: "scored", score: 0 },
        ],
      },
    },
  },
  "graders.list": { responses: { 200: { data: [COMBINED_SUMMARY, FUNCTION], nextCursor: null } } },
  "graders.get": { responses: { 200: FUNCTION_DETAIL } },
  "graders.lock": { request: { locked: true }, responses: { 200: { ...FUNCTION, locked: true } } },
  "graders.release": { responses: { 200: FUNCTION } },
  "graders.delete": { responses: {} },
  "graders.create.combined": {
    request: {
      key: "answer-quality",
      mode: "weighted",
      graders: [
        { graderKey: "exact-answer", weight: 0.7 },
        { graderKey: "polite", weight: 0.3 },
      ],
    },
    responses: { 201: COMBINED },
  },
  "graders.grade": {
    request: { thread: THREAD },
    responses: { 200: { outcome: "scored", score: 1, durationMs: 0.412, version: 1, provenance: PROVENANCE } },
  },
  "graders.gradeBatch": {
    request: { threads: [THREAD, WRONG] },
    responses: {
      200: {
        // a thread the grader takes too long on is that thread's error, not the batch's
        results: [
          { outcome: "scored", score: 1 },
          { outcome: "error", error: { code: "GRADER_TIMEOUT", message: "exceeded the 1000 ms time limit" } },
        ],
        durationMs: 0.97,
        version: 1,
        provenance: PROVENANCE,
      },
    },
  },
  "graders.update": { request: { source: SOURCE_V2 }, responses: { 200: UPDATED } },
  "graders.versions.list": { responses: { 200: { data: [version(1, SOURCE, AT), version(2, SOURCE_V2, LATER)] } } },
  "graders.versions.get": { responses: { 200: { ...version(1, SOURCE, AT), source: SOURCE } } },
  "graders.versions.delete": { responses: {} },
  "graders.versions.restore": {
    responses: {
      200: {
        ...FUNCTION_DETAIL,
        version: 3,
        updatedAt: LATER,
        report: {
          samples: 2,
          changed: [{ index: 1, before: 1, after: 0 }],
          scores: [
            { index: 0, before: 1, after: 1 },
            { index: 1, before: 1, after: 0 },
          ],
        },
      },
    },
  },
  "graders.create.binaryJudge": {
    request: { key: "polite", judgeModel: "judge-small", criteria: BINARY.criteria },
    responses: { 201: judge("polite", BINARY) },
  },
  "graders.create.prebuiltJudge": {
    request: { key: "faithful", judgeModel: "judge-small", type: "FAITHFULNESS" },
    responses: { 201: judge("faithful", PREBUILT) },
  },
  "graders.create.rubricJudge": {
    request: { key: "rubric", judgeModel: "judge-small", criteria: RUBRIC_CRITERIA, cannotAssess: "partial" },
    responses: { 201: judge("rubric", RUBRIC) },
  },
  "graders.prompt": {
    request: { thread: THREAD },
    // the messages the built-in template renders
    responses: { 200: { messages: binaryPrompt(BINARY, binaryTemplate(BINARY), THREAD) } },
  },
  "models.create": {
    request: { key: MODEL.key, baseURL: MODEL.baseURL, model: MODEL.model, apiKeySecret: MODEL.apiKeySecret },
    responses: { 201: MODEL },
  },
  "models.list": { responses: { 200: { data: [MODEL] } } },
  "models.get": { responses: { 200: MODEL } },
  "models.delete": { responses: {} },
  "graders.create.externalEndpoint": {
    request: { key: "math-verifier", url: ENDPOINT.url, headersSecret: ENDPOINT.headersSecret },
    responses: { 201: grader("math-verifier", "endpoint", ENDPOINT.url, { endpoint: ENDPOINT }) },
  },
  "graders.create.code": {
    request: { key: "unit-tests", languages: ["python", "javascript"], scoring: "all_or_nothing" },
    responses: { 201: grader("unit-tests", "code", JSON.stringify(CODE), { code: CODE }) },
  },
  "secrets.set": { request: { value: "sk-example-0123456789" }, responses: { 200: { ...SECRET, updatedAt: LATER }, 201: SECRET } },
  "secrets.list": { responses: { 200: { data: [BOUND] } } },
  "secrets.get": { responses: { 200: BOUND } },
  "secrets.delete": { responses: {} },
  "keys.create": {
    request: { label: "ci", role: "grader" },
    responses: { 201: { ...API_KEY, key: "gbx_3q2V7wR9xK1mN4pT8sL0aY6cE5dF2gH7" } },
  },
  "keys.list": { responses: { 200: { data: [ADMIN_KEY, API_KEY] } } },
  "keys.revoke": { responses: { 200: { ...API_KEY, revokedAt: LATER } } },
  "tokens.create": {
    request: { label: "ppo run 7" },
    responses: {
      201: {
        ...GRADE_TOKEN,
        token: TOKEN,
        urls: {
          openrlhf: `https://gradebox.example.com/rm/${TOKEN}`,
          gymHost: `${TOKEN}.gym.gradebox.example.com`,
          gymPath: `https://gradebox.example.com/gym/${TOKEN}`,
          adaptive: `https://gradebox.example.com/v1/reward/${TOKEN}`,
          sandboxFusion: `https://gradebox.example.com/sf/${TOKEN}/run_code`,
        },
      },
    },
  },
  "tokens.list": { responses: { 200: { data: [GRADE_TOKEN] } } },
  "tokens.revoke": { responses: { 200: { ...GRADE_TOKEN, revokedAt: LATER } } },
  "reward.score": {
    request: REWARD_REQUEST,
    responses: { 200: { reward: 1, metadata: { gradebox: { provenance: PROVENANCE } }, id: "row-17" } },
  },
  "reward.batchScore": {
    request: { requests: [REWARD_REQUEST, { ...REWARD_REQUEST, turns: WRONG.turns, id: "row-18" }] },
    responses: {
      200: {
        responses: [
          { reward: 1, metadata: { gradebox: { provenance: PROVENANCE } }, id: "row-17" },
          { reward: 0, metadata: { gradebox: { provenance: PROVENANCE } }, id: "row-18" },
        ],
      },
    },
  },
  "reward.info": { responses: { 200: { version: "2", name: "exact-answer", description: FUNCTION.description } } },
  "reward.metadataSchema": { responses: { 200: { type: "object" } } },
  // a WebSocket: its messages are described in the route's description, not as HTTP bodies
  "reward.websocket": { responses: {} },
};
