// docs/DESIGN.md's arrows between the top-level rooms, held to the code: every relative import
// of every TypeScript file (read with the TypeScript compiler's own pre-processor, so comments
// and strings do not count) must follow an arrow the map lists, and every arrow listed must be
// used, so the map can neither miss an arrow nor keep one that is gone.

import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { test } from "node:test";
import ts from "typescript";
import { repoRoot } from "./support/helpers.ts";

const ROOMS = ["sdk", "sandbox", "server", "cli", "console", "bench", "scripts", "test"];

/** The arrows the map lists: `from -> to, to` items, `nothing` for none. */
export function mapArrows(design: string): Map<string, Set<string>> {
  const start = design.indexOf("Arrows between the top-level rooms");
  assert.ok(start >= 0, "docs/DESIGN.md has the paragraph of arrows between the top-level rooms");
  const paragraph = design.slice(start, design.indexOf("\n\n", start));
  const arrows = new Map<string, Set<string>>();
  for (const [, from, to] of paragraph.matchAll(/`([a-z]+) -> ([a-z, ]+)`/g)) {
    arrows.set(from, new Set(to === "nothing" ? [] : to.split(",").map((t) => t.trim())));
  }
  return arrows;
}

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === "dist" || name.startsWith(".")) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.(m?ts|js)$/.test(name) && !name.endsWith(".d.ts")) yield path;
  }
}

/** The rooms each room's files import from, with one file for each arrow as evidence. */
export function codeArrows(root: string): Map<string, Map<string, string>> {
  const arrows = new Map<string, Map<string, string>>();
  for (const room of ROOMS) {
    const found = new Map<string, string>();
    for (const file of sources(join(root, room))) {
      const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
      for (const { fileName } of importedFiles) {
        if (!fileName.startsWith(".")) continue;
        const target = relative(root, resolve(dirname(file), fileName)).split(sep)[0];
        if (target !== room && ROOMS.includes(target) && !found.has(target)) found.set(target, relative(root, file));
      }
    }
    arrows.set(room, found);
  }
  return arrows;
}

test("every import between the top-level rooms follows an arrow of docs/DESIGN.md's map, and every arrow is used", () => {
  const listed = mapArrows(readFileSync(join(repoRoot, "docs/DESIGN.md"), "utf8"));
  const found = codeArrows(repoRoot);
  const problems: string[] = [];
  for (const room of ROOMS) {
    const allowed = listed.get(room);
    if (!allowed) {
      problems.push(`the map lists no arrows for ${room}/`);
      continue;
    }
    for (const [target, file] of found.get(room) ?? []) {
      if (!allowed.has(target)) problems.push(`${file} imports from ${target}/, which the map does not allow ${room}/ to`);
    }
    for (const target of allowed)
      if (!found.get(room)?.has(target)) problems.push(`the map lists ${room} -> ${target}, which no import uses`);
  }
  assert.deepEqual(problems, []);
});

test("the check finds an arrow the map does not list, and one it lists that is gone", () => {
  const arrows = mapArrows("Arrows between the top-level rooms go one way: `sdk -> nothing`, `server -> sdk, cli`.\n\n");
  assert.deepEqual([...(arrows.get("sdk") ?? [])], []);
  assert.deepEqual([...(arrows.get("server") ?? [])], ["sdk", "cli"]);
  // the real tree: sandbox imports sdk, which a map without that arrow refuses
  const found = codeArrows(repoRoot);
  assert.ok(found.get("sandbox")?.has("sdk"), "sandbox/ imports sdk/ (the isolate's StringThread)");
  assert.equal(found.get("sdk")?.size, 0, "sdk/ imports no other room");
});
