// The SDK against the real server on a real port.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import {
  APIConnectionError,
  APITimeoutError,
  ConflictError,
  errorFromResponse,
  functionSource,
  Gradebox,
  GraderAbstainedError,
  GraderRuntimeError,
  GraderValidationError,
  type GradeScore,
  NotFoundError,
  StringThread,
} from "../sdk/index.ts";
import { startServer, type TestServer } from "./support/helpers.ts";

let s: TestServer;
let client: Gradebox;
before(async () => {
  s = await startServer({ listen: true, env: { GRADEBOX_TIMEOUT_MS: "300" } });
  client = new Gradebox({ baseURL: s.url, project: "sdk", apiKey: await s.keyFor("sdk") });
});
after(() => s.close());

const examples = new URL("../examples/", import.meta.url).pathname;

describe("graders resource", () => {
  test("the quickstart flow with a function object", async () => {
    async function myGrader(thread: StringThread): Promise<number> {
      const completion = thread.completion() ?? "";
      const expected = thread.metadata.expected ?? "";
      return completion.trim() === String(expected).trim() ? 1.0 : 0.0;
    }
    const created = await client.graders.create.function({ key: "exact-match", fn: myGrader, description: "Strict equality" });
    assert.equal(created.key, "exact-match");
    assert.equal(created.description, "Strict equality");

    const thread = new StringThread(
      [
        ["user", "2+2?"],
        ["assistant", "4"],
      ],
      { expected: "4" },
    );
    assert.equal((await client.graders.grade({ graderKey: "exact-match", thread })).score, 1);
    const batch = await client.graders.gradeBatch({
      graderKey: "exact-match",
      threads: [thread, { turns: [{ role: "assistant", content: "5" }], metadata: { expected: "4" } }],
    });
    assert.deepEqual(batch.results, [
      { outcome: "scored", score: 1 },
      { outcome: "scored", score: 0 },
    ]);

    const all = await client.graders.list();
    assert.deepEqual(
      all.map((g) => g.key),
      ["exact-match"],
    );
    assert.equal((await client.graders.get({ graderKey: "exact-match" })).source, created.source);

    await client.graders.lock({ graderKey: "exact-match", locked: true });
    await assert.rejects(client.graders.delete({ graderKey: "exact-match" }), (e: unknown) => {
      assert.ok(e instanceof ConflictError);
      assert.equal(e.code, "GRADER_LOCKED");
      assert.equal(e.status, 409);
      assert.ok(e.requestId);
      return true;
    });
    await client.graders.lock({ graderKey: "exact-match", locked: false });
    await client.graders.delete({ graderKey: "exact-match" });
    await assert.rejects(client.graders.get({ graderKey: "exact-match" }), NotFoundError);
  });

  test("a function whose toString() carries tsx's __name helpers grades as its source would", async () => {
    // this file runs under tsx: fn.toString() is tsx's output, with __name(...) around named inner functions
    const grade = async (thread: StringThread): Promise<number> => {
      const normalize = (s: string) => s.trim().toLowerCase();
      function words(s: string) {
        return normalize(s).split(/\s+/);
      }
      return words(thread.completion() ?? "").includes("paris") ? 1 : 0;
    };
    const text = functionSource(grade);
    assert.match(text, /__name/, "the loader did inject __name (otherwise this test proves nothing)");
    await client.graders.create.function({ key: "tsx-fn", fn: grade });
    const t = (c: string) => new StringThread([["assistant", c]]);
    const { results } = await client.graders.gradeBatch({ graderKey: "tsx-fn", threads: [t(" It is PARIS "), t("London")] });
    assert.deepEqual(results, [
      { outcome: "scored", score: 1 },
      { outcome: "scored", score: 0 },
    ]);
    assert.deepEqual(results, [
      { outcome: "scored", score: await grade(t(" It is PARIS ")) },
      { outcome: "scored", score: await grade(t("London")) },
    ]);
  });

  test("fn may return {score, reason}: the SDK's function type takes it and the grade carries the reason", async () => {
    const fn = async (thread: StringThread): Promise<number | GradeScore> =>
      thread.completion() === "4" ? { score: 1, reason: "the answer is 4" } : 0;
    await client.graders.create.function({ key: "with-reason", fn });
    const graded = await client.graders.grade({ graderKey: "with-reason", thread: new StringThread([["assistant", "4"]]) });
    assert.deepEqual([graded.score, graded.reason], [1, "the answer is 4"]);
  });

  test("create from a source string and from a file", async () => {
    await client.graders.create.function({ key: "from-source", source: "async (t) => t.getTurns().length" });
    const turns = await client.graders.grade({
      graderKey: "from-source",
      thread: new StringThread([
        ["user", "a"],
        ["assistant", "b"],
      ]),
    });
    assert.equal(turns.score, 2);
    const fromFile = await client.graders.create.function({ key: "from-file", file: `${examples}keywords.ts` });
    assert.deepEqual(fromFile.warnings, []);
    await assert.rejects(
      // @ts-expect-error: exactly one of fn, source or file
      client.graders.create.function({ key: "both", source: "async (t) => 1", file: "x.ts" }),
      /exactly one of fn, source or file/,
    );
  });

  test("validation failures throw GraderValidationError with check, line and column", async () => {
    await assert.rejects(
      client.graders.create.function({ key: "bad", source: "async function grade(t) {\n  return 1 +;\n}" }),
      (e: unknown) => {
        assert.ok(e instanceof GraderValidationError);
        assert.equal(e.check, "syntax");
        assert.equal(e.line, 2);
        assert.equal(e.column, 13);
        assert.equal(e.code, "VALIDATION_FAILED");
        return true;
      },
    );
    function syncGrader(_t: StringThread) {
      return 1;
    }
    // @ts-expect-error: a sync grader is rejected by the server, and by the types
    await assert.rejects(client.graders.create.function({ key: "sync", fn: syncGrader }), (e: unknown) => {
      assert.ok(e instanceof GraderValidationError);
      assert.equal(e.check, "structure");
      return true;
    });
    await assert.rejects(client.graders.get({ graderKey: "sync" }), NotFoundError, "nothing was saved");
  });

  test("validate runs the checks and grades sample threads without saving", async () => {
    const res = await client.graders.validate({
      file: `${examples}json-shape.ts`,
      threads: [new StringThread([["assistant", '{"name":"a","email":"b","age":3}']]), new StringThread([["assistant", "nope"]])],
    });
    assert.deepEqual(res.results, [
      { outcome: "scored", score: 1 },
      { outcome: "scored", score: 0 },
    ]);
  });

  test("a failing grader throws GraderRuntimeError with its code; gradeBatch reports it per item", async () => {
    await client.graders.create.function({ key: "slow", source: "async (t) => { if (t.metadata.loop) for (;;) {} return 1 }" });
    const bad = new StringThread([["assistant", "x"]], { loop: true });
    await assert.rejects(client.graders.grade({ graderKey: "slow", thread: bad }), (e: unknown) => {
      assert.ok(e instanceof GraderRuntimeError);
      assert.equal(e.code, "GRADER_TIMEOUT");
      return true;
    });
    const { results } = await client.graders.gradeBatch({ graderKey: "slow", threads: [bad, new StringThread([["assistant", "y"]])] });
    assert.equal("error" in results[0] && results[0].error.code, "GRADER_TIMEOUT");
    assert.deepEqual(results[1], { outcome: "scored", score: 1 });
  });
});

describe("abstentions", () => {
  test("422 ABSTAINED is a GraderAbstainedError (an UnprocessableEntityError) with the abstention's code and reason", () => {
    const e = errorFromResponse(
      422,
      {
        code: "ABSTAINED",
        detail: "DEADLINE_EXCEEDED: too late",
        abstained: { code: "DEADLINE_EXCEEDED", reason: "too late" },
        version: 2,
      },
      "req-1",
    );
    assert.ok(e instanceof GraderAbstainedError);
    assert.ok(!(e instanceof GraderRuntimeError), "an abstention is not the grader failing");
    assert.deepEqual(
      [e.status, e.code, e.requestId, e.abstained],
      [422, "ABSTAINED", "req-1", { code: "DEADLINE_EXCEEDED", reason: "too late" }],
    );
    assert.equal(e.message, "422 ABSTAINED: DEADLINE_EXCEEDED: too late");
    // a problem document without the field still gives a usable abstention
    assert.deepEqual((errorFromResponse(422, { code: "ABSTAINED", detail: "no" }, undefined) as GraderAbstainedError).abstained, {
      code: "GRADER_ABSTAINED",
      reason: "422 ABSTAINED: no",
    });
  });

  test("a grader that returns null: grade throws GraderAbstainedError, gradeBatch gives the abstention as that thread's result", async (t) => {
    await client.graders.create.function({ key: "maybe", source: "async (t) => (t.metadata.skip ? null : 1)" });
    const skip = new StringThread([["assistant", "x"]], { skip: true });
    const error = await client.graders.grade({ graderKey: "maybe", thread: skip, onUnavailable: "abstain" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    if (error instanceof GraderRuntimeError && error.code === "INVALID_SCORE") {
      return t.skip("this server's sandbox does not abstain yet (null is INVALID_SCORE): it comes with the sandbox's abstentions");
    }
    assert.ok(error instanceof GraderAbstainedError, String(error));
    assert.equal(error.abstained.code, "GRADER_ABSTAINED");
    const { results } = await client.graders.gradeBatch({ graderKey: "maybe", threads: [skip, new StringThread([["assistant", "y"]])] });
    assert.deepEqual(
      results.map((r) => (r.outcome === "abstained" ? r.abstained.code : r.outcome)),
      ["GRADER_ABSTAINED", "scored"],
    );
  });
});

describe("the adaptive reference examples register and grade correctly", () => {
  const cases = [
    [
      "regex-match.ts",
      [
        ["The answer is 42.", { pattern: "\\b42\\b" }, 1],
        ["The answer is 420.", { pattern: "\\b42\\b" }, 0],
      ],
    ],
    [
      "json-shape.ts",
      [
        ['{"name": "Ada", "email": "ada@example.com", "age": 36}', {}, 1],
        ['{"name": "Ada"}', {}, 0],
        ["not json", {}, 0],
        ["[1, 2]", {}, 0],
      ],
    ],
    [
      "keywords.ts",
      [
        ["Paris is the capital of France", { keywords: ["paris", "France", "Europe", "capital"] }, 0.75],
        ["nothing", { keywords: [] }, 0],
        ["EUROPE", { keywords: ["europe"] }, 1],
      ],
    ],
  ] as const;
  for (const [file, rows] of cases) {
    test(file, async () => {
      const key = file.replace(".ts", "");
      await client.graders.create.function({ key, file: `${examples}${file}` });
      const threads = rows.map(
        ([completion, metadata]) =>
          new StringThread(
            [
              ["user", "q"],
              ["assistant", completion],
            ],
            { ...metadata },
          ),
      );
      const { results } = await client.graders.gradeBatch({ graderKey: key, threads });
      assert.deepEqual(
        results,
        rows.map(([, , score]) => ({ outcome: "scored", score })),
      );
    });
  }
});

describe("client behaviour", () => {
  test("apiKey is sent as a bearer token; GRADEBOX_API_KEY is the default", async () => {
    const seen: string[] = [];
    const spy: typeof fetch = async (input, init) => {
      seen.push(new Headers(init?.headers).get("authorization") ?? "");
      return fetch(input, init);
    };
    const fromEnv = await s.keyFor("sdk");
    const explicit = (await s.store.keys.create("sdk")).key;
    process.env.GRADEBOX_API_KEY = fromEnv;
    try {
      await new Gradebox({ baseURL: s.url, project: "sdk", fetch: spy }).graders.list();
      await new Gradebox({ baseURL: s.url, project: "sdk", fetch: spy, apiKey: explicit }).graders.list();
    } finally {
      delete process.env.GRADEBOX_API_KEY;
    }
    assert.deepEqual(seen, [`Bearer ${fromEnv}`, `Bearer ${explicit}`]);
  });

  test("retries safe requests on 503 honouring retry-after, never retries create", async () => {
    let calls = 0;
    const flaky: typeof fetch = async (input, init) => {
      calls++;
      if (calls === 1)
        return new Response('{"code":"SANDBOX_UNAVAILABLE","detail":"busy"}', { status: 503, headers: { "retry-after": "0" } });
      return fetch(input, init);
    };
    const c = new Gradebox({ baseURL: s.url, project: "sdk", fetch: flaky, apiKey: await s.keyFor("sdk") });
    await c.graders.list();
    assert.equal(calls, 2, "one retry after the 503");

    let creates = 0;
    const failing: typeof fetch = async () => {
      creates++;
      return new Response('{"code":"INTERNAL","detail":"x"}', { status: 503 });
    };
    await assert.rejects(
      new Gradebox({ baseURL: s.url, fetch: failing }).graders.create.function({ key: "x", source: "async (t) => 1" }),
      /503 INTERNAL/,
    );
    assert.equal(creates, 1, "create is not repeated");
  });

  test("an unreachable server is an APIConnectionError after the retries", async () => {
    const c = new Gradebox({ baseURL: "http://127.0.0.1:9", maxRetries: 1 });
    await assert.rejects(c.graders.list(), APIConnectionError);
  });
});

describe("the Node transport (node:http, the default in Node)", () => {
  /** A local HTTP server answering with `respond`; resolves to its URL. */
  async function local(respond: Parameters<typeof createServer>[1]): Promise<{ url: string; server: Server }> {
    const server = createServer(respond);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
  }

  test("UTF-8 both ways: what a grader receives and returns survives byte for byte", async () => {
    await client.graders.create.function({
      key: "echo-utf8",
      source: "async (t) => ({ score: t.completion().length, reason: t.completion() })",
    });
    const text = "héllo wörld — 🎉 中文";
    const res = await client.graders.grade({ graderKey: "echo-utf8", thread: { turns: [{ role: "assistant", content: text }] } });
    assert.equal(res.reason, text);
    assert.equal(res.score, text.length);
  });

  test("a batch whose request and response span many socket reads", async () => {
    await client.graders.create.function({ key: "len", source: "async (t) => t.completion().length" });
    const threads = Array.from({ length: 400 }, (_, i) => ({ turns: [{ role: "assistant" as const, content: "x".repeat(i * 10) }] }));
    const { results } = await client.graders.gradeBatch({ graderKey: "len", threads });
    assert.deepEqual(
      results,
      threads.map((_, i) => ({ outcome: "scored", score: i * 10 })),
    );
  });

  test("a request that gets no answer is aborted at the timeout: APITimeoutError, and the server sees the connection close", async () => {
    let closed: () => void = () => {};
    const connectionClosed = new Promise<void>((resolve) => (closed = resolve));
    const { url, server } = await local((req: IncomingMessage) => req.socket.on("close", () => closed()));
    try {
      const started = performance.now();
      await assert.rejects(new Gradebox({ baseURL: url, timeout: 300, maxRetries: 0 }).graders.list(), APITimeoutError);
      assert.ok(performance.now() - started >= 290, "it waited for the timeout");
      await connectionClosed;
    } finally {
      server.close();
    }
  });

  test("retry-after and the request id are read from the response headers", async () => {
    let calls = 0;
    const { url, server } = await local((_req, res) => {
      calls++;
      if (calls === 1) {
        res.writeHead(503, { "content-type": "application/json", "retry-after": "0" }).end('{"code":"SANDBOX_UNAVAILABLE"}');
      } else {
        res.writeHead(404, { "content-type": "application/problem+json", "x-request-id": "req-42" });
        res.end('{"code":"GRADER_NOT_FOUND","detail":"no grader","status":404}');
      }
    });
    try {
      const error = await new Gradebox({ baseURL: url, maxRetries: 2 }).graders.get({ graderKey: "nope" }).catch((e: unknown) => e);
      assert.ok(error instanceof NotFoundError, String(error));
      assert.equal(error.requestId, "req-42");
      assert.equal(calls, 2, "one retry after the 503, none after the 404");
    } finally {
      server.close();
    }
  });
});
