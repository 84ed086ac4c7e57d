// `gradebox code …`: code-execution graders, which run the completion's program against the tests
// in each thread's metadata (docs/code-graders.md).

import { type Command, InvalidArgumentError } from "commander";
import type { CodeDefinition, CreateCodeParams } from "../sdk/index.ts";
import { type ApiOptions, client, printJson, run, wholeNumber, withApiOptions } from "./api.ts";

/** A code grader's definition, as `get` shows it. */
export function describeCode(c: CodeDefinition): string {
  const { cpuMs, memoryMb, outputBytes } = c.limits;
  const compare = c.compare === "float" ? `float (abs ${c.absTol}, rel ${c.relTol})` : c.compare;
  return (
    `  code grader: ${c.languages.join(", ")}; program: ${c.extract}; tests: ${c.tests}${c.testsKey ? ` at metadata.${c.testsKey}` : ""}` +
    `\n  stdout compared ${compare}; score: ${c.scoring}; at most ${c.maxTests} tests an item` +
    `\n  per test: ${cpuMs} ms CPU, ${memoryMb} MB, ${outputBytes} bytes of output`
  );
}

const oneOf =
  <T extends string>(values: readonly T[]) =>
  (v: string): T => {
    if (!values.includes(v as T)) throw new InvalidArgumentError(`it must be one of ${values.join(", ")}`);
    return v as T;
  };
const tolerance = (v: string) => {
  const n = Number(v);
  if (v.trim() === "" || !(n >= 0)) throw new InvalidArgumentError("it must be a number from 0");
  return n;
};

type Languages = NonNullable<CreateCodeParams["languages"]>;

export function addCodeCommands(program: Command): void {
  const code = program
    .command("code")
    .description("code-execution graders: the completion's program run against the tests in its metadata");

  withApiOptions(
    code
      .command("create")
      .description("create a code grader (every option has a default; grade with it as with any grader: `gradebox grade`)")
      .argument("<key>", "the grader key")
      .option("--language <lang...>", "python, javascript and/or typescript, the first for untagged or unfenced programs (default python)")
      .option("--extract <rule>", "fenced_or_whole (default), fenced or whole", oneOf(["fenced", "fenced_or_whole", "whole"] as const))
      .option("--tests <kind>", "auto (default), stdin, assert or call", oneOf(["auto", "stdin", "assert", "call"] as const))
      .option("--tests-key <path>", "where in metadata the tests are, e.g. reward_model.ground_truth (default: metadata itself)")
      .option("--compare <mode>", "whitespace (default), exact or float", oneOf(["exact", "whitespace", "float"] as const))
      .option("--abs-tol <x>", "float: the absolute tolerance (default 1e-6)", tolerance)
      .option("--rel-tol <x>", "float: the relative tolerance (default 1e-6)", tolerance)
      .option("--all-or-nothing", "score 1 only when every test passes (default: the fraction passed)")
      .option("--cpu-ms <n>", "CPU time per test, ms (default 2000, at most 10000)", wholeNumber)
      .option("--memory-mb <n>", "memory per test, MB (default 256, at most 1024)", wholeNumber)
      .option(
        "--output-bytes <n>",
        "the output limit per test: bytes of stdout (and of stderr) past which the run stops with output_limit (default 65536)",
        wholeNumber,
      )
      .option("--max-tests <n>", "the most tests an item may carry (default 32, at most 100)", wholeNumber)
      .option("-d, --description <text>", "what it scores"),
  ).action(
    (
      key: string,
      opts: ApiOptions & {
        language?: string[];
        extract?: CreateCodeParams["extract"];
        tests?: CreateCodeParams["tests"];
        testsKey?: string;
        compare?: CreateCodeParams["compare"];
        absTol?: number;
        relTol?: number;
        allOrNothing?: boolean;
        cpuMs?: number;
        memoryMb?: number;
        outputBytes?: number;
        maxTests?: number;
        description?: string;
      },
    ) =>
      run(opts, async () => {
        const limits = { cpuMs: opts.cpuMs, memoryMb: opts.memoryMb, outputBytes: opts.outputBytes };
        const g = await client(opts).graders.create.code({
          key,
          description: opts.description,
          languages: opts.language as Languages | undefined,
          extract: opts.extract,
          tests: opts.tests,
          testsKey: opts.testsKey,
          compare: opts.compare,
          absTol: opts.absTol,
          relTol: opts.relTol,
          scoring: opts.allOrNothing ? "all_or_nothing" : undefined,
          limits: Object.values(limits).some((v) => v !== undefined) ? limits : undefined,
          maxTests: opts.maxTests,
        });
        if (opts.json) return printJson(g);
        console.log(`✓ created ${g.key} (code grader)`);
        if (g.code) console.log(describeCode(g.code));
      }),
  );
}
