// `gradebox models …` (the OpenAI-compatible endpoints a project's judges call) and
// `gradebox judge …` (create binary, prebuilt and rubric judges; show the prompt a judge sends).

import { type Command, Option } from "commander";
import type { CannotAssessStrategy, GraderWithSource, Model, PrebuiltJudgeType, RubricCriterionInput, WireThread } from "../sdk/index.ts";
import {
  type ApiOptions,
  client,
  fraction,
  nameValue,
  printJson,
  readInput,
  readJsonFile,
  readThreadOption,
  run,
  usageError,
  wholeNumber,
  withApiOptions,
} from "./api.ts";

const PREBUILT: PrebuiltJudgeType[] = ["FAITHFULNESS", "CONTEXT_RELEVANCY", "ANSWER_RELEVANCY"];
const CANNOT_ASSESS: CannotAssessStrategy[] = ["skip", "zero", "partial", "fail"];

function describeModel(m: Model): string {
  const key = m.apiKeySecret ? `key from secret ${m.apiKeySecret}` : m.apiKeyEnv ? `key from ${m.apiKeyEnv}` : "no key";
  const extras = [`concurrency ${m.maxConcurrency}`, `timeout ${m.timeoutMs}ms`, key];
  return `${m.key.padEnd(20)} ${m.model.padEnd(24)} ${m.baseURL}  (${extras.join(", ")})`;
}

function printCreated(g: GraderWithSource, opts: ApiOptions): void {
  if (opts.json) {
    printJson(g);
    return;
  }
  console.log(`✓ created ${g.key} (${g.judge?.type ?? "judge"} judge, model ${g.judge?.model ?? "?"})`);
  for (const w of g.warnings) console.log(`  warning: ${w}`);
}

export function addJudgeCommands(program: Command): void {
  const models = program.command("models").description("manage judge models: OpenAI-compatible endpoints the project's judges call");

  withApiOptions(models.command("create").description("register a model (the server's egress policy must allow its address)"))
    .argument("<key>", "the model key judges refer to")
    .requiredOption("--base-url <url>", "the API root before /chat/completions, e.g. http://vllm.internal:8000/v1")
    .requiredOption("--model <name>", "the model name sent in each request")
    .option("--api-key-secret <name>", "the project secret holding the API key (see `gradebox secrets set`)")
    .addOption(
      new Option(
        "--api-key-env <var>",
        "instead: a server environment variable (GRADEBOX_SECRET_…) holding the API key, which the operator granted to this project",
      ).conflicts("apiKeySecret"),
    )
    .option("--max-concurrency <n>", "requests in flight at once (default 8)", wholeNumber)
    .option("--timeout-ms <n>", "per attempt, ms (default 60000)", wholeNumber)
    .action(
      (
        key: string,
        opts: ApiOptions & {
          baseUrl: string;
          model: string;
          apiKeySecret?: string;
          apiKeyEnv?: string;
          maxConcurrency?: number;
          timeoutMs?: number;
        },
      ) =>
        run(opts, async () => {
          const m = await client(opts).models.create({
            key,
            baseURL: opts.baseUrl,
            model: opts.model,
            apiKeySecret: opts.apiKeySecret,
            apiKeyEnv: opts.apiKeyEnv,
            maxConcurrency: opts.maxConcurrency,
            timeoutMs: opts.timeoutMs,
          });
          if (opts.json) return printJson(m);
          console.log(`✓ created model ${m.key}: ${m.model} at ${m.baseURL}`);
        }),
    );

  withApiOptions(models.command("list").description("list the project's models")).action((opts: ApiOptions) =>
    run(opts, async () => {
      const list = await client(opts).models.list();
      if (opts.json) return printJson(list);
      if (list.length === 0) return console.log("no models");
      for (const m of list) console.log(describeModel(m));
    }),
  );

  withApiOptions(models.command("get").description("show one model"))
    .argument("<key>", "the model key")
    .action((key: string, opts: ApiOptions) =>
      run(opts, async () => {
        const m = await client(opts).models.get({ modelKey: key });
        if (opts.json) return printJson(m);
        console.log(describeModel(m));
      }),
    );

  withApiOptions(models.command("delete").description("delete a model (refused while a grader uses it)"))
    .argument("<key>", "the model key")
    .action((key: string, opts: ApiOptions) =>
      run(opts, async () => {
        await client(opts).models.delete({ modelKey: key });
        if (opts.json) return printJson({ deleted: key });
        console.log(`✓ deleted model ${key}`);
      }),
    );

  const judge = program.command("judge").description("AI judge graders: create them, and show the prompt they send");
  const create = judge.command("create").description("create a judge grader (grade it with `gradebox grade`)");
  const judgeCommand = (name: string, description: string) =>
    withApiOptions(create.command(name).description(description))
      .argument("<key>", "the grader key")
      .requiredOption("-m, --model <model-key>", "the key of one of the project's models (see `gradebox models list`)")
      .option("-d, --description <text>", "what it scores");

  judgeCommand("binary", "PASS (1) or FAIL (0) against natural-language criteria")
    .requiredOption("-c, --criteria <text>", "what a completion must do to PASS")
    .option("--template-file <file>", "a Handlebars template for the whole prompt (default: the built-in one)")
    .option(
      "--var <name=value>",
      "a value the template reads as {{template_variables.name}} (repeatable)",
      nameValue("name=value"),
      {} as Record<string, string>,
    )
    .action(
      async (
        key: string,
        opts: ApiOptions & { model: string; criteria: string; templateFile?: string; var: Record<string, string>; description?: string },
      ) => {
        const template = opts.templateFile ? await readInput(opts.templateFile) : undefined;
        await run(
          opts,
          async () =>
            printCreated(
              await client(opts).graders.create.binaryJudge({
                key,
                judgeModel: opts.model,
                criteria: opts.criteria,
                template,
                templateVariables: Object.keys(opts.var).length ? opts.var : undefined,
                description: opts.description,
              }),
              opts,
            ),
          template,
        );
      },
    );

  judgeCommand("prebuilt", "a pre-built RAG judge (context comes from the thread's document turns)")
    .addOption(new Option("-t, --type <type>", "the metric").choices(PREBUILT).makeOptionMandatory())
    .action((key: string, opts: ApiOptions & { model: string; type: PrebuiltJudgeType; description?: string }) =>
      run(opts, async () =>
        printCreated(
          await client(opts).graders.create.prebuiltJudge({ key, judgeModel: opts.model, type: opts.type, description: opts.description }),
          opts,
        ),
      ),
    );

  judgeCommand("rubric", "weighted rubric criteria, each MET / UNMET / CANNOT_ASSESS (or one of its options)")
    .requiredOption("--criteria-file <file>", "a JSON array of {name, requirement, weight?, options?}")
    .addOption(new Option("--cannot-assess <strategy>", "what a CANNOT_ASSESS verdict counts as (default skip)").choices(CANNOT_ASSESS))
    .option("--partial-credit <credit>", "the credit of a CANNOT_ASSESS criterion under --cannot-assess partial (default 0.5)", fraction)
    .action(
      async (
        key: string,
        opts: ApiOptions & {
          model: string;
          criteriaFile: string;
          cannotAssess?: CannotAssessStrategy;
          partialCredit?: number;
          description?: string;
        },
      ) => {
        const criteria = await readJsonFile(opts.criteriaFile);
        if (!Array.isArray(criteria)) usageError(`${opts.criteriaFile} must hold a JSON array of {name, requirement, weight?, options?}`);
        await run(opts, async () =>
          printCreated(
            await client(opts).graders.create.rubricJudge({
              key,
              judgeModel: opts.model,
              criteria: criteria as RubricCriterionInput[],
              cannotAssess: opts.cannotAssess,
              partialCredit: opts.partialCredit,
              description: opts.description,
            }),
            opts,
          ),
        );
      },
    );

  withApiOptions(judge.command("prompt").description("show the prompt a judge sends for a thread (no model is called)"))
    .argument("<key>", "the judge grader key")
    .requiredOption(
      "--thread <json>",
      "one thread {turns: [{role, content}], metadata?}: inline JSON (starting with {), or a file holding it",
    )
    .action(async (key: string, opts: ApiOptions & { thread: string }) => {
      const thread = (await readThreadOption(opts.thread)) as WireThread;
      await run(opts, async () => {
        const { messages } = await client(opts).graders.prompt({ graderKey: key, thread });
        if (opts.json) return printJson({ messages });
        console.log(messages.map((m) => `── ${m.role} ──\n${m.content}`).join("\n\n"));
      });
    });
}
