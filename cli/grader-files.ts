// The graders in a file given to push and test: one per file (a default export, a top-level
// grade, a Python file), or one per named export of an async function; their keys from --key, or
// derived (the file's name for a one-grader file, the export's name in kebab-case otherwise); a
// TypeScript file's local imports bundled in (sdk/bundle.ts), so the server gets one source each.

import { InvalidArgumentError } from "commander";
import { bundleLocalImports } from "../sdk/bundle.ts";
import { keyFromFile, keyFromName, namedGraders, withEntry } from "../sdk/grader-files.ts";
import type { Language } from "../sdk/index.ts";
import { readInput, usageError } from "./api.ts";

export interface FileGrader {
  key: string;
  /** the named export it is, in a file of several */
  exportName?: string;
  /** what the server gets: the file with its local imports bundled in and, for a named export, that export as the entry point */
  source: string;
}

/** --key, repeatable: KEY, or EXPORT=KEY for one named export of a file of several. */
export const collectKeys = (value: string, all: string[] = []) => {
  if (!value.trim()) throw new InvalidArgumentError("it must be a key, or EXPORT=KEY");
  return [...all, value];
};

export async function fileGraders(file: string, opts: { key?: string[]; language?: Language }): Promise<FileGrader[]> {
  const text = await readInput(file);
  const plain = (opts.key ?? []).filter((k) => !k.includes("="));
  const declared = new Map(
    (opts.key ?? []).filter((k) => k.includes("=")).map((k) => [k.slice(0, k.indexOf("=")), k.slice(k.indexOf("=") + 1)]),
  );
  const derived = (derive: () => string) => {
    try {
      return derive();
    } catch (error) {
      return usageError(`${(error as Error).message} (--key KEY)`);
    }
  };
  if (opts.language === "python") {
    if (declared.size > 0 || plain.length > 1) usageError("a Python file holds one grader: pass one --key KEY");
    return [{ key: plain[0] ?? derived(() => keyFromFile(file)), source: text }];
  }
  const { source } = await bundleLocalImports(file, text);
  const names = namedGraders(text);
  if (names.length <= 1 && declared.size === 0) {
    if (plain.length > 1) usageError(`${file} holds one grader: pass one --key`);
    const name = names[0];
    return [
      {
        // one named export keeps the key its name gives, as it would beside others
        key: plain[0] ?? derived(() => (name ? keyFromName(name) : keyFromFile(file))),
        ...(name ? { exportName: name, source: withEntry(source, name) } : { source }),
      },
    ];
  }
  if (plain.length > 0) {
    usageError(
      names.length > 1
        ? `${file} holds ${names.length} graders (${names.join(", ")}): name each one's key as --key EXPORT=KEY, or let their names give them`
        : `${file} holds one grader: pass --key KEY`,
    );
  }
  for (const name of declared.keys()) {
    if (!names.includes(name))
      usageError(`--key ${name}=…: ${file} has no exported async function ${name} (it has ${names.join(", ") || "none"})`);
  }
  return names.map((name) => ({
    key: declared.get(name) ?? derived(() => keyFromName(name)),
    exportName: name,
    source: withEntry(source, name),
  }));
}
