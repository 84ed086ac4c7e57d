// Every page of the documentation, README.md and docs/*.md, is tested as written. Each fenced
// block of a page is one of:
//   - a ```sh (or ```bash) block: run with `bash -euo pipefail` from the repository root, in the
//     page's order, against one real server started as docs/judges.md says for judges that call
//     a model on this machine (GRADEBOX_EGRESS_ALLOW=127.0.0.1/32). The one substitution: the key
//     comes from this test's server, not data/default.key. A block that fails fails the test.
//   - a block marked by an HTML comment on the line just before its fence:
//       <!-- doctest: verbatim PATH -->     the block is the file PATH (from the repository root),
//                                           byte for byte
//       <!-- doctest: output of COMMAND --> the block is what an earlier ```sh block of the same
//                                           page, exactly COMMAND, printed; `…` stands for any text
//       <!-- doctest: skip: REASON -->      not run: a deployment command, a fragment, a map, an
//                                           output checked elsewhere; the reason is required
// Any other block (```ts, ```python, a bare ``` block, … without a marker) fails the test: run it,
// copy it from a file, or mark it. Every relative link and image of a page resolves to a file or
// folder in the repository (and a `#anchor` to a heading of its page), and no page names a path
// outside the repository.
// Run one page's checks and blocks: node --no-node-snapshot --import tsx --test
// --test-name-pattern='docs/cli.md' test/docs.test.ts (the server starts either way).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { repoRoot, type SpawnedServer, spawnServer } from "./support/helpers.ts";

// ---------------------------------------------------------------------------------------------
// Reading a page

interface Block {
  line: number; // 1-based line of the opening fence
  lang: string;
  body: string; // the lines between the fences, each with its newline
  marker?: { kind: "verbatim" | "output" | "skip"; arg: string };
}

const MARKER = /^<!--\s*doctest:\s*(.*?)\s*-->$/;
const RUNNABLE = new Set(["sh", "bash"]);

/** The fenced blocks of a page, each with the doctest marker of the line before it; problems found on the way. */
export function parseBlocks(text: string): { blocks: Block[]; problems: string[] } {
  const lines = text.split("\n");
  const blocks: Block[] = [];
  const problems: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const marker = MARKER.exec(lines[i]);
    const open = /^(`{3,})\s*([^`\s]*)[^`]*$/.exec(lines[i]);
    if (marker && !/^(`{3,})/.test(lines[i + 1] ?? "")) {
      problems.push(`line ${i + 1}: a doctest marker must be on the line just before a fence`);
    }
    if (!open) continue;
    const fence = open[1];
    const start = i;
    let end = i + 1;
    const closes = (line: string) => /^`{3,}\s*$/.test(line) && line.trim().length >= fence.length;
    while (end < lines.length && !closes(lines[end])) end++;
    if (end === lines.length) {
      problems.push(`line ${start + 1}: a fence that is never closed`);
      break;
    }
    const block: Block = {
      line: start + 1,
      lang: open[2],
      body: lines
        .slice(start + 1, end)
        .map((l) => `${l}\n`)
        .join(""),
    };
    const before = start > 0 ? MARKER.exec(lines[start - 1]) : null;
    if (before) {
      const m = /^(verbatim|output of|skip:)\s*(.*)$/.exec(before[1]);
      if (!m || m[2] === "") {
        problems.push(`line ${start}: "${before[1]}" is not "verbatim PATH", "output of COMMAND" or "skip: REASON"`);
      } else {
        block.marker = { kind: m[1] === "output of" ? "output" : m[1] === "skip:" ? "skip" : "verbatim", arg: m[2] };
      }
    }
    blocks.push(block);
    i = end;
  }
  return { blocks, problems };
}

/** GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The page outside its fenced blocks and inline code spans: what links and headings live in. */
function prose(text: string): string {
  const out: string[] = [];
  let fence = "";
  for (const line of text.split("\n")) {
    const f = /^(`{3,})/.exec(line)?.[1];
    if (fence) {
      if (f && line.trim().replace(/`/g, "") === "" && f.length >= fence.length) fence = "";
      out.push("");
    } else if (f) {
      fence = f;
      out.push("");
    } else {
      out.push(line.replace(/(`+)(?:(?!\1)[^\n])*?\1/g, ""));
    }
  }
  return out.join("\n");
}

function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const m of prose(text).matchAll(/^#{1,6}\s+(.*?)\s*#*$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n === 0 ? base : `${base}-${n}`);
  }
  return result;
}

/**
 * What is wrong with a page that can be seen without running it: its blocks (unmarked blocks that
 * are not run, verbatim copies that differ from their file, outputs of commands the page does not
 * run before them), its links (to missing files or headings, or outside the repository) and any
 * path it names outside the repository. `page` is the page's path from `root`.
 */
export function checkPage(root: string, page: string, text: string): string[] {
  const { blocks, problems } = parseBlocks(text);
  const dir = dirname(join(root, page));
  const inside = (abs: string) => {
    const rel = relative(root, abs);
    return !isAbsolute(rel) && rel !== ".." && !rel.startsWith(`..${sep}`);
  };
  const ran: string[] = [];
  for (const b of blocks) {
    const where = `line ${b.line} (\`\`\`${b.lang})`;
    if (b.marker?.kind === "verbatim") {
      const file = join(root, b.marker.arg);
      if (!inside(file) || !existsSync(file)) problems.push(`${where}: verbatim ${b.marker.arg}: no such file in the repository`);
      else if (readFileSync(file, "utf8") !== b.body) problems.push(`${where}: differs from ${b.marker.arg}: copy the file again`);
    } else if (b.marker?.kind === "output") {
      if (!ran.includes(b.marker.arg)) {
        problems.push(`${where}: output of "${b.marker.arg}", which no earlier \`\`\`sh block of this page is`);
      }
    } else if (!b.marker && !RUNNABLE.has(b.lang)) {
      problems.push(
        `${where}: not run and not marked; make it a \`\`\`sh block, or put <!-- doctest: verbatim PATH -->, <!-- doctest: output of COMMAND --> or <!-- doctest: skip: REASON --> on the line before it`,
      );
    }
    if (RUNNABLE.has(b.lang) && !b.marker) ran.push(b.body.trim());
  }

  const body = prose(text);
  const targets = [
    ...[...body.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]),
    ...[...body.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]),
    ...[...body.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]),
  ];
  for (const target of targets) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
      if (!/^(https?|mailto):/i.test(target)) problems.push(`link ${target}: only http(s) and mailto links may leave the repository`);
      continue;
    }
    const [path, anchor] = target.split("#", 2);
    if (path === "") {
      if (!anchors(text).has(anchor)) problems.push(`link ${target}: this page has no heading #${anchor}`);
      continue;
    }
    const file = resolve(dir, decodeURIComponent(path));
    if (!inside(file)) {
      problems.push(`link ${target}: outside the repository`);
    } else if (!existsSync(file)) {
      problems.push(`link ${target}: no such file or folder (${relative(root, file)})`);
    } else if (anchor !== undefined && file.endsWith(".md") && !anchors(readFileSync(file, "utf8")).has(anchor)) {
      problems.push(`link ${target}: ${relative(root, file)} has no heading #${anchor}`);
    }
  }
  // A path written out, not linked (`../shared/DESIGN.md`), must stay inside the repository too.
  // The pages write such paths from the repository root (`server/main.ts`), so they resolve from there.
  const unlinked = text.replace(/\]\([^)]*\)/g, "]()").replace(/\b(?:src|href)="[^"]*"/g, "");
  for (const m of unlinked.matchAll(/(?:^|[\s`'"(=])((?:\.\.\/)+[^\s`'")]*)/gm)) {
    if (!inside(resolve(root, m[1]))) problems.push(`"${m[1]}": a path outside the repository`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// The pages

const PAGES = [
  "README.md",
  // docs/ and its folders (docs/trainers/: one page per trainer)
  ...readdirSync(join(repoRoot, "docs"), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f.split(sep).join("/")}`),
];
const read = (page: string) => readFileSync(join(repoRoot, page), "utf8");

test("the README opens with the two front-door commands", () => {
  const first = parseBlocks(read("README.md")).blocks.find((b) => RUNNABLE.has(b.lang));
  assert.match(
    first?.body ?? "",
    /^make run\b[^\n]*\nmake test\b[^\n]*\n$/,
    "make run, then make test, and nothing else (CI runs the second; the server tests run the first's entry point)",
  );
});

for (const page of PAGES) {
  test(`${page}: every block is run or marked, every copy verbatim, every link inside the repository and resolving`, () => {
    assert.deepEqual(checkPage(repoRoot, page, read(page)), []);
  });
}

test("the checks catch what they are for", () => {
  const page = "docs/x.md";
  const cases: [string, string, RegExp][] = [
    ["an unmarked ts block", "```ts\nconst x = 1;\n```\n", /line 1 \(```ts\): not run and not marked/],
    ["a bare block", "It prints:\n\n```\n42\n```\n", /line 3 \(```\): not run and not marked/],
    ["a marker one line too far", "<!-- doctest: skip: x -->\n\n```ts\nx\n```\n", /marker must be on the line just before a fence/],
    ["a skip without a reason", "<!-- doctest: skip: -->\n```ts\nx\n```\n", /is not "verbatim PATH"/],
    ["an unknown marker", "<!-- doctest: run -->\n```ts\nx\n```\n", /is not "verbatim PATH"/],
    ["a copy that drifted", "<!-- doctest: verbatim examples/keywords.ts -->\n```ts\n// old\n```\n", /differs from examples\/keywords\.ts/],
    ["a copy of nothing", "<!-- doctest: verbatim examples/nope.ts -->\n```ts\n```\n", /no such file/],
    ["an output of nothing run", "<!-- doctest: output of npx tsx a.ts -->\n```\nok\n```\n", /no earlier ```sh block/],
    ["a link outside", "See [the brief](../../shared/DESIGN.md).\n", /outside the repository/],
    ["a path outside", "It extends the brief in `../shared/DESIGN.md`.\n", /"\.\.\/shared\/DESIGN\.md": a path outside the repository/],
    ["a missing file", "See [it](nope.md).\n", /no such file or folder \(docs\/nope\.md\)/],
    ["a missing heading", "See [it](graders.md#nope).\n", /docs\/graders\.md has no heading #nope/],
    ["a file link", "See [it](file:///etc/passwd).\n", /only http\(s\) and mailto/],
    ["an image elsewhere", '<img src="../../x.png">\n', /outside the repository/],
  ];
  for (const [name, text, expected] of cases) {
    const problems = checkPage(repoRoot, page, text);
    assert.ok(
      problems.some((p) => expected.test(p)),
      `${name}: ${JSON.stringify(problems)}`,
    );
  }
  const fine = [
    "# A page\n\n## Two words\n\nSee [there](#two-words), [the design](DESIGN.md#the-house) and [the repo](../README.md).",
    "```sh\nnpx tsx a.ts\n```\n\n<!-- doctest: output of npx tsx a.ts -->\n```\nok\n```\n",
    "<!-- doctest: verbatim examples/threads.jsonl -->\n```json\n" +
      readFileSync(join(repoRoot, "examples/threads.jsonl"), "utf8") +
      "```\n",
    "Code is not a link: `[name](thread)`, ``a `[b](c)` d``.\n",
  ];
  for (const text of fine) assert.deepEqual(checkPage(repoRoot, page, text), [], text);
});

// ---------------------------------------------------------------------------------------------
// Running the blocks

const dir = mkdtempSync(join(tmpdir(), "gradebox-docs-"));
const KEY_EXPORT = "export GRADEBOX_API_KEY=$(cat data/default.key)";
const userPath = (process.env.PATH ?? "")
  .split(delimiter)
  .filter((p) => !p.endsWith("/.node/bin"))
  .join(delimiter);
let server: SpawnedServer;
let key: string;

before(async () => {
  server = await spawnServer({ GRADEBOX_DB: join(dir, "gradebox.db"), GRADEBOX_LOG_LEVEL: "warn", GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32" });
  key = readFileSync(join(dir, "default.key"), "utf8").trim();
});
after(async () => {
  server.child.kill("SIGTERM");
  await server.exited;
  rmSync(join(repoRoot, "scores.jsonl"), { force: true });
  rmSync(dir, { recursive: true, force: true });
});

/** `…` in a shown output stands for any text. */
const shownAs = (shown: string) =>
  new RegExp(
    `^${shown
      .split("…")
      .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join("[\\s\\S]*?")}$`,
  );

for (const page of PAGES) {
  const printed = new Map<string, string>();
  for (const [i, block] of parseBlocks(read(page)).blocks.entries()) {
    if (block.marker?.kind === "output") {
      const command = block.marker.arg;
      test(`${page} block ${i + 1} (line ${block.line}): the output of ${command}`, () => {
        const stdout = printed.get(command);
        assert.ok(stdout !== undefined, `${command} did not run`);
        assert.match(stdout, shownAs(block.body), `${command} printed:\n${stdout}`);
      });
    }
    if (!RUNNABLE.has(block.lang) || block.marker) continue;
    test(`${page} block ${i + 1} (line ${block.line}): ${block.body.split("\n")[0].slice(0, 60)}`, async () => {
      const script = block.body.replace(KEY_EXPORT, `export GRADEBOX_API_KEY=${key}`);
      const { stdout, stderr } = await promisify(execFile)("bash", ["-euo", "pipefail", "-c", script], {
        cwd: repoRoot,
        // as a user's shell has it: the machine's own Node first, not the project's .node/bin
        env: { ...process.env, PATH: userPath, GRADEBOX_URL: server.url, GRADEBOX_DB: join(dir, "gradebox.db"), GRADEBOX_API_KEY: key },
        timeout: 120_000,
      });
      printed.set(block.body.trim(), stdout);
      assert.ok(stdout.length + stderr.length > 0, "the block printed something");
    });
  }
}
