// The gradebox command's client side: every command that talks to a running server over HTTP,
// through the SDK. It imports nothing of the server (serve and keys, which open the database,
// are added by server-commands.ts), so it can be bundled into a package of its own
// (client-main.ts is that package's entry point).

import { type Command, InvalidArgumentError, Option } from "commander";
import { createTwoFilesPatch } from "diff";
import {
  ConflictError,
  GraderRuntimeError,
  type GraderWithSource,
  type JudgeDefinition,
  LANGUAGES,
  type Language,
  languageOfFile,
  NotFoundError,
  type OnUnavailable,
  type Sample,
  type UpdateResult,
  VERSION,
  type WireThread,
} from "../sdk/index.ts";
import {
  type ApiOptions,
  caret,
  client,
  EXIT_FAILED,
  EXIT_STATUS_HELP,
  fail,
  GradeboxCommand,
  parseJson,
  printJson,
  readInput,
  readThreadOption,
  run,
  wholeNumber,
  withApiOptions,
} from "./api.ts";
import { addCodeCommands, describeCode } from "./code.ts";
import { addEndpointCommands, describeEndpoint } from "./endpoints.ts";
import { gradeFile, type LineResult, type Summary, summaryText } from "./grade-file.ts";
import { collectKeys, type FileGrader, fileGraders } from "./grader-files.ts";
import { addJudgeCommands } from "./judges.ts";
import { addSecretCommands } from "./secrets.ts";

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

/** A grader reference, `key` or `key@version`. */
interface Ref {
  key: string;
  version?: number;
}

/** The argument parser of a `key` or `key@version` argument: a bad version is an argument error. */
function parseRef(ref: string): Ref {
  const at = ref.lastIndexOf("@");
  if (at < 0) return { key: ref };
  try {
    return { key: ref.slice(0, at), version: wholeNumber(ref.slice(at + 1)) };
  } catch {
    throw new InvalidArgumentError("the version after @ must be a whole number from 1");
  }
}

/** A JSONL file, one JSON value per line; a line that is not JSON is a usage error naming its number. */
async function readJsonl(path: string): Promise<unknown[]> {
  const text = await readInput(path);
  return text
    .split("\n")
    .map((l, i) => [l, i] as const)
    .filter(([l]) => l.trim())
    .map(([l, i]) => parseJson(l, `${path} line ${i + 1}`));
}

/** --language: forces a grader file's language; absent, its name says (.py: python, .ts/.js: typescript). */
const languageOption = () =>
  new Option("--language <language>", "the file's language (default: from its name: .py is python, .ts and .js typescript)").choices(
    LANGUAGES,
  );

/** The language to send for a grader file: --language, else what its name says, else none (the server's default). */
const languageFor = (file: string, opts: { language?: Language }) => opts.language ?? languageOfFile(file);

/** Creates the grader, or stores a new version when its key exists; prints what happened (not under --json: the result is returned). */
async function pushOne(g: FileGrader, language: Language | undefined, samples: Sample[] | undefined, opts: PushOptions) {
  const graders = client(opts).graders;
  const { key, source } = g;
  const update = () => graders.update({ graderKey: key, source, language, description: opts.description, samples, dryRun: opts.dryRun });
  let result: GraderWithSource & Partial<UpdateResult>;
  let created = false;
  if (opts.dryRun) {
    result = await update().catch((error: unknown) => {
      if (error instanceof NotFoundError && error.code === "GRADER_NOT_FOUND") {
        // nothing to compare a new grader's samples against: test is the dry run of a first push
        error.message = `${error.message}; --dry-run checks a new version of an existing grader: to check a new one, run \`gradebox test FILE\``;
      }
      throw error;
    });
  } else {
    result = await graders.create.function({ key, source, language, description: opts.description ?? "", samples }).then(
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
  if (opts.json) return result;
  const from = g.exportName ? ` from ${g.exportName}` : "";
  if (created) console.log(`✓ created ${result.key} (version 1) in ${result.language}${from}`);
  else if (result.unchanged) {
    console.log(`✓ ${result.key} unchanged, still version ${result.version}${from}`);
    return result;
  } else if (result.dryRun) console.log(`✓ ${result.key}: the new source passes every check (dry run: nothing stored)`);
  else console.log(`✓ updated ${result.key} to version ${result.version} in ${result.language}${from}`);
  for (const w of result.warnings) console.log(`  warning: ${w}`);
  const report = result.report;
  if (report && report.samples > 0) {
    console.log(`  samples: ${report.samples}, ${report.changed.length} changed`);
    // numbered from 1, as the lines of the --samples file
    for (const c of report.changed) console.log(`    sample ${c.index + 1}: ${c.before} → ${c.after}`);
  }
  return result;
}

/**
 * `test`: the checks, then the --threads file streamed through validate in chunks of the server's
 * batch limit (each chunk is a validation: checked again, then graded), results as they come.
 */
async function testOne(g: FileGrader, language: Language | undefined, opts: ApiOptions & { threads?: string; metadataColumns?: string[] }) {
  const graders = client(opts).graders;
  const { source } = g;
  const named = g.exportName ? `${g.key} (${g.exportName}): ` : "";
  const printChecked = (warnings: string[]) => {
    if (opts.json) return;
    console.log(`✓ ${named}all five checks passed`);
    for (const w of warnings) console.log(`  warning: ${w}`);
  };
  if (!opts.threads) {
    const res = await graders.validate({ source, language });
    if (opts.json) return printJson(g.exportName ? { key: g.key, ...res } : res);
    return printChecked(res.warnings);
  }
  let checked = false;
  const write = (line: number, r: LineResult) => {
    if (opts.json) return void console.log(JSON.stringify({ ...(g.exportName ? { key: g.key } : {}), line, ...r }));
    const at = "error" in r && "line" in r.error && r.error.line !== undefined ? ` (line ${r.error.line}, column ${r.error.column})` : "";
    console.log(
      `  line ${line}: ${"score" in r ? `${r.score}${r.reason ? `  (${r.reason})` : ""}` : "abstained" in r ? `abstained ${r.abstained.code}: ${r.abstained.reason}` : `${r.error.code}: ${r.error.message}${at}`}`,
    );
    if ("error" in r && "line" in r.error && r.error.line !== undefined) console.log(caret(source, r.error.line, r.error.column, "      "));
  };
  const { maxBatchThreads } = await client(opts).limits();
  const summary = await gradeFile(
    async (threads) => {
      const res = await graders.validate({ source, language, threads });
      if (!checked) printChecked(res.warnings);
      checked = true;
      return res.results ?? [];
    },
    { threads: opts.threads, batch: maxBatchThreads, quiet: !!opts.json, metadataColumns: opts.metadataColumns, write },
  );
  if (!checked) {
    // every line was bad: the checks still run
    const res = await graders.validate({ source, language });
    printChecked(res.warnings);
  }
  if (!opts.json) console.error(summaryText(summary));
  if (failed(summary, false)) process.exitCode = EXIT_FAILED;
}

/** A --threads run fails when a line errs (a bad line or a grade error), or abstains under --fail-on-abstain. */
const failed = (summary: Summary, failOnAbstain: boolean) =>
  summary.outcomes.error > 0 || (failOnAbstain && summary.outcomes.abstained > 0);

/** --deadline-ms: the server's range, so a bad value is an argument error rather than the server's 400. */
const deadlineMs = (v: string) => {
  const n = wholeNumber(v);
  if (n > MAX_DEADLINE_MS) throw new InvalidArgumentError(`it must be a whole number from 1 to ${MAX_DEADLINE_MS}`);
  return n;
};
/** The longest deadline the server takes (server/schemas.ts MAX_DEADLINE_MS; the client imports nothing of the server). */
const MAX_DEADLINE_MS = 600_000;

type GradeOptions = ApiOptions & {
  thread?: string;
  threads?: string;
  out?: string;
  batch: number;
  metadataColumns?: string[];
  deadlineMs?: number;
  groupBy?: string;
  onUnavailable?: OnUnavailable;
  failOnAbstain?: boolean;
};

type PushOptions = ApiOptions & { key?: string[]; language?: Language; description?: string; samples?: string; dryRun?: boolean };

/** --metadata-columns a,b: the columns of OpenAI and TRL lines that become a thread's metadata. */
const metadataColumnsOption = () =>
  new Option(
    "--metadata-columns <names>",
    "for OpenAI chat and TRL lines: the columns that become the thread's metadata, comma-separated (default: every column but the thread's own)",
  ).argParser((v) =>
    v
      .split(",")
      .map((c) => c.trim())
      .filter(Boolean),
  );

/** -k/--key of push and test: optional where the file's names give it. */
const keyOption = () =>
  new Option(
    "-k, --key <key>",
    "the grader key (default: the file's name, or each named export's name in kebab-case); for a file of several named exports, EXPORT=KEY (repeatable)",
  ).argParser(collectKeys);
/**
 * The gradebox program with every client command (all but serve and keys). Settings that
 * subcommands must share live in GradeboxCommand, so commands added later get them too.
 */
export function clientProgram(): Command {
  const program = new GradeboxCommand()
    .name("gradebox")
    .description(
      "Function, judge and endpoint graders: register, validate and run async grade(thread) functions in a sandbox, AI judges, or external reward servers.",
    )
    .version(VERSION, "-V, --version", "print the version")
    .addHelpText("after", `\n${EXIT_STATUS_HELP}`);

  /** A top-level command with the options every API command takes. */
  const api = (name: string, description: string): Command => withApiOptions(program.command(name).description(description));

  api("push", "validate a grader file and store it: creates the grader, or a new version when the key exists")
    .argument(
      "<file>",
      "a .ts or .js file with an async grade(thread) function (its local imports are bundled in) or several exported async functions, or a .py file with an async def grade(thread)",
    )
    .addOption(keyOption())
    .addOption(languageOption())
    .option("-d, --description <text>", "what it scores (on an update, absent keeps the current one)")
    .option("-s, --samples <jsonl>", "sample threads the grader carries, one {thread, expected?} per line (test_run grades them)")
    .option("--dry-run", "for an existing key: check the new source and report how the samples' scores change, store nothing")
    .action(async (file: string, opts: PushOptions) => {
      const language = languageFor(file, opts);
      const samples = opts.samples ? ((await readJsonl(opts.samples)) as Sample[]) : undefined;
      const found = await fileGraders(file, { key: opts.key, language }).catch((error) => fail(error, opts));
      const results: unknown[] = [];
      for (const g of found) results.push(await run(opts, () => pushOne(g, language, samples, opts), g.source));
      if (opts.json) printJson(found.length === 1 ? results[0] : results);
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
          console.log(
            `${mark} ${String(v.version).padStart(4)}  ${v.createdAt}  ${v.sourceSha256.slice(0, 12)}  ${v.language.padEnd(10)}  ${v.description}`,
          );
        }
      }),
    );

  api("diff", "show what changed between two versions of a grader (a unified diff of their sources)")
    .argument("<from>", "key@version", parseRef)
    .argument("<to>", "key@version, or key for the current version", parseRef)
    .action((from: Ref, to: Ref, opts: ApiOptions) =>
      run(opts, async () => {
        const graders = client(opts).graders;
        const sourceOf = async ({ key, version }: Ref) => {
          if (version !== undefined)
            return { label: `${key}@${version}`, source: (await graders.versions.get({ graderKey: key, version })).source };
          const current = await graders.get({ graderKey: key });
          return { label: `${key}@${current.version}`, source: current.source ?? "" };
        };
        const [a, b] = await Promise.all([sourceOf(from), sourceOf(to)]);
        const patch = createTwoFilesPatch(a.label, b.label, a.source, b.source, undefined, undefined, { context: 3 });
        if (opts.json) return printJson({ from: a.label, to: b.label, patch });
        // a patch of headers alone says nothing to a person: say it
        if (a.source === b.source) return console.log(`${a.label} and ${b.label} have the same source`);
        process.stdout.write(patch);
      }),
    );

  api("test", "run the five checks on a file and grade sample threads, without saving")
    .argument("<file>", "a .ts, .js or .py grader file (each named export of a file of several is tested)")
    .addOption(languageOption())
    .option(
      "-t, --threads <jsonl>",
      "threads to grade, one per line (- reads stdin): Gradebox threads, OpenAI chat lines or TRL prompt-completion lines; streamed in chunks, any size",
    )
    .addOption(metadataColumnsOption())
    .action(async (file: string, opts: ApiOptions & { language?: Language; threads?: string; metadataColumns?: string[] }) => {
      const language = languageFor(file, opts);
      const found = await fileGraders(file, { language }).catch((error) => fail(error, opts));
      for (const g of found) await run(opts, () => testOne(g, language, opts), g.source);
    });

  api("ls", "list the project's graders").action((opts: ApiOptions) =>
    run(opts, async () => {
      const graders = await client(opts).graders.list();
      if (opts.json) return printJson(graders);
      if (graders.length === 0) return console.log("no graders");
      for (const g of graders) {
        const flags = [g.locked ? "locked" : "", g.quarantinedAt ? "quarantined" : ""].filter(Boolean).join(",");
        console.log(`${g.key.padEnd(28)} ${g.kind.padEnd(9)} ${(g.language ?? "").padEnd(10)} ${flags.padEnd(12)} ${g.description}`);
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
          `${g.key} (${g.kind}${g.language ? `, ${g.language}` : ""}, version ${g.version}${g.locked ? ", locked" : ""}${g.quarantinedAt ? ", quarantined" : ""})  ${g.description}`,
        );
        for (const w of g.warnings) console.log(`warning: ${w}`);
        if (g.parts) {
          for (const p of g.parts) console.log(`  part ${p.name}: ${p.graderKey}${p.pinned ? `@${p.version}` : ""} × ${p.weight}`);
        }
        if (g.judge) console.log(describeJudge(g.judge));
        if (g.endpoint) console.log(describeEndpoint(g.endpoint));
        if (g.code) console.log(describeCode(g.code));
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

  api("release", "lift a grader's quarantine (it took its sandbox worker down 3 times in 10 minutes)")
    .argument("<key>", "the grader key")
    .action((key: string, opts: ApiOptions) =>
      run(opts, async () => {
        const g = await client(opts).graders.release({ graderKey: key });
        if (opts.json) return printJson(g);
        console.log(`✓ ${key} released`);
      }),
    );

  api("rm", "delete a grader (refused while locked or used by a combined grader), or with key@version one old version of it")
    .argument("<key>", "the grader key, or key@version: a version neither current nor pinned, to free its quota", parseRef)
    .action(({ key, version }: Ref, opts: ApiOptions) =>
      run(opts, async () => {
        const graders = client(opts).graders;
        if (version === undefined) await graders.delete({ graderKey: key });
        else await graders.versions.delete({ graderKey: key, version });
        const deleted = version === undefined ? key : `${key}@${version}`;
        if (opts.json) return printJson({ deleted });
        console.log(`✓ deleted ${deleted}`);
      }),
    );

  api("grade", "grade one thread (--thread) or a JSONL file of threads (--threads) with a grader")
    .argument("<key>", "the grader key, or key@version to grade with that version", parseRef)
    .option("--thread <json>", "one thread {turns: [{role, content}], metadata?}: inline JSON (starting with {), or a file holding it")
    .option(
      "--threads <jsonl>",
      "a JSONL file (- reads stdin) of Gradebox threads, OpenAI chat lines or TRL prompt-completion lines, streamed in batches; exits 1 when any line failed",
    )
    .addOption(metadataColumnsOption())
    .option("-o, --out <jsonl>", "write one result per line here (default: stdout)")
    .option("--batch <n>", "threads per request", wholeNumber, 256)
    .option(
      "--deadline-ms <n>",
      "with --threads: each request answers within n ms, the threads it did not finish abstained with DEADLINE_EXCEEDED",
      deadlineMs,
    )
    .option(
      "--group-by <field>",
      "with --threads: the metadata field that groups threads (e.g. prompt_id) for a group grader; a group's lines must be next to each other",
    )
    .addOption(
      new Option(
        "--on-unavailable <mode>",
        "judge and endpoint graders: a model or endpoint that does not answer is an error (default) or an abstention",
      ).choices(["error", "abstain"]),
    )
    .option("--fail-on-abstain", "with --threads: exit 1 when any line abstained (by default only errors fail the run)")
    .action(async ({ key, version }: Ref, opts: GradeOptions, command: Command) => {
      if (!opts.thread === !opts.threads) command.error("error: pass exactly one of --thread <json> or --threads <jsonl>");
      if (opts.thread) {
        for (const [given, flag] of [
          [opts.deadlineMs, "--deadline-ms"],
          [opts.groupBy, "--group-by"],
          [opts.failOnAbstain, "--fail-on-abstain"],
        ] as const) {
          if (given !== undefined) command.error(`error: ${flag} is for --threads (one thread is a score, an error or an abstention)`);
        }
        const thread = (await readThreadOption(opts.thread)) as WireThread;
        return run(opts, async () => {
          const res = await client(opts)
            .graders.grade({ graderKey: key, thread, version, onUnavailable: opts.onUnavailable })
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
        });
      }
      return run(opts, async () => {
        const graders = client(opts).graders;
        const { deadlineMs, groupBy, onUnavailable } = opts;
        const summary = await gradeFile(
          async (threads) => (await graders.gradeBatch({ graderKey: key, threads, version, deadlineMs, groupBy, onUnavailable })).results,
          {
            threads: opts.threads as string,
            out: opts.out,
            batch: opts.batch,
            quiet: !!opts.json,
            metadataColumns: opts.metadataColumns,
            groupBy,
          },
        );
        // stdout carries the results when there is no --out, and under --json always (so it is
        // JSONL, or empty): the summary goes to stderr then
        if (opts.json) console.error(JSON.stringify({ summary }));
        else if (opts.out) console.log(summaryText(summary));
        else console.error(summaryText(summary));
        if (failed(summary, !!opts.failOnAbstain)) process.exitCode = EXIT_FAILED;
      });
    });

  addJudgeCommands(program);
  addEndpointCommands(program);
  addCodeCommands(program);
  addSecretCommands(program);
  return program;
}
