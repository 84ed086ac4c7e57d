// gradebox: the command line. `serve` starts the server; `keys` manages API keys directly in
// the database (it needs no running server, and no key to make the first one).

import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { Command } from "commander";
import { createTwoFilesPatch } from "diff";
import {
  ConflictError,
  GraderRuntimeError,
  type GraderWithSource,
  type JudgeDefinition,
  type Sample,
  type UpdateResult,
  type WireThread,
} from "../sdk/index.ts";
import { loadConfig } from "../server/config.ts";
import { Store } from "../server/store.ts";
import { type ApiOptions, caret, client, fail, printJson, run, withApiOptions } from "./api.ts";
import { addEndpointCommands, describeEndpoint } from "./endpoints.ts";
import { gradeFile } from "./grade-file.ts";
import { addJudgeCommands } from "./judges.ts";

const program = new Command()
  .name("gradebox")
  .description(
    "Function, judge and endpoint graders: register, validate and run async grade(thread) functions in a sandbox, AI judges, or external reward servers.",
  )
  .showHelpAfterError();

program
  .command("serve")
  .description("start the server (configured by GRADEBOX_* environment variables; see the README)")
  .action(() => {
    const child = spawn(
      process.execPath,
      ["--no-node-snapshot", "--import", import.meta.resolve("tsx"), new URL("../server/main.ts", import.meta.url).pathname],
      {
        stdio: "inherit",
      },
    );
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
    child.on("exit", (code) => process.exit(code ?? 1));
  });

const keys = program.command("keys").description("manage API keys (stored as hashes in GRADEBOX_DB)");

function withStore<T>(fn: (store: Store) => T): T {
  const store = new Store(loadConfig().dbPath);
  try {
    return fn(store);
  } finally {
    store.close();
  }
}

keys
  .command("create")
  .description("create a key for a project (and the project, if new); the key is printed once")
  .requiredOption("-p, --project <name>", "the project the key can access")
  .option("-l, --label <text>", "a note to recognise the key by", "")
  .option("--json", "print JSON")
  .action((opts: { project: string; label: string; json?: boolean }) => {
    if (!/^[a-z0-9][a-z0-9._-]{0,127}$/.test(opts.project)) {
      program.error(`error: project must match [a-z0-9][a-z0-9._-]{0,127}, got "${opts.project}"`);
    }
    const { key, info } = withStore((s) => s.keys.create(opts.project, opts.label));
    if (opts.json) console.log(JSON.stringify({ key, ...info }));
    else console.log(`${key}\n\n(${info.id} for project ${info.project}; it is not shown again)`);
  });

keys
  .command("list")
  .description("list keys (never the keys themselves)")
  .option("-p, --project <name>", "only this project")
  .option("--json", "print JSON")
  .action((opts: { project?: string; json?: boolean }) => {
    const rows = withStore((s) => s.keys.list(opts.project));
    if (opts.json) return console.log(JSON.stringify(rows));
    if (rows.length === 0) return console.log("no keys");
    for (const k of rows) {
      console.log(`${k.id}  ${k.project.padEnd(16)} ${k.prefix}…  ${k.revokedAt ? `revoked ${k.revokedAt}` : "active"}  ${k.label}`);
    }
  });

keys
  .command("revoke")
  .description("revoke a key by its id (from `keys list`); it stops working at once")
  .argument("<id>", "the key id, key_…")
  .option("--json", "print JSON")
  .action((id: string, opts: { json?: boolean }) => {
    try {
      withStore((s) => s.keys.revoke(id));
    } catch (error) {
      program.error(`error: ${(error as Error).message}`);
    }
    console.log(opts.json ? JSON.stringify({ revoked: id }) : `revoked ${id}`);
  });

// ---------------------------------------------------------------------------------------------
// Commands against a running server, through the SDK

/** A top-level command with the options every API command takes. */
function api(name: string, description: string): Command {
  return withApiOptions(program.command(name).description(description));
}

/** A judge's definition, as `get` shows it. */
function describeJudge(j: JudgeDefinition): string {
  const head = `  ${j.type} judge, model ${j.model}`;
  if (j.type === "prebuilt") return `${head}: ${j.metric}`;
  if (j.type === "binary") {
    const vars = Object.entries(j.templateVariables ?? {}).map(([k, v]) => `\n  var ${k}=${v}`);
    return `${head}\n  criteria: ${j.criteria}${vars.join("")}${j.template ? `\n\n${j.template}` : ""}`;
  }
  const criteria = j.criteria.map(
    (c) =>
      `\n  ${String(c.weight).padStart(4)}  ${c.name}: ${c.requirement}${c.options ? ` [${c.options.map((o) => `${o.label}=${o.value}`).join(", ")}]` : ""}`,
  );
  return `${head}, cannot assess: ${j.cannotAssess}${j.cannotAssess === "partial" ? ` (${j.partialCredit})` : ""}${criteria.join("")}`;
}

/** `key` or `key@version`. */
function parseRef(ref: string, opts: ApiOptions): { key: string; version?: number } {
  const at = ref.lastIndexOf("@");
  if (at < 0) return { key: ref };
  const version = Number(ref.slice(at + 1));
  if (!Number.isInteger(version) || version < 1) fail(new Error(`"${ref}": the version after @ must be a whole number from 1`), opts);
  return { key: ref.slice(0, at), version };
}

/** A JSONL file, one JSON value per line; a line that is not JSON fails the command with its number. */
async function readJsonl(path: string, opts: ApiOptions): Promise<unknown[]> {
  const text = await readFile(path, "utf8").catch((e: Error) => fail(new Error(`cannot read ${path}: ${e.message}`), opts));
  return text
    .split("\n")
    .filter((l) => l.trim())
    .map((l, i) => {
      try {
        return JSON.parse(l);
      } catch {
        return fail(new Error(`${path} line ${i + 1} is not JSON`), opts);
      }
    });
}

api("push", "validate a grader file and store it: creates the grader, or a new version when the key exists")
  .argument("<file>", "a .ts or .js file with an async grade(thread) function")
  .requiredOption("-k, --key <key>", "the grader key")
  .option("-d, --description <text>", "what it scores (on an update, absent keeps the current one)")
  .option("-s, --samples <jsonl>", "sample threads the grader carries, one {thread, expected?} per line (test_run grades them)")
  .option("--dry-run", "for an existing key: check the new source and report how the samples' scores change, store nothing")
  .action(async (file: string, opts: ApiOptions & { key: string; description?: string; samples?: string; dryRun?: boolean }) => {
    const source = await readFile(file, "utf8").catch((e: Error) => fail(new Error(`cannot read ${file}: ${e.message}`), opts));
    const samples = opts.samples ? ((await readJsonl(opts.samples, opts)) as Sample[]) : undefined;
    await run(
      opts,
      async () => {
        const graders = client(opts).graders;
        const update = () => graders.update({ graderKey: opts.key, source, description: opts.description, samples, dryRun: opts.dryRun });
        let result: GraderWithSource & Partial<UpdateResult>;
        let created = false;
        if (opts.dryRun) result = await update();
        else {
          result = await graders.create.function({ key: opts.key, source, description: opts.description ?? "", samples }).then(
            (g) => {
              created = true;
              return g;
            },
            (error) => {
              if (!(error instanceof ConflictError && error.code === "GRADER_EXISTS")) throw error;
              return update();
            },
          );
        }
        if (opts.json) return printJson(result);
        if (created) console.log(`✓ created ${result.key} (version 1)`);
        else if (result.dryRun) console.log(`✓ ${result.key}: the new source passes every check (dry run: nothing stored)`);
        else console.log(`✓ updated ${result.key} to version ${result.version}`);
        for (const w of result.warnings) console.log(`  warning: ${w}`);
        const report = result.report;
        if (report && report.samples > 0) {
          console.log(`  samples: ${report.samples}, ${report.changed.length} changed`);
          for (const c of report.changed) console.log(`    sample ${c.index}: ${c.before} → ${c.after}`);
        }
      },
      source,
    );
  });

api("versions", "list a grader's versions")
  .argument("<key>", "the grader key")
  .action((key: string, opts: ApiOptions) =>
    run(opts, async () => {
      const graders = client(opts).graders;
      const [versions, current] = await Promise.all([graders.versions.list({ graderKey: key }), graders.get({ graderKey: key })]);
      if (opts.json) return printJson(versions);
      for (const v of versions) {
        const mark = v.version === current.version ? "*" : " ";
        console.log(`${mark} ${String(v.version).padStart(4)}  ${v.createdAt}  ${v.sourceSha256.slice(0, 12)}  ${v.description}`);
      }
    }),
  );

api("diff", "show what changed between two versions of a grader (a unified diff of their sources)")
  .argument("<from>", "key@version")
  .argument("<to>", "key@version, or key for the current version")
  .action((from: string, to: string, opts: ApiOptions) =>
    run(opts, async () => {
      const graders = client(opts).graders;
      const sourceOf = async (ref: string) => {
        const { key, version } = parseRef(ref, opts);
        if (version !== undefined)
          return { label: `${key}@${version}`, source: (await graders.versions.get({ graderKey: key, version })).source };
        const current = await graders.get({ graderKey: key });
        return { label: `${key}@${current.version}`, source: current.source ?? "" };
      };
      const [a, b] = await Promise.all([sourceOf(from), sourceOf(to)]);
      const patch = createTwoFilesPatch(a.label, b.label, a.source, b.source, undefined, undefined, { context: 3 });
      if (opts.json) return printJson({ from: a.label, to: b.label, patch });
      process.stdout.write(patch);
    }),
  );

api("test", "run the five checks on a file and grade sample threads, without saving")
  .argument("<file>", "a .ts or .js grader file")
  .option("-t, --threads <jsonl>", "threads to grade, one JSON thread per line")
  .action(async (file: string, opts: ApiOptions & { threads?: string }) => {
    const source = await readFile(file, "utf8").catch((e: Error) => fail(new Error(`cannot read ${file}: ${e.message}`), opts));
    const threads = opts.threads ? ((await readJsonl(opts.threads, opts)) as WireThread[]) : undefined;
    await run(
      opts,
      async () => {
        const res = await client(opts).graders.validate({ source, threads });
        if (opts.json) return printJson(res);
        console.log("✓ all five checks passed");
        for (const w of res.warnings) console.log(`  warning: ${w}`);
        for (const [i, r] of (res.results ?? []).entries()) {
          const at = "error" in r && r.error.line !== undefined ? ` (line ${r.error.line}, column ${r.error.column})` : "";
          console.log(
            `  thread ${i + 1}: ${"score" in r ? `${r.score}${r.reason ? `  (${r.reason})` : ""}` : `${r.error.code}: ${r.error.message}${at}`}`,
          );
          if ("error" in r && r.error.line !== undefined) console.log(caret(source, r.error.line, r.error.column, "      "));
        }
      },
      source,
    );
  });

api("ls", "list the project's graders").action((opts: ApiOptions) =>
  run(opts, async () => {
    const graders = await client(opts).graders.list();
    if (opts.json) return printJson(graders);
    if (graders.length === 0) return console.log("no graders");
    for (const g of graders) {
      const flags = [g.locked ? "locked" : "", g.quarantinedAt ? "quarantined" : ""].filter(Boolean).join(",");
      console.log(`${g.key.padEnd(28)} ${g.kind.padEnd(9)} ${flags.padEnd(12)} ${g.description}`);
    }
  }),
);

api("get", "show one grader with its source")
  .argument("<key>", "the grader key")
  .action((key: string, opts: ApiOptions) =>
    run(opts, async () => {
      const g = await client(opts).graders.get({ graderKey: key });
      if (opts.json) return printJson(g);
      console.log(
        `${g.key} (${g.kind}, version ${g.version}${g.locked ? ", locked" : ""}${g.quarantinedAt ? ", quarantined" : ""})  ${g.description}`,
      );
      for (const w of g.warnings) console.log(`warning: ${w}`);
      if (g.parts) {
        for (const p of g.parts) console.log(`  part ${p.name}: ${p.graderKey}${p.pinned ? `@${p.version}` : ""} × ${p.weight}`);
      }
      if (g.judge) console.log(describeJudge(g.judge));
      if (g.endpoint) console.log(describeEndpoint(g.endpoint));
      if (g.source !== undefined) console.log(`\n${g.source}`);
    }),
  );

for (const [name, locked] of [
  ["lock", true],
  ["unlock", false],
] as const) {
  api(name, locked ? "lock a grader (it cannot be deleted while locked)" : "unlock a grader")
    .argument("<key>", "the grader key")
    .action((key: string, opts: ApiOptions) =>
      run(opts, async () => {
        const g = await client(opts).graders.lock({ graderKey: key, locked });
        if (opts.json) return printJson(g);
        console.log(`✓ ${key} ${locked ? "locked" : "unlocked"}`);
      }),
    );
}

api("rm", "delete a grader (refused while locked or used by a combined grader)")
  .argument("<key>", "the grader key")
  .action((key: string, opts: ApiOptions) =>
    run(opts, async () => {
      await client(opts).graders.delete({ graderKey: key });
      if (opts.json) return printJson({ deleted: key });
      console.log(`✓ deleted ${key}`);
    }),
  );

api("grade", "grade one thread (--thread) or a JSONL file of threads (--threads) with a grader")
  .argument("<key>", "the grader key, or key@version to grade with that version")
  .option("--thread <json>", "a file with one thread: {turns: [{role, content}], metadata?}")
  .option("--threads <jsonl>", "a JSONL file of threads, streamed in batches")
  .option("-o, --out <jsonl>", "write one result per line here (default: stdout)")
  .option("--batch <n>", "threads per request", (v) => Number.parseInt(v, 10), 256)
  .action(async (ref: string, opts: ApiOptions & { thread?: string; threads?: string; out?: string; batch: number }) => {
    if (!opts.thread === !opts.threads) fail(new Error("pass exactly one of --thread <file> or --threads <jsonl>"), opts);
    const { key, version } = parseRef(ref, opts);
    await run(opts, async () => {
      if (opts.thread) {
        const thread = JSON.parse(await readFile(opts.thread, "utf8"));
        const res = await client(opts)
          .graders.grade({ graderKey: key, thread, version })
          .catch(async (error) => {
            if (!(error instanceof GraderRuntimeError) || error.line === undefined || opts.json) throw error;
            // the caret goes under the source of the version that graded it
            const graded = typeof error.body.version === "number" ? error.body.version : version;
            const graders = client(opts).graders;
            const source = await (graded === undefined
              ? graders.get({ graderKey: key }).then((g) => g.source)
              : graders.versions.get({ graderKey: key, version: graded }).then((v) => v.source)
            ).catch(() => undefined);
            return fail(error, opts, source);
          });
        return opts.json ? printJson(res) : console.log(`${res.score}${res.reason ? `  (${res.reason})` : ""}`);
      }
      const summary = await gradeFile(client(opts), key, {
        threads: opts.threads as string,
        out: opts.out,
        batch: opts.batch,
        quiet: !!opts.json,
        version,
      });
      const line = opts.json
        ? JSON.stringify({ summary })
        : `graded ${summary.count}: ${summary.scored} scored (mean ${summary.mean?.toFixed(4) ?? "-"}, min ${summary.min ?? "-"}, max ${summary.max ?? "-"})` +
          (Object.keys(summary.errors).length
            ? `; errors ${Object.entries(summary.errors)
                .map(([c, n]) => `${c} ${n}`)
                .join(", ")}`
            : "");
      // with results on stdout, the summary goes to stderr so the JSONL stays clean
      if (opts.out || opts.json) console.log(line);
      else console.error(line);
    });
  });

addJudgeCommands(program);
addEndpointCommands(program);

await program.parseAsync();
