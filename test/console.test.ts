// The web console end to end in real headless Chromium (Debian's chromium, driven by
// playwright-core) against the real server on a real port.

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { type Browser, chromium, type Page } from "playwright-core";
import { AdaptiveLike } from "./support/adaptive-like.ts";
import { FakeOpenAI } from "./support/fake-openai.ts";
import { call, freePort, repoRoot, startServer, type TestServer } from "./support/helpers.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const shots = process.env.GRADEBOX_SCREENSHOTS; // set to a folder to refresh docs/console.md's screenshots
let s: TestServer;
let browser: Browser;
let page: Page;
let key: string;
let fake: FakeOpenAI;
let reward: ChildProcess | undefined;
let rewardUrl: string;

before(async () => {
  fake = await new FakeOpenAI().start();
  // the example reward server, on a free port it prints
  reward = spawn(process.execPath, ["--import", "tsx", "examples/reward-server/server.ts"], {
    cwd: repoRoot,
    env: { ...process.env, PORT: "0" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  rewardUrl = await new Promise<string>((resolve, reject) => {
    let out = "";
    reward?.stdout?.on("data", (d) => {
      out += d;
      const m = /reward server on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    reward?.once("exit", (code) => reject(new Error(`the reward server exited (${code}): ${out}`)));
  });
  // the judge model is the fake on loopback, which the server refuses unless allowed
  s = await startServer({ listen: true, env: { GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32" } });
  key = await s.keyFor("web");
  await call(s.app, "POST", "/v1/projects/web/graders", {
    key: "exact",
    description: "Strict equality",
    source:
      "async function grade(thread: StringThread): Promise<number> {\n  if (thread.metadata.boom) throw new Error('boom');\n  return thread.completion() === thread.metadata.expected ? 1.0 : 0.0;\n}",
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  if (shots) mkdirSync(shots, { recursive: true });
});
after(async () => {
  await browser?.close();
  await s.close();
  await fake.close();
  reward?.kill("SIGTERM");
});

const shot = async (name: string) => {
  if (shots) await page.screenshot({ path: `${shots}/${name}.png` });
};

test("connect with an API key, list graders, open one with highlighted source", async () => {
  await page.goto(s.url);
  await page.fill("#api-key", "gbx_wrong");
  await page.click("#connect button");
  await page.waitForSelector("#status:has-text('not valid')");
  await page.fill("#api-key", key);
  await page.click("#connect button");
  await page.waitForSelector("#who:has-text('project web')");
  await page.click("#graders tr[data-key='exact']");
  await page.waitForSelector("#detail-key:has-text('exact')");
  assert.match((await page.textContent("#detail-meta")) ?? "", /Strict equality/);
  assert.ok((await page.locator("#source .hljs-keyword").count()) > 0, "the source is highlighted");
  assert.equal(await page.locator("#source .line").count(), 4);
  assert.equal(await page.getAttribute("#source", "class"), "hljs language-typescript", "the block says what it holds");
  await shot("console-grader");
});

test("create: a failing check is shown on the offending line; a good source is created", async () => {
  await page.click("#new-grader");
  await page.fill("#create-key", "broken");
  await page.fill("#create-source", "async function grade(t) {\n  const x = t.completion(;\n  return 1;\n}");
  await page.click("#create-submit");
  await page.waitForSelector("#create-error:has-text('syntax check failed')");
  assert.equal(await page.locator("#create-error .error-line").getAttribute("data-line"), "2");
  await shot("console-create-error");
  await page.fill("#create-key", "lengthy");
  await page.fill("#create-description", "long answers");
  await page.fill("#create-source", "async (t) => ((t.completion() ?? '').length > 10 ? 1 : 0)");
  await page.click("#create-submit");
  await page.waitForSelector("#graders tr[data-key='lengthy']");
  assert.equal(await s.store.get("web", "broken"), undefined, "the failed one was not saved");
});

test("lock disables delete with the reason beside it; a lock made elsewhere is reported under the row in words; unlock and delete after confirming", async () => {
  await page.click("#graders tr[data-key='lengthy']");
  // data-locked, not the label: Playwright's has-text is a case-insensitive substring, so 'Lock' also matches 'Unlock'
  await page.waitForSelector("#lock[data-locked='false']");
  assert.equal(await page.isEnabled("#delete"), true);
  assert.equal(await page.isVisible("#lock-reason"), false);
  await page.click("#lock");
  await page.waitForSelector("#lock[data-locked='true']");
  assert.equal(await page.isEnabled("#delete"), false, "a locked grader cannot be deleted: the button says so by being disabled");
  assert.equal(await page.getAttribute("#delete", "title"), "Locked: unlock it to delete");
  assert.equal(await page.textContent("#lock-reason"), "Locked: unlock it to delete or edit");
  assert.equal(await page.isVisible("#lock-reason"), true);
  assert.equal(await page.isEnabled("#edit"), false);

  // locked behind the console's back: Delete still looks enabled, the refusal is shown under the grader's row, in words
  await page.click("#lock");
  await page.waitForSelector("#lock[data-locked='false']");
  assert.equal((await call(s.app, "PUT", "/v1/projects/web/graders/lengthy/lock", { locked: true })).status, 200);
  page.once("dialog", (d) => void d.accept());
  await page.click("#delete");
  const error = page.locator("#graders tr[data-key='lengthy'] + tr.row-error");
  await error.waitFor();
  assert.equal(await error.textContent(), "Locked: unlock it to delete");
  assert.doesNotMatch((await page.textContent("main")) ?? "", /\bPUT\b|\/lock\b|GRADER_LOCKED/, "no HTTP hint anywhere");
  assert.equal(await page.textContent("#status"), "", "a refused delete is not a page-wide error");
  await page.waitForSelector("#lock[data-locked='true']");
  assert.equal(await page.isEnabled("#delete"), false, "the console now knows it is locked");
  assert.ok(await s.store.get("web", "lengthy"));

  await page.click("#lock");
  await page.waitForSelector("#lock[data-locked='false']");
  page.once("dialog", (d) => void d.dismiss());
  await page.click("#delete");
  assert.ok(await s.store.get("web", "lengthy"), "dismissing the confirmation deletes nothing");
  page.once("dialog", (d) => void d.accept());
  await page.click("#delete");
  await page.waitForSelector("#status:has-text('deleted lengthy')");
  assert.equal(await page.locator("#graders tr[data-key='lengthy']").count(), 0);
  assert.equal(await s.store.get("web", "lengthy"), undefined);
});

test("the test-payload panel grades pasted threads with a stored grader and with unsaved source", async () => {
  await page.click("#graders tr[data-key='exact']");
  const t = (content: string, metadata: Record<string, unknown>) => JSON.stringify({ turns: [{ role: "assistant", content }], metadata });
  await page.fill("#threads", [t("4", { expected: "4" }), t("5", { expected: "4" }), t("4", { boom: true })].join("\n"));
  await page.click("#run-test");
  await page.waitForSelector("#results tbody tr:nth-child(3)");
  const rows = await page.locator("#results tbody tr").allTextContents();
  assert.match(rows[0], /^11/);
  assert.match(rows[1], /^20/);
  assert.match(rows[2], /^3GRADER_ERROR: Error: boom/);
  await shot("console-test-payload");

  // an uploaded file fills the panel
  await page.setInputFiles("#threads-file", {
    name: "threads.jsonl",
    mimeType: "application/json",
    buffer: Buffer.from(`${t("4", { expected: "4" })}\n`),
  });
  await page.waitForFunction(() => (document.querySelector("#threads") as HTMLTextAreaElement).value.includes('"expected":"4"'));
  await page.click("#run-test");
  await page.waitForFunction(() => document.querySelectorAll("#results tbody tr").length === 1);
  assert.deepEqual(await page.locator("#results tbody tr td").allTextContents(), ["1", "1", ""]);

  await page.click("#new-grader");
  await page.fill("#create-source", "async (t) => ({ score: 0.5, reason: 'half for ' + t.completion() })");
  await page.check("input[name='target'][value='source']");
  await page.fill("#threads", JSON.stringify([{ turns: [{ role: "assistant", content: "x" }] }]));
  await page.click("#run-test");
  await page.waitForSelector("#results tbody tr:has-text('half for x')");
  assert.deepEqual(await page.locator("#results tbody tr td").allTextContents(), ["1", "0.5", "half for x"]);
});

test("the key is kept in session storage: a reload reconnects", async () => {
  await page.reload();
  await page.waitForSelector("#who:has-text('project web')");
  assert.equal(await page.evaluate(() => sessionStorage.getItem("gradebox.apiKey")), key);
  assert.equal(await page.evaluate(() => localStorage.length), 0, "never in local storage");
});

test("versions: list, diff two versions, restore an old one, edit as a new version, and grade with a pinned version", async () => {
  const put = (source: string) => call(s.app, "PUT", "/v1/projects/web/graders/evolving", { source });
  assert.equal((await call(s.app, "POST", "/v1/projects/web/graders", { key: "evolving", source: "async (t) => 0.1" })).status, 201);
  assert.equal((await put("async (t) => 0.2")).status, 200);
  assert.equal((await put("async (t) => 0.3")).status, 200);
  await page.reload();
  await page.waitForSelector("#graders tr[data-key='evolving']");
  await page.click("#graders tr[data-key='evolving']");
  await page.waitForSelector("#versions tbody tr:nth-child(3)");
  assert.match((await page.textContent("#versions tbody tr:nth-child(3)")) ?? "", /^3 \(current\)/);

  await page.selectOption("#diff-from", "1");
  await page.selectOption("#diff-to", "3");
  await page.click("#diff-run");
  await page.waitForSelector("#diff:has-text('+async (t) => 0.3')");
  assert.match((await page.textContent("#diff")) ?? "", /-async \(t\) => 0\.1/);

  await page.click("#versions tbody tr[data-version='1'] button");
  await page.waitForSelector("#status:has-text('restored version 1 of evolving as version 4')");
  assert.equal((await s.store.mustGet("web", "evolving")).source, "async (t) => 0.1");

  await page.click("#edit");
  await page.waitForSelector("#update-submit:visible");
  assert.equal(await page.inputValue("#create-source"), "async (t) => 0.1");
  await page.fill("#create-source", "async (t) => 0.5");
  await page.click("#update-submit");
  await page.waitForSelector("#status:has-text('saved version 5 of evolving')");
  assert.equal((await s.store.mustGet("web", "evolving")).version, 5);

  await page.check("input[name='target'][value='stored']");
  await page.fill("#threads", JSON.stringify({ turns: [{ role: "assistant", content: "x" }] }));
  await page.fill("#test-version", "2");
  await page.click("#run-test");
  await page.waitForFunction(() => document.querySelector("#results tbody td:nth-child(2)")?.textContent === "0.2");
  await page.fill("#test-version", "");
  await page.click("#run-test");
  await page.waitForFunction(() => document.querySelector("#results tbody td:nth-child(2)")?.textContent === "0.5");
  await shot("console-versions");
});

test("samples uploaded with a new grader drive its test_run; a wrong expectation is shown and nothing is created", async () => {
  const sampleLine = (expected: number) =>
    JSON.stringify({ thread: { turns: [{ role: "assistant", content: "4" }], metadata: { expected: "4" } }, expected });
  await page.click("#new-grader");
  await page.fill("#create-key", "sampled");
  await page.fill("#create-source", "async (t) => (t.completion() === t.metadata.expected.trim() ? 1 : 0)");
  await page.setInputFiles("#create-samples", {
    name: "samples.jsonl",
    mimeType: "application/json",
    buffer: Buffer.from(`${sampleLine(0)}\n`),
  });
  await page.click("#create-submit");
  await page.waitForSelector("#create-error:has-text('sample 0 should score 0 but scored 1')");
  assert.equal(await s.store.get("web", "sampled"), undefined);
  await page.setInputFiles("#create-samples", {
    name: "samples.jsonl",
    mimeType: "application/json",
    buffer: Buffer.from(`${sampleLine(1)}\n`),
  });
  await page.click("#create-submit");
  await page.waitForSelector("#graders tr[data-key='sampled']");
  assert.equal((await s.store.samples(await s.store.mustGet("web", "sampled"))).length, 1);
});

test("a grader error in the test panel: its row says line and column, the row under it shows the source line with a caret", async () => {
  const source =
    "async function grade(thread: StringThread): Promise<number> {\n" +
    "  const words = (thread.metadata.words ?? []) as string[];\n" +
    '  return words.filter((w) => (thread.completion() ?? "").includes(w)).length;\n' +
    "}";
  assert.equal((await call(s.app, "POST", "/v1/projects/web/graders", { key: "wordy", source })).status, 201);
  await page.reload();
  await page.click("#graders tr[data-key='wordy']");
  await page.waitForSelector("#detail-key:has-text('wordy')");
  await page.check("input[name='target'][value='stored']");
  await page.fill("#test-version", "");
  const t = (metadata: Record<string, unknown>) => JSON.stringify({ turns: [{ role: "assistant", content: "a b" }], metadata });
  await page.fill("#threads", [t({ words: ["a"] }), t({ words: 3 }), t({})].join("\n"));
  await page.click("#run-test");
  await page.waitForSelector("#results tbody tr.error-source");
  const rows = await page.locator("#results tbody tr").allTextContents();
  assert.equal(rows.length, 4, "three threads and one source row");
  assert.match(rows[0], /^11/);
  assert.equal(rows[1], "2GRADER_ERROR: TypeError: words.filter is not a function (line 3, column 16)");
  assert.equal(await page.getAttribute("#results tbody tr:nth-child(3)", "class"), "error-source");
  assert.equal(
    await page.textContent("#results tbody tr.error-source pre"),
    '3 |   return words.filter((w) => (thread.completion() ?? "").includes(w)).length;\n  |                ^',
  );
  assert.match(rows[3], /^30/);
  await shot("console-test-error-line");

  // the unsaved source: the arrow's line is the one the analyser prefixes, its columns are still the user's
  await page.click("#new-grader");
  await page.fill("#create-source", "// draft\n\nasync (t) => (t.metadata.words ? t.metadata.words.filter(Boolean).length : 0)");
  await page.check("input[name='target'][value='source']");
  await page.fill("#threads", t({ words: 3 }));
  await page.click("#run-test");
  await page.waitForSelector("#results tbody tr.error-source");
  assert.match(
    (await page.locator("#results tbody tr").first().textContent()) ?? "",
    /GRADER_ERROR: TypeError: t\.metadata\.words\.filter is not a function \(line 3, column 51\)$/,
  );
  assert.equal(
    await page.textContent("#results tbody tr.error-source pre"),
    `3 | async (t) => (t.metadata.words ? t.metadata.words.filter(Boolean).length : 0)\n  | ${" ".repeat(50)}^`,
  );
});

test("judges: register a model, refuse a broken template at its line, create a binary judge, grade with it, show its prompt", async () => {
  await page.fill("#model-key", "judge-m");
  await page.fill("#model-base-url", fake.url);
  await page.fill("#model-name", "judge-1");
  await page.fill("#model-concurrency", "2");
  await page.click("#model-form button");
  await page.waitForSelector("#models tr[data-key='judge-m']");
  assert.equal((await s.store.mustGetModel("web", "judge-m")).maxConcurrency, 2);
  assert.equal(await page.locator("#models tr[data-key='judge-m'] .key-source").count(), 0, "no API key");

  await page.click("#new-judge");
  await page.selectOption("#judge-model", "judge-m");
  await page.fill("#judge-key", "polite");
  await page.fill("#judge-criteria", "answers <b>politely</b>");
  await page.fill("#judge-template", "Criteria: {{criteria}}\n{{#if completion}}x{{/each}}");
  await page.click("#judge-submit");
  await page.waitForSelector("#judge-error:has-text('template check failed')");
  assert.match((await page.textContent("#judge-error p")) ?? "", /^template check failed: .*each.* \(line 2, column \d+\)$/);
  assert.equal(await page.locator("#judge-error .error-line").getAttribute("data-line"), "2");
  assert.equal(await s.store.get("web", "polite"), undefined, "nothing was saved");
  await shot("console-judge-template-error");

  await page.fill("#judge-template", "");
  await page.click("#judge-submit");
  await page.waitForSelector("#detail-key:has-text('polite')");
  assert.deepEqual(await page.locator("#judge-def dt").allTextContents(), ["model", "type", "criteria", "template"]);
  assert.deepEqual(await page.locator("#judge-def dd").allTextContents(), [
    "judge-m",
    "binary",
    "answers <b>politely</b>",
    "the built-in one",
  ]);

  fake.fallback = { json: { reasoning: "courteous and on topic", verdict: "PASS" } };
  await page.check("input[name='target'][value='stored']");
  await page.fill("#test-version", "");
  const turns = [
    { role: "user", content: "Is the sky blue?" },
    { role: "assistant", content: "Yes, thank you for asking." },
  ];
  await page.fill("#threads", JSON.stringify({ turns }));
  await page.click("#run-test");
  await page.waitForSelector("#results tbody tr:has-text('courteous and on topic')");
  const [n, score, reason] = await page.locator("#results tbody tr td").allTextContents();
  assert.deepEqual([n, score], ["1", "1"]);
  assert.match(reason, /^PASS courteous and on topic · \d+ tokens$/);
  assert.equal(fake.requests.length, 1);
  assert.match(fake.requests[0].prompt, /answers <b>politely<\/b>/);

  await page.click("#show-prompt");
  await page.waitForSelector("#prompt .message[data-role='user']");
  assert.deepEqual(await page.locator("#prompt .message h4").allTextContents(), ["system", "user"]);
  const user = (await page.textContent("#prompt .message[data-role='user'] pre")) ?? "";
  assert.match(user, /Criteria:\nanswers <b>politely<\/b>\n/, "the criteria, as text");
  assert.match(user, /Response to judge:\nYes, thank you for asking\./);
  assert.equal(await page.locator("#prompt b").count(), 0, "nothing the server said became HTML");
  assert.equal(fake.requests.length, 1, "showing the prompt calls no model");
  await shot("console-judge");

  page.once("dialog", (d) => void d.accept());
  await page.click("#models tr[data-key='judge-m'] button");
  const inUse = page.locator("#models tr[data-key='judge-m'] + tr.row-error");
  await inUse.waitFor();
  assert.match((await inUse.textContent()) ?? "", /^MODEL_IN_USE: .*used by grader "polite"/);
  assert.equal(await page.textContent("#status"), "", "under the model's row, not in the page header");
  assert.ok(await s.store.mustGetModel("web", "judge-m"), "the model in use was kept");
});

test("judges: a rubric from JSON lines with its cannot-assess choice, shown as a table", async () => {
  await page.click("#new-judge");
  await page.selectOption("#judge-kind", "rubric");
  assert.equal(await page.isVisible("#judge-criteria"), false, "only the rubric's fields");
  await page.fill("#judge-key", "rubric");
  await page.fill(
    "#rubric-criteria",
    [
      { name: "tone", requirement: "is polite", weight: 10 },
      { name: "rude", requirement: "insults the user", weight: -5 },
    ]
      .map((c) => JSON.stringify(c))
      .join("\n"),
  );
  await page.selectOption("#rubric-cannot-assess", "partial");
  await page.click("#judge-submit");
  await page.waitForSelector("#detail-key:has-text('rubric')");
  assert.deepEqual(await page.locator("#judge-def table.rubric tbody tr").allTextContents(), ["toneis polite10", "rudeinsults the user-5"]);
  assert.match((await page.textContent("#judge-def")) ?? "", /cannot assesspartial \(credit 0\.5\)/);
  const stored = (await s.store.mustGet("web", "rubric")).judge;
  assert.equal(stored?.type === "rubric" && stored.cannotAssess, "partial");
});

test("code graders: out-of-bounds limits are refused in the form; one is created, listed and its definition shown", async () => {
  await page.click("#new-code");
  await page.fill("#code-key", "unit-tests");
  await page.check("#code-javascript");
  await page.fill("#code-cpu-ms", "60000");
  await page.click("#code-submit");
  await page.waitForSelector("#code-error:has-text('cpuMs')");
  assert.equal(await s.store.get("web", "unit-tests"), undefined);

  await page.fill("#code-cpu-ms", "700");
  await page.selectOption("#code-compare", "exact");
  await page.check("#code-all-or-nothing");
  await page.click("#code-submit");
  await page.waitForSelector("#detail-key:has-text('unit-tests')");
  const stored = (await s.store.mustGet("web", "unit-tests")).code;
  assert.deepEqual(
    [stored?.languages, stored?.compare, stored?.scoring, stored?.limits.cpuMs],
    [["python", "javascript"], "exact", "all_or_nothing", 700],
  );
  assert.ok(await page.isHidden("#source-block"));
  const terms = await page.locator("#code-def dt").allTextContents();
  const values = await page.locator("#code-def dd").allTextContents();
  assert.deepEqual(Object.fromEntries(terms.map((t, i) => [t, values[i]])), {
    languages: "python, javascript",
    program: "fenced_or_whole",
    tests: "auto, at most 32 an item",
    "stdout compared": "exact",
    score: "1 when every test passes, else 0",
    "per test": "700 ms CPU, 256 MB, 65536 bytes of output",
  });
  assert.match((await page.textContent("#detail-meta")) ?? "", /^code · version 1/);
});

test("endpoints: a closed port is refused in the form; the example reward server is created, shown, and grades in the test panel", async () => {
  await page.click("#new-endpoint");
  await page.fill("#endpoint-key", "exact-ep");
  await page.fill("#endpoint-url", `http://127.0.0.1:${await freePort()}`);
  await page.click("#endpoint-submit");
  await page.waitForSelector("#endpoint-error:has-text('endpoint check failed')");
  assert.equal(await s.store.get("web", "exact-ep"), undefined);

  await page.fill("#endpoint-url", rewardUrl);
  await page.fill("#endpoint-batch-size", "8");
  await page.click("#endpoint-submit");
  await page.waitForSelector("#detail-key:has-text('exact-ep')");
  assert.equal((await s.store.mustGet("web", "exact-ep")).endpoint?.batchSize, 8);
  const [url, info, batch] = await page.locator("#endpoint-def dd").allTextContents();
  assert.deepEqual(
    [url, info, batch],
    [rewardUrl, "exact-match 1.0.0 — 1 when the last turn equals metadata.expected", "8 threads per /batch_score call"],
  );
  assert.deepEqual(JSON.parse((await page.textContent("#endpoint-def dd pre")) ?? ""), {
    type: "object",
    properties: { expected: { type: "string" } },
    required: ["expected"],
  });

  await page.check("input[name='target'][value='stored']");
  await page.fill("#test-version", "");
  const t = (content: string) => JSON.stringify({ turns: [{ role: "assistant", content }], metadata: { expected: "4" } });
  await page.fill("#threads", [t("4"), t("5")].join("\n"));
  await page.click("#run-test");
  await page.waitForFunction(() => document.querySelectorAll("#results tbody tr").length === 2);
  assert.deepEqual(
    (await page.locator("#results tbody tr").allTextContents()).map((r) => r.slice(0, 2)),
    ["11", "20"],
  );
  await shot("console-endpoint");
});

test("endpoints: the transport selector registers a WebSocket endpoint, shown as such, that grades over its socket", async () => {
  const adaptive = await new AdaptiveLike().start();
  try {
    await page.click("#new-endpoint");
    await page.fill("#endpoint-key", "ws-ep");
    await page.fill("#endpoint-url", `${adaptive.url}/good`);
    await page.selectOption("#endpoint-transport", "websocket");
    await page.click("#endpoint-submit");
    await page.waitForSelector("#detail-key:has-text('ws-ep')");
    assert.equal((await s.store.mustGet("web", "ws-ep")).endpoint?.transport, "websocket");
    const rows = Object.fromEntries(
      (await page.locator("#endpoint-def dt").allTextContents()).map((t, i, all) => [t, i < all.length ? i : -1]),
    );
    const values = await page.locator("#endpoint-def dd").allTextContents();
    assert.equal(values[rows.transport], `WebSocket at ${adaptive.url}/good/ws, a score message per thread`);

    await page.check("input[name='target'][value='stored']");
    await page.fill("#test-version", "");
    const t = (content: string) => JSON.stringify({ turns: [{ role: "assistant", content }] });
    await page.fill("#threads", [t("four"), t("seventeen")].join("\n"));
    await page.click("#run-test");
    await page.waitForFunction(() => document.querySelectorAll("#results tbody tr").length === 2);
    // the reward server answers the last turn's length / 100, over its socket and never over HTTP
    assert.deepEqual(
      adaptive.messages.map((m) => m.request.turns.at(-1)?.content),
      ["four", "seventeen"],
    );
    assert.equal(adaptive.httpScoreCalls, 0);
    assert.match((await page.locator("#results tbody tr").allTextContents()).join(" "), /0\.04[\s\S]*0\.09/);
  } finally {
    await adaptive.close();
  }
});

// A function grader that explains its score: a reason, and one weighted subscore per check.
const SCORED = `async function grade(thread: StringThread): Promise<GradeScore> {
  const expected = thread.metadata.expected;
  if (typeof expected !== "string") throw new TypeError(\`metadata.expected must be a string, got \${typeof expected}\`);
  const answer = (thread.completion() ?? "").trim();
  const exact = answer === expected ? 1 : 0;
  const brief = answer.length <= 12 ? 1 : 0.5;
  return {
    score: 0.7 * exact + 0.3 * brief,
    reason: exact ? "the expected answer" : \`not "\${expected}"\`,
    subscores: [
      { name: "exact", value: exact, weight: 0.7, metadata: { reason: \`compared with metadata.expected "\${expected}"\` } },
      { name: "brief", value: brief, weight: 0.3, metadata: { reason: \`length \${answer.length}\` } },
    ],
  };
}`;
const said = (content: string, metadata: Record<string, unknown> = { expected: "4" }) =>
  JSON.stringify({
    turns: [
      { role: "user", content: "What is 2 + 2?" },
      { role: "assistant", content },
    ],
    metadata,
  });

/** Each subscore of the n-th result (1-based) as its cells: name, score, weight, reason. */
const subscores = (n: number) =>
  page.evaluate(
    (n) =>
      [...document.querySelectorAll(`#results > tbody > tr:nth-child(${n}) table.subscores > tbody > tr`)].map((tr) =>
        [...tr.children].map((td) => td.textContent),
      ),
    n,
  );

/** Runs the test panel on the selected (stored, current) grader and waits for `rows` result rows. */
async function runStored(threads: string[], rows: number): Promise<void> {
  await page.check("input[name='target'][value='stored']");
  await page.fill("#test-version", "");
  await page.fill("#threads", threads.join("\n"));
  await page.click("#run-test");
  await page.waitForFunction(
    (rows) =>
      document.querySelectorAll("#results > tbody > tr").length === rows &&
      !!document.querySelector("#status")?.textContent?.startsWith("graded"),
    rows,
  );
}

test("the test panel shows each result's score, reason and subscores (name, score, weight, reason) for function, combined and judge graders", async () => {
  // samples of its own: the built-in one has no metadata.expected, on which it throws
  const samples = [{ thread: JSON.parse(said("4")), expected: 1 }];
  assert.equal(
    (
      await call(s.app, "POST", "/v1/projects/web/graders", {
        key: "scored",
        description: "the expected answer, briefly",
        source: SCORED,
        samples,
      })
    ).status,
    201,
  );
  const blend = {
    key: "blend",
    description: "scored, with exact as a check",
    mode: "weighted",
    graders: [
      { graderKey: "scored", weight: 3 },
      { graderKey: "exact", weight: 1 },
    ],
  };
  assert.equal((await call(s.app, "POST", "/v1/projects/web/graders/combined", blend)).status, 201);
  await page.reload();

  // a function grader
  await page.click("#graders tr[data-key='scored']");
  await page.waitForSelector("#detail-key:has-text('scored')");
  await runStored([said("4"), said("The answer is four, I believe.")], 2);
  assert.deepEqual((await page.locator("#results > tbody > tr:nth-child(1) > td").allTextContents()).slice(0, 2), ["1", "1"]);
  assert.match((await page.textContent("#results > tbody > tr:nth-child(1) > td:nth-child(3)")) ?? "", /^the expected answer/);
  assert.deepEqual(await subscores(1), [
    ["exact", "1", "0.7", 'compared with metadata.expected "4"'],
    ["brief", "1", "0.3", "length 1"],
  ]);
  assert.equal(await page.textContent("#results > tbody > tr:nth-child(2) > td:nth-child(2)"), "0.15");
  assert.deepEqual(await subscores(2), [
    ["exact", "0", "0.7", 'compared with metadata.expected "4"'],
    ["brief", "0.5", "0.3", "length 30"],
  ]);

  // a combined grader: one subscore per part, its weight normalized, the part's reason
  await page.click("#graders tr[data-key='blend']");
  await page.waitForSelector("#detail-key:has-text('blend')");
  await runStored([said("The answer is four, I believe.")], 1);
  assert.equal(await page.textContent("#results > tbody > tr > td:nth-child(2)"), "0.112", "rounded to 3 decimals, in full in its title");
  assert.equal(await page.getAttribute("#results > tbody > tr > td:nth-child(2)", "title"), "0.11249999999999999");
  assert.deepEqual(await subscores(1), [
    ["scored", "0.15", "0.75", 'not "4"'],
    ["exact", "0", "0.25", ""],
  ]);

  // a judge: a rubric's criteria, each with its verdict and the judge's reason
  fake.fallback = {
    json: {
      criteria: [
        { name: "tone", reason: "polite throughout", verdict: "MET" },
        { name: "rude", reason: "no insults", verdict: "UNMET" },
      ],
    },
  };
  await page.click("#graders tr[data-key='rubric']");
  await page.waitForSelector("#detail-key:has-text('rubric')");
  await runStored([said("4")], 1);
  assert.match((await page.textContent("#results > tbody > tr > td:nth-child(3)")) ?? "", /^1 of 2 criteria met · \d+ tokens/);
  assert.deepEqual(await subscores(1), [
    ["tone", "1", "10", "MET polite throughout"],
    ["rude", "0", "-5", "UNMET no insults"],
  ]);
  assert.equal(await page.locator("#results table.subscores .verdict.met").count(), 1);
});

test("errors show where they happened: under Run, under the editor's line, under a grader's row; the page header only for the page", async () => {
  const status = async () => (await page.textContent("#status")) ?? "";
  await page.click("#graders tr[data-key='scored']");
  await page.waitForSelector("#detail-key:has-text('scored')");
  await runStored([said("4")], 1);
  assert.match(await status(), /^graded 1 thread/);

  // a line that is not JSON: marked in its row, the other lines graded (the run goes on)
  await page.fill("#threads", `${said("4")}\n{"turns": [`);
  await page.click("#run-test");
  await page.waitForSelector("#results > tbody > tr.bad-line:has-text('BAD_LINE: not JSON')");
  assert.equal(await page.locator("#results > tbody > tr").count(), 2);
  assert.match((await page.textContent("#results > tbody > tr:nth-child(1)")) ?? "", /^11/);
  assert.equal(await page.isVisible("#test-error"), false);
  assert.match(await status(), /^graded 1 thread; 1 line is not a thread \(marked\)$/);

  // a grader deleted behind the console's back: in the test panel
  assert.equal((await call(s.app, "POST", "/v1/projects/web/graders", { key: "gone", source: "async (t) => 1" })).status, 201);
  await page.reload();
  await page.click("#graders tr[data-key='gone']");
  await page.waitForSelector("#detail-key:has-text('gone')");
  assert.equal((await call(s.app, "DELETE", "/v1/projects/web/graders/gone")).status, 204);
  await page.fill("#threads", said("4"));
  await page.click("#run-test");
  await page.waitForSelector("#test-error:has-text('GRADER_NOT_FOUND')");
  assert.equal(await status(), "");

  // a failed save: under the editor, the message under the line it is about
  await page.click("#graders tr[data-key='scored']");
  await page.waitForSelector("#detail-key:has-text('scored')");
  await page.click("#edit");
  await page.waitForSelector("#update-submit:visible");
  await page.fill("#create-source", "async function grade(t) {\n  return t.completion(;\n}");
  await page.click("#update-submit");
  await page.waitForSelector("#create-error .error-note");
  assert.equal(await status(), "");
  assert.deepEqual(
    await page.evaluate(() => {
      const line = document.querySelector("#create-error .error-line");
      return [line?.getAttribute("data-line"), line?.nextElementSibling?.className];
    }),
    ["2", "error-note"],
  );
  assert.match((await page.textContent("#create-error .error-note")) ?? "", /^\s*\^\s*syntax check failed: /);
  assert.equal((await s.store.mustGet("web", "scored")).version, 1, "nothing was saved");

  // a refused delete: under that grader's row
  await page.click("#graders tr[data-key='scored']");
  await page.waitForSelector("#detail-key:has-text('scored')");
  page.once("dialog", (d) => void d.accept());
  await page.click("#delete");
  const inUse = page.locator("#graders tr[data-key='scored'] + tr.row-error");
  await inUse.waitFor();
  assert.match((await inUse.textContent()) ?? "", /^GRADER_IN_USE: .*"blend"/);
  assert.equal(await status(), "");

  // the server out of reach is the page's problem: the header says so (and the panel too)
  await page.route("**/grade-batch", (route) => route.abort("connectionrefused"));
  await page.fill("#threads", said("4"));
  await page.click("#run-test");
  await page.waitForSelector("#status:has-text('cannot reach Gradebox')");
  await page.waitForSelector("#test-error:has-text('cannot reach Gradebox')");
  await page.unroute("**/grade-batch");
});

/**
 * Whether anything sticks out sideways: the document's scroll width, every visible element whose
 * visible part (clipped by its scrolling or clipping ancestors) leaves the window, and every panel
 * that scrolls sideways as a whole (only code blocks may).
 */
const overflow = () =>
  page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const outside: string[] = [];
    for (const e of document.body.querySelectorAll("*")) {
      if (!e.checkVisibility()) continue;
      const box = e.getBoundingClientRect();
      if (box.width === 0 && box.height === 0) continue;
      let [left, right] = [box.left, box.right];
      for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
        if (getComputedStyle(a).overflowX === "visible") continue;
        const clip = a.getBoundingClientRect();
        [left, right] = [Math.max(left, clip.left), Math.min(right, clip.right)];
      }
      if (right > left && (left < -0.5 || right > width + 0.5))
        outside.push(
          `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ""}${e.className ? `.${String(e.className).replace(/ /g, ".")}` : ""} [${Math.round(left)}, ${Math.round(right)}]`,
        );
    }
    const sideways = [...document.querySelectorAll("main > section")]
      .filter((p) => p.checkVisibility() && p.scrollWidth > p.clientWidth + 1)
      .map((p) => `${p.id} ${p.scrollWidth} > ${p.clientWidth}`);
    return { scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, outside: outside.slice(0, 20), sideways };
  });

async function fits(width: number, what: string): Promise<void> {
  const o = await overflow();
  assert.ok(o.scrollWidth <= o.innerWidth, `${width} px, ${what}: the page is ${o.scrollWidth} px wide`);
  assert.deepEqual(o.outside, [], `${width} px, ${what}: elements outside the window`);
  assert.deepEqual(o.sideways, [], `${width} px, ${what}: panels that scroll sideways`);
}

test("the layout fits 420 px and 1440 px (list, an open grader, the test panel with results, the editor, a judge's prompt); screenshots of both", async () => {
  const update = process.env.GRADEBOX_UPDATE_SCREENSHOTS === "1";
  try {
    for (const width of [420, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      await page.reload();
      await page.waitForSelector("#graders tr[data-key='scored']");
      await page.click("#graders tr[data-key='scored']");
      await page.waitForSelector("#detail-key:has-text('scored')");
      assert.equal(await page.isVisible("#source"), true);
      await runStored([said("4"), said("The answer is four, I believe."), said("4", {})], 4);
      await fits(width, "a grader and its test results");
      assert.equal(await page.locator("#results tr.error-source").count(), 1, "a thrown error's row with its source line");
      assert.equal(await page.locator("#results table.subscores").count(), 2);
      // docs/console.md's screenshot: taken every run (it fails if the page cannot render), written when missing or asked for
      const png = await page.screenshot({ fullPage: true });
      assert.ok(png.length > 10_000, "a screenshot of something");
      const file = new URL(`../docs/console-${width}.png`, import.meta.url);
      if (update || !existsSync(file)) writeFileSync(file, png);

      await page.click("#edit");
      await page.waitForSelector("#update-submit:visible");
      await page.fill(
        "#create-source",
        `${SCORED.split("\n").slice(0, 4).join("\n")}\n  return { score: exact, reason: "a line long enough to need a scroll bar at any width of the window", subscores: [ };\n}`,
      );
      await page.click("#update-submit");
      await page.waitForSelector("#create-error .error-note");
      await fits(width, "the editor with a refused save");

      await page.click("#graders tr[data-key='polite']");
      await page.waitForSelector("#detail-key:has-text('polite')");
      await page.fill("#threads", said("4"));
      await page.click("#show-prompt");
      await page.waitForSelector("#prompt .message[data-role='user']");
      await fits(width, "a judge and its prompt");
    }
  } finally {
    await page.setViewportSize({ width: 1400, height: 900 });
  }
});

test("secrets: a model's API key and an endpoint's headers say which secret they come from, never its value", async () => {
  const web = "/v1/projects/web";
  assert.equal((await call(s.app, "PUT", `${web}/secrets/judge-key`, { value: "sk-console-value" })).status, 201);
  assert.equal((await call(s.app, "PUT", `${web}/secrets/rm-token`, { value: "tok-console-value" })).status, 201);
  const model = await call(s.app, "POST", `${web}/models`, {
    key: "keyed-m",
    baseURL: fake.url,
    model: "judge-1",
    apiKeySecret: "judge-key",
  });
  assert.equal(model.status, 201, JSON.stringify(model.body));
  const endpoint = await call(s.app, "POST", `${web}/graders/external-endpoint`, {
    key: "keyed-ep",
    url: rewardUrl,
    headersSecret: { "X-Api-Key": "rm-token" },
  });
  assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));

  await page.reload();
  await page.waitForSelector("#models tr[data-key='keyed-m']");
  assert.equal(await page.locator("#models tr[data-key='keyed-m'] td").nth(2).textContent(), `${fake.url}key from secret judge-key`);
  assert.equal(await page.textContent("#models tr[data-key='keyed-m'] .key-source"), "key from secret judge-key");
  await page.click("#graders tr[data-key='keyed-ep']");
  await page.waitForSelector("#detail-key:has-text('keyed-ep')");
  const terms = await page.locator("#endpoint-def dt").allTextContents();
  const values = await page.locator("#endpoint-def dd").allTextContents();
  assert.equal(values[terms.indexOf("headers")], "X-Api-Key from secret rm-token");
  assert.doesNotMatch((await page.textContent("main")) ?? "", /sk-console-value|tok-console-value/);
});

const PYTHON_EXACT = `async def grade(thread):
    completion = thread.completion() or ""
    return 1.0 if completion.strip() == thread.metadata.get("expected", "") else 0.0
`;

test("a Python grader: python in the list and the detail, its source highlighted as Python; an uploaded .py or pasted Python picks the language", async () => {
  // stored as it is once its checks passed (checking Python needs the runtime: the next test)
  await s.store.insert({
    project: "web",
    key: "py-exact",
    description: "in Python",
    source: PYTHON_EXACT,
    language: "python",
    compiled: PYTHON_EXACT,
    sourceSha256: "py",
    warnings: [],
  });
  await page.reload();
  await page.waitForSelector("#graders tr[data-key='py-exact']");
  assert.equal(await page.textContent("#graders tr[data-key='py-exact'] td:nth-child(3)"), "python");
  assert.equal(await page.textContent("#graders tr[data-key='exact'] td:nth-child(3)"), "typescript");
  await page.click("#graders tr[data-key='py-exact']");
  await page.waitForSelector("#detail-key:has-text('py-exact')");
  assert.match((await page.textContent("#detail-meta")) ?? "", /^function · python · version 1/);
  // def is a keyword of Python's grammar, not of TypeScript's: the source was highlighted as Python
  const keywords = await page.locator("#source .hljs-keyword").allTextContents();
  assert.ok(keywords.includes("def") && keywords.includes("async"), `keywords: ${keywords}`);
  assert.equal(await page.locator("#source .line").count(), 4);
  assert.equal(await page.getAttribute("#source", "class"), "hljs language-python", "the block says it holds Python");

  await page.click("#new-grader");
  await page.setInputFiles("#create-file", { name: "grade.py", mimeType: "text/plain", buffer: Buffer.from(PYTHON_EXACT) });
  await page.waitForFunction(() => (document.querySelector("#create-language") as HTMLSelectElement).value === "python");
  assert.equal(await page.inputValue("#create-source"), PYTHON_EXACT);
  await page.setInputFiles("#create-file", { name: "grade.ts", mimeType: "text/plain", buffer: Buffer.from("async (t) => 1") });
  await page.waitForFunction(() => (document.querySelector("#create-language") as HTMLSelectElement).value === "typescript");
  // a paste replacing the whole editor: Python by its first line
  await page.focus("#create-source");
  await page.keyboard.press("ControlOrMeta+A");
  await page.evaluate((text) => {
    const data = new DataTransfer();
    data.setData("text", text);
    document.querySelector("#create-source")?.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true }));
  }, PYTHON_EXACT);
  assert.equal(await page.inputValue("#create-language"), "python");
});

test("a source with a docstring over several lines and blank lines: every line its own row, in order, none of zero height", async () => {
  const source =
    'import re\n\n\nasync def grade(thread):\n    """Digits.\n\n    One when the completion has one.\n    """\n    return 1.0 if re.search(r"\\d", thread.completion() or "") else 0.0\n';
  await s.store.insert({
    project: "web",
    key: "py-docstring",
    description: "",
    source,
    language: "python",
    compiled: source,
    sourceSha256: "py-docstring",
    warnings: [],
  });
  await page.reload();
  await page.click("#graders tr[data-key='py-docstring']");
  await page.waitForSelector("#detail-key:has-text('py-docstring')");
  const rows = await page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>("#source .line")].map((l) => ({
      line: l.dataset.line,
      child: l.parentElement?.id === "source",
      top: l.getBoundingClientRect().top,
      height: l.getBoundingClientRect().height,
      text: l.textContent,
    })),
  );
  assert.deepEqual(
    rows.map((r) => r.line),
    ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"],
  );
  assert.ok(
    rows.every((r) => r.child),
    "no line nested in another's span",
  );
  assert.ok(
    rows.every((r) => r.height > 0),
    `heights: ${rows.map((r) => r.height)}`,
  );
  assert.ok(
    rows.every((r, i) => i === 0 || r.top > rows[i - 1].top),
    "each line below the one before",
  );
  assert.equal(rows[6].text, "    One when the completion has one.");
  assert.ok((await page.locator("#source .line[data-line='7'] .hljs-string").count()) > 0, "still highlighted as the docstring");
});

test("a Python grader created in the form; a Python syntax error is shown on its line", async (t) => {
  const probe = await call(s.app, "POST", "/v1/projects/web/graders/validate", { source: PYTHON_EXACT, language: "python" });
  if (probe.status !== 200) {
    t.skip(`the Python runtime is not on this branch (validating a Python grader answered ${probe.status} ${probe.body?.code})`);
    return;
  }
  await page.click("#new-grader");
  await page.fill("#create-key", "py-broken");
  await page.selectOption("#create-language", "python");
  await page.fill("#create-source", "async def grade(thread):\n    return (1.0\n");
  await page.click("#create-submit");
  await page.waitForSelector("#create-error:has-text('syntax check failed')");
  assert.equal(await page.locator("#create-error .error-line").getAttribute("data-line"), "2");
  assert.ok((await page.locator("#create-error .hljs-keyword").allTextContents()).includes("def"), "highlighted as Python");
  await page.fill("#create-key", "py-made");
  await page.fill("#create-source", PYTHON_EXACT);
  await page.click("#create-submit");
  await page.waitForSelector("#graders tr[data-key='py-made']");
  assert.equal((await s.store.mustGet("web", "py-made")).language, "python");
});

test("at 1,280 and 390 px: the key's hint, a version column, versions with Restore in view, source and a coloured diff not cut, a judge form that says to register a model, a test run past a line that is not JSON", async (t) => {
  // a project of its own: no model registered, one grader with two versions and a line longer than any window
  const project = "wide";
  const long = `  const note = "${"a long string that no window is wide enough for ".repeat(4)}";`;
  const v = (n: number) =>
    `async function grade(thread: StringThread): Promise<number> {\n${long}\n  return thread.completion() === "${n}" ? 1 : 0;\n}\n`;
  assert.equal(
    (await call(s.app, "POST", `/v1/projects/${project}/graders`, { key: "wide", description: "v1", source: v(4) })).status,
    201,
  );
  assert.equal(
    (
      await call(s.app, "PUT", `/v1/projects/${project}/graders/wide`, {
        source: v(5),
        description: "version two, with a description long enough to wrap",
      })
    ).status,
    200,
  );
  const apiKey = await s.keyFor(project);
  const dir = mkdtempSync(join(tmpdir(), "gradebox-console-shots-"));
  t.diagnostic(`screenshots in ${dir}`);
  for (const width of [1280, 390]) {
    // a fresh tab: nothing connected yet
    const tab = await browser.newPage({ viewport: { width, height: 900 } });
    try {
      await tab.goto(s.url);
      const hint = (await tab.textContent("#key-hint")) ?? "";
      assert.ok(await tab.isVisible("#key-hint"), "the hint says where a key comes from");
      assert.match(hint, /data\/default\.key/);
      assert.match(hint, /gradebox keys create --project NAME/);
      await tab.fill("#api-key", apiKey);
      await tab.click("#connect button");
      await tab.waitForSelector(`#who:has-text('project ${project}')`);
      assert.equal(await tab.isVisible("#key-hint"), false, "connected: the hint is gone");

      const headings = (await tab.locator("#graders thead th").allTextContents()).map((h) => h.replace(/\u00ad/g, ""));
      assert.equal(headings[3], "version");
      assert.equal(await tab.textContent("#graders tr[data-key='wide'] td:nth-child(4)"), "2");

      await tab.click("#graders tr[data-key='wide']");
      await tab.waitForSelector("#versions tr[data-version='1'] button");
      await tab.selectOption("#diff-from", "1");
      await tab.click("#diff-run");
      await tab.waitForSelector("#diff .hljs-addition");
      assert.ok((await tab.locator("#diff .hljs-deletion").count()) >= 1, "removed lines are marked");
      assert.ok((await tab.locator("#diff .hljs-addition").count()) >= 1, "added lines are marked");
      const colours = await tab.evaluate(() =>
        [".hljs-addition", ".hljs-deletion"].map((c) => getComputedStyle(document.querySelector(`#diff ${c}`) as Element).backgroundColor),
      );
      for (const c of colours) assert.notEqual(c, "rgba(0, 0, 0, 0)", "each has a background colour");
      assert.notEqual(colours[0], colours[1]);

      // no functions declared inside: the page has no __name (the helper tsx adds to named ones)
      const m = await tab.evaluate(() => {
        const sizes: Record<string, { scroll: number; client: number }> = {};
        for (const [part, sel] of Object.entries({
          page: "html",
          list: "#list-panel",
          detail: "#detail",
          versions: "#versions",
          source: "#source-block",
          diff: "#diff",
        })) {
          const e = document.querySelector(sel) as HTMLElement;
          sizes[part] = { scroll: e.scrollWidth, client: e.clientWidth };
        }
        const restore = (document.querySelector("#versions button") as HTMLElement).getBoundingClientRect();
        return { sizes, restore: { left: restore.left, right: restore.right }, width: document.documentElement.clientWidth };
      });
      for (const part of ["page", "list", "detail", "versions", "source", "diff"] as const) {
        const size = m.sizes[part];
        assert.ok(
          size.scroll <= size.client,
          `${width} px: ${part} is ${size.scroll} px wide in ${size.client} px: cut or scrolling sideways`,
        );
      }
      assert.ok(
        m.restore.left >= 0 && m.restore.right <= m.width,
        `${width} px: Restore at [${m.restore.left}, ${m.restore.right}] in ${m.width} px`,
      );
      assert.equal(await tab.locator("#source .line").count(), 5, "the long line wraps, one numbered line still");
      await tab.screenshot({ path: join(dir, `grader-${width}.png`), fullPage: true });

      // one line that is not JSON is marked; the lines around it are graded, each format named
      const said = (c: string) => ({ role: "assistant", content: c });
      await tab.fill(
        "#threads",
        [
          JSON.stringify({ messages: [{ role: "user", content: "?" }, said("5")], source: "chat" }),
          "{not json",
          JSON.stringify({ prompt: "?", completion: "4" }),
        ].join("\n"),
      );
      await tab.click("#run-test");
      await tab.waitForSelector("#results tbody tr.bad-line");
      const rows = await tab.locator("#results > tbody > tr").allTextContents();
      assert.equal(rows.length, 3);
      assert.match(rows[0], /^11$/);
      assert.match(rows[1], /^2BAD_LINE: not JSON/);
      assert.match(rows[2], /^30$/);
      assert.equal(await tab.textContent("#threads-format"), "reading OpenAI chat lines; line 3: reading TRL standard lines too");
      assert.match((await tab.textContent("#status")) ?? "", /graded 2 threads; 1 line is not a thread \(marked\)/);

      // a judge with no model registered: the form says how to register one, not a pattern error
      await tab.click("#new-judge");
      assert.ok(await tab.isVisible("#judge-no-model"));
      await tab.fill("#judge-key", "polite");
      await tab.fill("#judge-criteria", "is polite");
      await tab.click("#judge-submit");
      await tab.waitForSelector("#judge-error:has-text('Register a judge model first')");
      const said2 = (await tab.textContent("#judge-error")) ?? "";
      assert.match(said2, /Judge models .*`gradebox models create`/);
      assert.doesNotMatch(said2, /must match|regex|pattern/i);
      const page2 = await tab.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
      assert.ok(page2[0] <= page2[1], `${width} px, the judge form: the page is ${page2[0]} px wide`);
      await tab.screenshot({ path: join(dir, `judge-${width}.png`), fullPage: true });
    } finally {
      await tab.close();
    }
  }
});
