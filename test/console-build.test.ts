// The console's build: written ahead of time into a directory the server only reads; rebuilt at
// start only when missing or older than a file it was made from; never per request.

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import Fastify from "fastify";
import { buildConsole, CONSOLE_DIST, consoleIsFresh, registerConsole } from "../server/console.ts";
import { startServer } from "./support/helpers.ts";

const temp = mkdtempSync(join(tmpdir(), "gradebox-console-"));
after(() => rmSync(temp, { recursive: true, force: true }));
/** A directory of its own for each case: the server keeps what it loaded per directory for its lifetime. */
let n = 0;
const outDir = () => pathToFileURL(join(temp, `out-${++n}/`));
const MARK = "/* the prebuilt file, as written */";

/** What GET `path` serves from a bare app with only the console registered from `out`. */
async function served(out: URL, path = "/console/app.js") {
  const app = Fastify({ logger: false });
  registerConsole(app, out);
  const res = await app.inject({ method: "GET", url: path });
  await app.close();
  return res;
}

test("the build writes the page, the style sheets, the bundle and the list of files it was made from", () => {
  const out = outDir();
  const files = buildConsole(out);
  for (const name of ["index.html", "app.js", "style.css", "hljs.css"]) {
    assert.equal(readFileSync(new URL(name, out), "utf8"), files[name], name);
  }
  assert.match(files["app.js"], /gradebox\.apiKey/, "the bundle holds the console's code");
  const inputs = JSON.parse(readFileSync(new URL("inputs.json", out), "utf8")) as string[];
  for (const path of ["console/app.ts", "console/panels/detail.ts", "console/index.html", "sdk/index.ts", "server/console.ts"]) {
    assert.ok(inputs.includes(path), `${path} is an input`);
  }
  assert.ok(
    inputs.some((p) => p.endsWith("highlight.js/styles/github.css")),
    "the copied node_modules style sheet is an input",
  );
  assert.equal(consoleIsFresh(out), true);
});

test("a fresh build is served as it is on disk: nothing is bundled at start", async () => {
  const out = outDir();
  buildConsole(out);
  writeFileSync(new URL("app.js", out), MARK); // the file, not the list of inputs: still fresh
  assert.equal(consoleIsFresh(out), true);
  const res = await served(out);
  assert.equal(res.statusCode, 200);
  assert.equal(res.body, MARK);
  assert.equal(res.headers["content-type"], "text/javascript; charset=utf-8");
  assert.equal(res.headers["cache-control"], "no-cache");
});

test("a build older than one of its files is rebuilt at start and saved", async () => {
  const out = outDir();
  buildConsole(out);
  writeFileSync(new URL("app.js", out), MARK);
  // as if a source were edited after the build: the build's date goes back instead of a source's forward
  const longAgo = new Date("2001-01-01T00:00:00Z");
  utimesSync(new URL("inputs.json", out), longAgo, longAgo);
  assert.equal(consoleIsFresh(out), false);
  const res = await served(out);
  assert.match(res.body, /gradebox\.apiKey/);
  assert.equal(readFileSync(new URL("app.js", out), "utf8"), res.body, "the rebuild was saved");
  assert.equal(consoleIsFresh(out), true);
});

test("a build that lists a file no longer there is stale; a missing build is built at start", async () => {
  const out = outDir();
  buildConsole(out);
  const inputs = new URL("inputs.json", out);
  writeFileSync(inputs, JSON.stringify(["console/app.ts", "console/gone.ts"]));
  assert.equal(consoleIsFresh(out), false);
  const missing = outDir();
  assert.equal(existsSync(missing), false);
  const res = await served(missing, "/");
  assert.equal(res.statusCode, 200);
  assert.match(res.body, /<script type="module" src="\/console\/app\.js">/);
  assert.equal(consoleIsFresh(missing), true);
});

test("where the build cannot be saved, the server serves what it built", async () => {
  const res = await served(new URL("file:///dev/null/console/"));
  assert.equal(res.statusCode, 200);
  assert.match(res.body, /gradebox\.apiKey/);
});

test("the server serves the console of CONSOLE_DIST", async () => {
  const s = await startServer();
  try {
    assert.equal(consoleIsFresh(CONSOLE_DIST), true, "the server brought it up to date");
    for (const [path, name] of [
      ["/", "index.html"],
      ["/console/app.js", "app.js"],
      ["/console/style.css", "style.css"],
      ["/console/hljs.css", "hljs.css"],
    ]) {
      const res = await s.app.inject({ method: "GET", url: path });
      assert.equal(res.statusCode, 200, path);
      assert.equal(res.body, readFileSync(new URL(name, CONSOLE_DIST), "utf8"), path);
    }
  } finally {
    await s.close();
  }
});
