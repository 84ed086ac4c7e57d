// The deployment artifacts: Dockerfile, .dockerignore and the Kubernetes manifests in deploy/k8s,
// parsed and checked against each other, against the server's own code (its port, its shutdown
// timers, its limits, what it loads at run time) and against docs/DEPLOY.md. Nothing is built or
// applied: each checker returns a list of problems, the real files must have none, and the
// mutation tests prove that each checker rejects a copy with one key field broken.

import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, posix, relative, resolve, sep } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { memoryBounds } from "../sandbox/worker/memory.ts";
import { loadConfig } from "../server/config.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const read = (path: string) => readFileSync(join(root, path), "utf8");
const K8S = "deploy/k8s";
const MiB = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// The numbers the checks rest on

/**
 * Resident memory (MiB) measured in this repository, which the pod's memory limit is computed
 * from (docs/DEPLOY.md): docs/benchmarks.md, `rssWith1000GradersByProcessMB` at
 * commit 64da0ba (1,000 graders invoked, 2 grading workers: api 410, validation worker 241,
 * other 19 = esbuild's service), and an idle grading worker as test/memory.test.ts prints it
 * ("# worker RSS: 100 MB before"), and the Python template a worker keeps once it ran a Python grader
 * or validation (docs/benchmarks.md, "Python graders"). They are copied here from those runs, not
 * measured by this test.
 */
const MEASURED_MIB = { api: 410, validationWorker: 241, esbuild: 19, idleGradingWorker: 100, pythonTemplate: 233 };

/**
 * What one pod may hold. A grading worker is bounded by its watchdog (sandbox/worker/watchdog.ts): idle,
 * it is replaced once its RSS passes baseline + warm heap + max(128 MB, 2 × isolate limit); during
 * a call it is killed once the call grew it by 2 × isolate limit + 64 MB. Warm heap is at most
 * GRADEBOX_WARM_HEAP_MB.
 */
function podMemoryMiB(workers: number, memoryMb: number, warmHeapMb: number) {
  // the validation worker and every grading worker hold a Python template once Python reached them
  const fixed = MEASURED_MIB.api + MEASURED_MIB.validationWorker + MEASURED_MIB.pythonTemplate + MEASURED_MIB.esbuild;
  const perWorker =
    MEASURED_MIB.idleGradingWorker + MEASURED_MIB.pythonTemplate + warmHeapMb + Math.max(128, 2 * memoryMb) + (2 * memoryMb + 64);
  return { fixed, perWorker, total: fixed + workers * perWorker };
}

/** Seconds from SIGTERM to the server's forced exit, read from server/main.ts. */
function forceExitSeconds(): number {
  const match = /setTimeout\(\(\)\s*=>\s*process\.exit\(1\),\s*([\d_]+)\s*\)/.exec(read("server/main.ts"));
  assert.ok(match, "server/main.ts no longer has `setTimeout(() => process.exit(1), <ms>)`: update forceExitSeconds");
  return Number(match[1].replaceAll("_", "")) / 1000;
}

/** The largest GRADEBOX_TIMEOUT_MS the configuration accepts, in seconds. */
const MAX_TIMEOUT_S = 60;

// ---------------------------------------------------------------------------------------------
// The Dockerfile

interface Instruction {
  op: string;
  args: string;
  line: number;
}
interface Stage {
  image: string;
  name?: string;
  body: Instruction[];
}
interface Dockerfile {
  stages: Stage[];
}

function parseDockerfile(text: string): Dockerfile {
  const instructions: Instruction[] = [];
  let buffer = "";
  let start = 0;
  text.split("\n").forEach((raw, i) => {
    const line = raw.replace(/\r$/, "");
    if (/^\s*#/.test(line) || (!buffer && !line.trim())) return; // comments (also inside a continuation) and blank lines
    if (!buffer) start = i + 1;
    if (/\\\s*$/.test(line)) {
      buffer += `${line.replace(/\\\s*$/, "")} `;
      return;
    }
    buffer += line;
    const match = /^\s*(\w+)\s*([\s\S]*)$/.exec(buffer);
    if (match) instructions.push({ op: match[1].toUpperCase(), args: match[2].trim(), line: start });
    buffer = "";
  });
  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.op === "FROM") {
      const words = ins.args.split(/\s+/).filter((w) => !w.startsWith("--"));
      const image = words[0].replace(
        /\$\{(\w+)\}|\$(\w+)/g,
        (_, a: string | undefined, b: string | undefined) => globalArgs[a ?? b ?? ""] ?? "",
      );
      stages.push({ image, name: words[1]?.toUpperCase() === "AS" ? words[2] : undefined, body: [] });
    } else if (stages.length > 0) {
      stages[stages.length - 1].body.push(ins);
    } else if (ins.op === "ARG") {
      const [name, value = ""] = ins.args.split("=");
      globalArgs[name.trim()] = value.trim();
    }
  }
  return { stages };
}

/** The exec form (`["a", "b"]`) of CMD, ENTRYPOINT or HEALTHCHECK CMD; undefined for the shell form. */
function execForm(args: string): string[] | undefined {
  if (!args.trim().startsWith("[")) return undefined;
  const parsed: unknown = JSON.parse(args);
  return Array.isArray(parsed) && parsed.every((a) => typeof a === "string") ? parsed : undefined;
}

function stageEnv(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const ins of stage.body.filter((i) => i.op === "ENV")) {
    if (!/^\w+=/.test(ins.args)) {
      const [name, ...rest] = ins.args.split(/\s+/);
      env[name] = rest.join(" ");
      continue;
    }
    for (const m of ins.args.matchAll(/(\w+)=("([^"]*)"|'([^']*)'|\S*)/g)) env[m[1]] = m[3] ?? m[4] ?? m[2];
  }
  return env;
}

interface Copy {
  from?: string;
  sources: string[];
  dest: string;
}
function stageCopies(stage: Stage): Copy[] {
  return stage.body
    .filter((i) => i.op === "COPY" || i.op === "ADD")
    .map((i) => {
      const words = execForm(i.args) ?? i.args.split(/\s+/);
      const from = words.find((w) => w.startsWith("--from="))?.slice("--from=".length);
      const paths = words.filter((w) => !w.startsWith("--"));
      return { from, sources: paths.slice(0, -1).map((s) => s.replace(/^\.\//, "").replace(/\/$/, "") || "."), dest: paths.at(-1) ?? "" };
    });
}

/** Whether .dockerignore keeps `path` (relative, with /) out of the build context. */
function dockerignored(dockerignore: string, path: string): boolean {
  const toRegExp = (glob: string) =>
    new RegExp(
      `^${glob
        .split(/(\*\*\/|\*\*|\*|\?)/)
        .map((part) =>
          part === "**/"
            ? "(?:.*/)?"
            : part === "**"
              ? ".*"
              : part === "*"
                ? "[^/]*"
                : part === "?"
                  ? "[^/]"
                  : part.replace(/[.+^${}()|[\]\\]/g, "\\$&"),
        )
        .join("")}$`,
    );
  const rules = dockerignore
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"))
    .map((l) => {
      const negate = l.startsWith("!");
      return {
        negate,
        re: toRegExp(
          (negate ? l.slice(1) : l)
            .trim()
            .replace(/^\.?\//, "")
            .replace(/\/$/, ""),
        ),
      };
    });
  const parts = path.split("/");
  const candidates = parts.map((_, i) => parts.slice(0, i + 1).join("/")); // a pattern on a directory covers what is in it
  let ignored = false;
  for (const rule of rules) if (candidates.some((c) => rule.re.test(c))) ignored = !rule.negate;
  return ignored;
}

/** The image's user, port and command, for the manifests' cross-checks. */
function imageFacts(df: Dockerfile) {
  const final = df.stages.at(-1);
  const user = final?.body
    .filter((i) => i.op === "USER")
    .at(-1)
    ?.args.split(":")[0];
  const cmd = final?.body.filter((i) => i.op === "CMD").at(-1);
  const workdir = final?.body.filter((i) => i.op === "WORKDIR").reduce((dir, i) => posix.resolve(dir, i.args), "/") ?? "/";
  return {
    workdir,
    uid: user !== undefined && /^\d+$/.test(user) ? Number(user) : undefined,
    port: Number(final ? stageEnv(final).GRADEBOX_PORT : Number.NaN),
    exposed: (final?.body.filter((i) => i.op === "EXPOSE") ?? []).flatMap((i) => i.args.split(/\s+/).map((p) => Number(p.split("/")[0]))),
    cmd: cmd ? execForm(cmd.args) : undefined,
  };
}

/** The compiled tree the image runs: where it goes, the script that builds it, and what it is built from. */
interface Compiled {
  dir: string;
  builder: string;
  /** the directories (and files) of the checkout the builder reads: a stage that runs it needs them */
  inputs: string[];
}

interface DockerContext {
  dockerignore: string;
  /** files (and directories) the server reads or imports at run time, relative to the repo */
  runtimePaths: Map<string, string>;
  /** package.json scripts.start */
  startScript: string;
  /** the server's default port (server/config.ts) */
  defaultPort: number;
  /** files in the build context, relative to the repo (a COPY of a missing one fails the build) */
  exists: (path: string) => boolean;
  compiled: Compiled;
}

const within = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);
const stageWorkdir = (stage: Stage) => stage.body.filter((i) => i.op === "WORKDIR").reduce((dir, i) => posix.resolve(dir, i.args), "/");

const NPM_INSTALL = /\b(npm\s+(ci|install|i|add)|yarn\s+(install|add)|pnpm\s+(install|i|add))\b/;

function checkDockerfile(df: Dockerfile, ctx: DockerContext): string[] {
  const problems: string[] = [];
  const { stages } = df;
  if (stages.length < 2) problems.push(`FROM: a multi-stage build needs at least 2 stages, found ${stages.length}`);
  const final = stages.at(-1);
  if (!final) return problems;
  for (const stage of stages) {
    if (!/^node:24([.-]|$)/.test(stage.image)) problems.push(`FROM ${stage.image}: the server needs Node 24 (package.json engines)`);
  }
  // dependencies: production only, installed in a build stage and copied
  stages.forEach((stage, index) => {
    for (const run of stage.body.filter((i) => i.op === "RUN" && NPM_INSTALL.test(i.args))) {
      if (stage === final)
        problems.push(`RUN (line ${run.line}): the final stage installs packages; copy node_modules from the build stage`);
      else if (!/--omit[= ]dev\b|--production\b|--only[= ]prod/.test(run.args)) {
        problems.push(`RUN (line ${run.line}): \`${run.args}\` installs devDependencies; add --omit=dev`);
      }
      if (/\bnpm\s+ci\b/.test(run.args) && !stageCopies(stage).some((c) => c.sources.includes("package-lock.json"))) {
        problems.push(`RUN (line ${run.line}): npm ci needs package-lock.json copied into stage ${stage.name ?? index}`);
      }
    }
  });
  const earlier = new Set(stages.slice(0, -1).flatMap((s, i) => [String(i), ...(s.name ? [s.name] : [])]));
  const finalCopies = stageCopies(final);
  const modulesCopied = finalCopies.some(
    (c) => c.from !== undefined && earlier.has(c.from) && c.sources.some((s) => s.endsWith("node_modules")),
  );
  if (!modulesCopied) problems.push("COPY --from: the final stage does not copy node_modules from a build stage");
  // the user: numeric (Kubernetes' runAsNonRoot can only verify a numeric UID) and not root
  const user = final.body.filter((i) => i.op === "USER").at(-1)?.args;
  if (!user) problems.push("USER: the final stage runs as root (no USER)");
  else if (!/^\d+(:\d+)?$/.test(user)) problems.push(`USER ${user}: use a numeric UID, which runAsNonRoot can verify`);
  else if (Number(user.split(":")[0]) === 0) problems.push("USER 0: the final stage runs as root");
  // the command: package.json's start, in exec form (node is PID 1 and gets SIGTERM itself)
  const entrypoint = final.body.filter((i) => i.op === "ENTRYPOINT").at(-1);
  const cmd = final.body.filter((i) => i.op === "CMD").at(-1);
  const argv = [
    ...(entrypoint ? (execForm(entrypoint.args) ?? ["<shell form>"]) : []),
    ...(cmd ? (execForm(cmd.args) ?? ["<shell form>"]) : []),
  ];
  if (argv.includes("<shell form>"))
    problems.push("CMD/ENTRYPOINT: use the exec form: in the shell form /bin/sh is PID 1 and SIGTERM never reaches node");
  if (!argv.includes("--no-node-snapshot")) problems.push("CMD: node needs --no-node-snapshot (isolated-vm on Node 24)");
  if (argv.join(" ") !== ctx.startScript)
    problems.push(`CMD: \`${argv.join(" ")}\` is not package.json's start script \`${ctx.startScript}\``);
  // plain node on the compiled tree: no loader compiling TypeScript in the server or its workers
  const loader = argv.find((a) =>
    /\btsx\b|^--(import|loader|experimental-loader|require)$|^-r$|^--experimental-(strip|transform)-types$/.test(a),
  );
  if (loader)
    problems.push(`CMD: \`${loader}\` compiles TypeScript at run time; run the compiled tree (${ctx.compiled.dir}/) with plain node`);
  const script = argv.find((a) => /\.[cm]?[jt]s$/.test(a));
  if (!script || !within(posix.normalize(script), ctx.compiled.dir))
    problems.push(`CMD: it runs ${script ?? "no script"}, not a file of the compiled tree ${ctx.compiled.dir}/`);
  const env = stageEnv(final);
  if (env.GRADEBOX_HOST !== "0.0.0.0") problems.push("ENV GRADEBOX_HOST=0.0.0.0 is missing: the server listens on 127.0.0.1 by default");
  const port = env.GRADEBOX_PORT ? Number(env.GRADEBOX_PORT) : ctx.defaultPort;
  if (!imageFacts(df).exposed.includes(port)) problems.push(`EXPOSE: the server listens on ${port}, which is not exposed`);
  const healthcheck = final.body.filter((i) => i.op === "HEALTHCHECK").at(-1);
  if (!healthcheck || /^NONE\b/i.test(healthcheck.args)) problems.push("HEALTHCHECK: missing");
  else {
    const command = /\bCMD\s+([\s\S]*)$/.exec(healthcheck.args)?.[1] ?? "";
    if (!command.includes("/healthz")) problems.push("HEALTHCHECK: it does not ask /healthz");
    if (/\b(curl|wget)\b/.test(command)) problems.push("HEALTHCHECK: slim images have no curl or wget; ask with node");
  }
  const stopsignal = final.body.filter((i) => i.op === "STOPSIGNAL").at(-1)?.args;
  if (stopsignal !== "SIGTERM") problems.push(`STOPSIGNAL: ${stopsignal ?? "missing"}; the server drains on SIGTERM`);
  // every COPY from the context has its files; what the server loads at run time is in the image
  for (const copy of stages.flatMap(stageCopies).filter((c) => c.from === undefined)) {
    for (const source of copy.sources) {
      if (!ctx.exists(source)) problems.push(`COPY ${source}: no such file in the build context`);
      else if (dockerignored(ctx.dockerignore, source)) problems.push(`COPY ${source}: .dockerignore excludes it`);
    }
  }
  // the compiled tree: built in an earlier stage from the sources, copied into the final one
  const { dir, builder, inputs } = ctx.compiled;
  const buildIndex = stages.findIndex((stage) => stage !== final && stage.body.some((i) => i.op === "RUN" && i.args.includes(builder)));
  const buildStage = stages[buildIndex];
  if (!buildStage) problems.push(`RUN ${builder}: no build stage runs it, so the image has no compiled tree (${dir}/)`);
  else {
    const names = [String(buildIndex), ...(buildStage.name ? [buildStage.name] : [])];
    const from = posix.resolve(stageWorkdir(buildStage), dir);
    const to = posix.resolve(stageWorkdir(final), dir);
    const copied = finalCopies.some(
      (c) =>
        c.from !== undefined &&
        names.includes(c.from) &&
        c.sources.some((s) => posix.resolve(stageWorkdir(buildStage), s) === from) &&
        posix.resolve(stageWorkdir(final), c.dest) === to,
    );
    if (!copied) problems.push(`COPY --from=${names.at(-1)}: the final stage does not copy ${dir} from the build stage to ${to}`);
    const buildModules = stageCopies(buildStage).some((c) => c.from !== undefined && c.sources.some((s) => s.endsWith("node_modules")));
    if (!buildModules && !buildStage.body.some((i) => i.op === "RUN" && NPM_INSTALL.test(i.args)))
      problems.push(`stage ${names.at(-1)}: ${builder} runs without node_modules (esbuild, tsx)`);
  }
  const buildCopies = buildStage ? stageCopies(buildStage).filter((c) => c.from === undefined) : [];
  const copiedFrom = (copies: Copy[], path: string) => copies.some((c) => c.sources.some((s) => s === "." || within(path, s)));
  for (const [path, from] of ctx.runtimePaths) {
    if (within(path, "node_modules")) {
      if (!modulesCopied) problems.push(`the image lacks ${path} (read by ${from})`);
      continue;
    }
    // build output: dist/app comes from the build stage (above); dist/console is the console a
    // checkout builds for itself, which the compiled server never reads (it has dist/app/console)
    if (within(path, "dist")) continue;
    if (inputs.some((input) => within(path, input))) {
      // a source of the compiled tree: the build stage needs it, the final stage has its built form
      if (buildStage && !copiedFrom(buildCopies, path))
        problems.push(`the build stage lacks ${path}, which ${from} loads at run time: COPY it into the stage that runs ${builder}`);
      else if (dockerignored(ctx.dockerignore, path)) problems.push(`.dockerignore excludes ${path}, which ${from} loads at run time`);
      continue;
    }
    if (inputs.some((input) => within(from, input))) {
      problems.push(`the image lacks ${path}, which ${from} loads at run time: it is no input of ${builder}, so ${dir}/ has no copy of it`);
      continue;
    }
    if (
      !copiedFrom(
        finalCopies.filter((c) => c.from === undefined),
        path,
      )
    )
      problems.push(`the image lacks ${path}, which ${from} loads at run time: COPY it in the final stage`);
    else if (dockerignored(ctx.dockerignore, path)) problems.push(`.dockerignore excludes ${path}, which ${from} loads at run time`);
  }
  return problems;
}

/**
 * Every file the server, its workers, the console bundle and the `gradebox` command load at run
 * time (relative imports, `new URL(…, import.meta.url)`, dynamic imports), and every package
 * they import, each with a file that asks for it. Type-only imports are skipped.
 */
function runtimeClosure(entries: string[]): { paths: Map<string, string>; packages: Map<string, string> } {
  const paths = new Map<string, string>();
  const packages = new Map<string, string>();
  const specifiers = [
    /^\s*(?:import|export)\s+(?!type\b)(?:[\w*{}\s,$]+?\s+from\s+)?["']([^"']+)["']/gm,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
    /\bnew URL\(\s*["']([^"']+)["']\s*,\s*import\.meta\.url\s*\)/g,
    /\bimport\.meta\.resolve\(\s*["']([^"']+)["']\s*\)/g,
  ];
  const addPackage = (spec: string, from: string) => {
    const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0];
    if (!packages.has(name)) packages.set(name, from);
  };
  const addTree = (abs: string, from: string) => {
    const rel = relative(root, abs).split(sep).join("/");
    // bin/gradebox.js re-runs itself under the checkout's .node/ only when started by another Node than 24
    if (paths.has(rel) || rel.startsWith(".node/")) return;
    // the compiled twin a module names when it runs compiled (`make build` writes it from the .ts)
    if (rel.endsWith(".js") && !existsSync(abs) && existsSync(abs.replace(/\.js$/, ".ts"))) return;
    paths.set(rel, from);
    if (rel === "dist" || rel.startsWith("dist/")) return; // the build's output, whether built here or not: its sources are walked instead
    if (rel.startsWith("node_modules/")) return addPackage(rel.slice("node_modules/".length), from);
    if (!existsSync(abs)) return;
    if (statSync(abs).isDirectory()) {
      for (const name of readdirSync(abs)) addTree(join(abs, name), from);
      return;
    }
    if (!/\.(ts|js|mjs)$/.test(abs)) return;
    const source = readFileSync(abs, "utf8");
    for (const re of specifiers) {
      for (const [, spec] of source.matchAll(re)) {
        if (spec.startsWith("node:") || builtinModules.includes(spec)) continue;
        if (spec.startsWith(".")) addTree(resolve(dirname(abs), spec), rel);
        else if (spec !== "gradebox" && !spec.startsWith("gradebox/")) addPackage(spec, rel);
      }
    }
  };
  for (const entry of entries) addTree(join(root, entry), "the image's CMD");
  return { paths, packages };
}

/** Packages the run-time code imports must be dependencies: the image installs with --omit=dev. */
function checkRuntimeDependencies(
  packages: Map<string, string>,
  pkg: { dependencies?: Record<string, string>; devDependencies?: Record<string, string> },
): string[] {
  const problems: string[] = [];
  for (const [name, from] of packages) {
    if (pkg.dependencies?.[name]) continue;
    problems.push(
      pkg.devDependencies?.[name]
        ? `${from} imports ${name}, a devDependency: npm ci --omit=dev leaves it out of the image`
        : `${from} imports ${name}, which package.json does not list`,
    );
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// The Kubernetes manifests

type Labels = Record<string, string>;
interface Probe {
  httpGet?: { path?: string; port?: number | string };
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    resourceFieldRef?: { containerName?: string; resource: string; divisor?: string | number };
  };
}
interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  allowPrivilegeEscalation?: boolean;
  readOnlyRootFilesystem?: boolean;
  capabilities?: { drop?: string[]; add?: string[] };
}
interface Container {
  name: string;
  image?: string;
  ports?: Array<{ name?: string; containerPort: number }>;
  env?: EnvVar[];
  resources?: { requests?: Record<string, string | number>; limits?: Record<string, string | number> };
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command?: string[] }; sleep?: { seconds?: number } } };
  securityContext?: SecurityContext;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}
interface PodSpec {
  containers: Container[];
  terminationGracePeriodSeconds?: number;
  enableServiceLinks?: boolean;
  securityContext?: SecurityContext;
  topologySpreadConstraints?: Array<{ topologyKey: string; labelSelector?: { matchLabels?: Labels } }>;
  affinity?: {
    podAntiAffinity?: {
      requiredDuringSchedulingIgnoredDuringExecution?: Array<{ topologyKey: string; labelSelector?: { matchLabels?: Labels } }>;
      preferredDuringSchedulingIgnoredDuringExecution?: Array<{
        podAffinityTerm: { topologyKey: string; labelSelector?: { matchLabels?: Labels } };
      }>;
    };
  };
  volumes?: Array<{ name: string; emptyDir?: object }>;
}
interface Deployment {
  kind: "Deployment";
  apiVersion: string;
  metadata: { name: string };
  spec: {
    replicas?: number;
    selector: { matchLabels?: Labels };
    strategy?: { rollingUpdate?: { maxSurge?: string | number; maxUnavailable?: string | number } };
    template: { metadata: { labels?: Labels }; spec: PodSpec };
  };
}
interface Service {
  kind: "Service";
  apiVersion: string;
  metadata: { name: string };
  spec: { type?: string; selector?: Labels; ports: Array<{ port: number; targetPort?: number | string }> };
}
interface Hpa {
  kind: "HorizontalPodAutoscaler";
  apiVersion: string;
  metadata: { name: string };
  spec: {
    scaleTargetRef: { apiVersion?: string; kind: string; name: string };
    minReplicas?: number;
    maxReplicas: number;
    metrics?: Array<{ type: string; resource?: { name: string; target?: { type: string; averageUtilization?: number } } }>;
  };
}
interface Pdb {
  kind: "PodDisruptionBudget";
  apiVersion: string;
  metadata: { name: string };
  spec: { selector?: { matchLabels?: Labels }; maxUnavailable?: number | string; minAvailable?: number | string };
}
interface Secret {
  kind: "Secret";
  apiVersion: string;
  metadata: { name: string };
  stringData?: Record<string, string>;
  data?: Record<string, string>;
}
type Resource = { kind: string; apiVersion: string; metadata: { name: string } } | Deployment | Service | Hpa | Pdb | Secret;

interface Manifests {
  resources: Resource[];
  /** secret.example.yaml's documents */
  secretExamples: Resource[];
}

interface ManifestContext {
  /** the image's USER, the port the server listens on, and its ./data (WORKDIR/data) */
  image: { uid?: number; port: number; stateDir: string };
  forceExitS: number;
  maxTimeoutS: number;
  /** the configuration's defaults, for what the manifest leaves unset */
  defaults: { memoryMb: number; warmHeapMb: number };
}

function memoryBytes(q: string | number | undefined): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T)?$/.exec(String(q ?? ""));
  if (!m) return Number.NaN;
  const unit =
    { "": 1, Ki: 1024, Mi: MiB, Gi: 1024 * MiB, Ti: 1024 * 1024 * MiB, k: 1e3, K: 1e3, M: 1e6, G: 1e9, T: 1e12 }[m[2] ?? ""] ?? 1;
  return Number(m[1]) * unit;
}
function cpuCores(q: string | number | undefined): number {
  const m = /^(\d+(?:\.\d+)?)(m)?$/.exec(String(q ?? ""));
  return m ? Number(m[1]) / (m[2] ? 1000 : 1) : Number.NaN;
}
const selects = (selector: Labels | undefined, labels: Labels | undefined) =>
  !!selector && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);
/** `25%` of `n`, rounded up (maxSurge), or the number itself */
const scaled = (value: string | number | undefined, n: number, fallback: string) => {
  const v = String(value ?? fallback);
  return v.endsWith("%") ? Math.ceil((Number(v.slice(0, -1)) / 100) * n) : Number(v);
};

/** Seconds a preStop hook waits: exec `sleep N`, `sh -c "sleep N"`, `node -e "setTimeout(…, MS)"`, or the sleep action. */
function preStopSeconds(container: Container): number | undefined {
  const hook = container.lifecycle?.preStop;
  if (hook?.sleep?.seconds !== undefined) return hook.sleep.seconds;
  const command = hook?.exec?.command?.join(" ") ?? "";
  const sleep = /(?:^|[\s/;&])sleep\s+(\d+(?:\.\d+)?)s?\b/.exec(command);
  if (sleep) return Number(sleep[1]);
  const timeout = /setTimeout\([^,]*,\s*(\d+)\s*\)/.exec(command);
  return timeout ? Number(timeout[1]) / 1000 : undefined;
}

const envOf = (container: Container, name: string) => container.env?.find((e) => e.name === name);
const byKind = <T extends Resource>(resources: Resource[], kind: T["kind"]) => resources.filter((r): r is T => r.kind === kind);

/** The numbers DEPLOY.md states for these manifests: pod memory and peak PostgreSQL connections. */
function manifestSizing(m: Manifests, ctx: ManifestContext) {
  const deployment = byKind<Deployment>(m.resources, "Deployment")[0];
  const hpa = byKind<Hpa>(m.resources, "HorizontalPodAutoscaler")[0];
  const container = deployment?.spec.template.spec.containers.find((c) => c.name === "gradebox") as Container;
  const envInt = (name: string, fallback: number) => Number(envOf(container, name)?.value ?? fallback);
  // GRADEBOX_WORKERS: a number, or the CPU limit rounded up (resourceFieldRef)
  const workers = envInt("GRADEBOX_WORKERS", Math.ceil(cpuCores(container?.resources?.limits?.cpu)));
  const memory = podMemoryMiB(
    workers,
    envInt("GRADEBOX_MEMORY_MB", ctx.defaults.memoryMb),
    envInt("GRADEBOX_WARM_HEAP_MB", ctx.defaults.warmHeapMb),
  );
  const maxPods =
    (hpa?.spec.maxReplicas ?? 0) + scaled(deployment?.spec.strategy?.rollingUpdate?.maxSurge, hpa?.spec.maxReplicas ?? 0, "25%");
  const perNode = envInt("GRADEBOX_PG_POOL", 10) + 1;
  return { workers, memory, maxPods, perNode, connections: maxPods * perNode };
}

function checkManifests(m: Manifests, ctx: ManifestContext): string[] {
  const problems: string[] = [];
  const expected: Record<string, string> = {
    Deployment: "apps/v1",
    Service: "v1",
    HorizontalPodAutoscaler: "autoscaling/v2",
    PodDisruptionBudget: "policy/v1",
  };
  for (const [kind, apiVersion] of Object.entries(expected)) {
    const found = m.resources.filter((r) => r.kind === kind);
    if (found.length !== 1) problems.push(`${kind}: expected exactly one in the kustomization, found ${found.length}`);
    for (const r of found)
      if (r.apiVersion !== apiVersion) problems.push(`${kind} ${r.metadata.name}: apiVersion ${r.apiVersion}, expected ${apiVersion}`);
  }
  if (m.resources.some((r) => r.kind === "Secret"))
    problems.push("Secret: the kustomization must not ship a Secret (secret.example.yaml is a template)");
  const deployment = byKind<Deployment>(m.resources, "Deployment")[0];
  const hpa = byKind<Hpa>(m.resources, "HorizontalPodAutoscaler")[0];
  if (!deployment) return problems;

  // --- Deployment
  const pod = deployment.spec.template.spec;
  const labels = deployment.spec.template.metadata.labels;
  if (deployment.metadata.name !== "gradebox") problems.push(`Deployment: named ${deployment.metadata.name}, expected gradebox`);
  if (!selects(deployment.spec.selector.matchLabels, labels))
    problems.push("Deployment: spec.selector does not match the pod template's labels");
  if (deployment.spec.replicas !== undefined) {
    problems.push("Deployment: spec.replicas is set; the HPA owns the count (kubectl apply would reset it to spec.replicas)");
  }
  if (scaled(deployment.spec.strategy?.rollingUpdate?.maxUnavailable, 3, "25%") !== 0) {
    problems.push("Deployment: rollingUpdate.maxUnavailable must be 0 (a rollout never drops below capacity)");
  }
  const container = pod.containers.find((c) => c.name === "gradebox");
  if (!container) return [...problems, "Deployment: no container named gradebox"];
  const ports = container.ports ?? [];
  const containerPort = ports[0]?.containerPort;
  if (containerPort !== ctx.image.port)
    problems.push(`Deployment: containerPort ${containerPort}, but the image listens on ${ctx.image.port}`);
  const portOf = (port: number | string | undefined) =>
    typeof port === "string" ? ports.find((p) => p.name === port)?.containerPort : port;
  if (!container.image || /:latest$|^[^:]+$/.test(container.image))
    problems.push(`Deployment: image ${container.image} needs a version tag`);

  // env: the database and the metrics token from Secrets, the host and port, the workers
  const secretKeys = new Set(
    byKind<Secret>(m.secretExamples, "Secret").flatMap((s) =>
      Object.keys({ ...s.stringData, ...s.data }).map((k) => `${s.metadata.name}/${k}`),
    ),
  );
  const db = envOf(container, "GRADEBOX_DB");
  if (!db?.valueFrom?.secretKeyRef) problems.push("env GRADEBOX_DB: must come from a Secret (valueFrom.secretKeyRef), never a literal");
  for (const e of container.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    if (!ref) continue;
    if (!secretKeys.has(`${ref.name}/${ref.key}`))
      problems.push(`env ${e.name}: secret ${ref.name} key ${ref.key} is not in secret.example.yaml`);
    if (ref.optional) problems.push(`env ${e.name}: the secretKeyRef must not be optional`);
  }
  if (envOf(container, "GRADEBOX_HOST")?.value !== "0.0.0.0")
    problems.push("env GRADEBOX_HOST: must be 0.0.0.0 (the server listens on 127.0.0.1 by default)");
  const portEnv = envOf(container, "GRADEBOX_PORT");
  if (portEnv && Number(portEnv.value) !== containerPort)
    problems.push(`env GRADEBOX_PORT ${portEnv.value} differs from containerPort ${containerPort}`);
  if (pod.enableServiceLinks !== false) {
    problems.push(
      "enableServiceLinks: must be false, or the Service named gradebox injects GRADEBOX_PORT=tcp://… into the server's environment",
    );
  }
  const cpuLimit = cpuCores(container.resources?.limits?.cpu);
  const workers = envOf(container, "GRADEBOX_WORKERS");
  const field = workers?.valueFrom?.resourceFieldRef;
  if (!workers) problems.push("env GRADEBOX_WORKERS: unset, the server starts one worker per core of the node, not of the pod");
  else if (field) {
    if (
      field.resource !== "limits.cpu" ||
      String(field.divisor ?? "1") !== "1" ||
      (field.containerName && field.containerName !== container.name)
    ) {
      problems.push("env GRADEBOX_WORKERS: the resourceFieldRef must be this container's limits.cpu with divisor 1");
    }
  } else if (Number(workers.value) !== Math.ceil(cpuLimit)) {
    problems.push(`env GRADEBOX_WORKERS: ${workers.value} workers for a CPU limit of ${cpuLimit}`);
  }

  // resources: requests ≤ limits, and a memory limit that holds the workers the CPU limit gives
  for (const kind of ["cpu", "memory"] as const) {
    const parse = kind === "cpu" ? cpuCores : memoryBytes;
    const request = parse(container.resources?.requests?.[kind]);
    const limit = parse(container.resources?.limits?.[kind]);
    if (!(request > 0)) problems.push(`resources.requests.${kind}: missing`);
    if (!(limit > 0)) problems.push(`resources.limits.${kind}: missing`);
    if (request > limit) problems.push(`resources.requests.${kind} exceeds resources.limits.${kind}`);
  }
  const sizing = manifestSizing(m, ctx);
  const memoryLimitMiB = memoryBytes(container.resources?.limits?.memory) / MiB;
  if (!(memoryLimitMiB >= sizing.memory.total)) {
    problems.push(
      `resources.limits.memory: ${memoryLimitMiB} MiB is below the ${sizing.memory.total} MiB ${sizing.workers} workers may hold (docs/DEPLOY.md)`,
    );
  }

  // probes
  const probe = (name: "readinessProbe" | "livenessProbe" | "startupProbe", path: string, required: boolean) => {
    const p = container[name];
    if (!p) {
      if (required) problems.push(`${name}: missing`);
      return;
    }
    if (p.httpGet?.path !== path) problems.push(`${name}: httpGet path ${p.httpGet?.path}, expected ${path}`);
    if (portOf(p.httpGet?.port) !== containerPort)
      problems.push(`${name}: port ${p.httpGet?.port} is not the container port ${containerPort}`);
  };
  probe("readinessProbe", "/readyz", true);
  probe("livenessProbe", "/healthz", true); // never /readyz: a database outage must not restart every pod
  if (container.startupProbe) probe("startupProbe", container.startupProbe.httpGet?.path === "/readyz" ? "/readyz" : "/healthz", false);
  const budget = (p: Probe | undefined) => (p?.periodSeconds ?? 10) * (p?.failureThreshold ?? 3);
  if (container.livenessProbe && container.readinessProbe) {
    if (budget(container.livenessProbe) < 30)
      problems.push(`livenessProbe: restarts after ${budget(container.livenessProbe)} s of failures; allow at least 30`);
    if (budget(container.livenessProbe) <= budget(container.readinessProbe)) {
      problems.push("livenessProbe: must tolerate longer than the readinessProbe (take a pod out of the Service before restarting it)");
    }
    if ((container.livenessProbe.timeoutSeconds ?? 1) < 2) problems.push("livenessProbe: timeoutSeconds below 2");
  }

  // graceful shutdown: preStop, then SIGTERM; the grace period outlasts both and the longest grade
  const preStop = preStopSeconds(container);
  const grace = pod.terminationGracePeriodSeconds ?? 30;
  const needed = (preStop ?? 0) + ctx.forceExitS + ctx.maxTimeoutS;
  if (!(preStop && preStop > 0)) problems.push("lifecycle.preStop: a sleep is needed so the endpoint leaves the Service before SIGTERM");
  if (!(grace > needed)) {
    problems.push(
      `terminationGracePeriodSeconds: ${grace} must exceed preStop ${preStop ?? 0} + force exit ${ctx.forceExitS} + max time limit ${ctx.maxTimeoutS} = ${needed}`,
    );
  }

  // security
  const sc = { ...pod.securityContext, ...container.securityContext };
  if (sc.runAsNonRoot !== true) problems.push("securityContext.runAsNonRoot: must be true");
  if (sc.runAsUser === 0) problems.push("securityContext.runAsUser: 0 is root");
  if (sc.runAsUser !== undefined && ctx.image.uid !== undefined && sc.runAsUser !== ctx.image.uid) {
    problems.push(`securityContext.runAsUser ${sc.runAsUser} differs from the image's USER ${ctx.image.uid}`);
  }
  if (sc.runAsUser === undefined && ctx.image.uid === undefined) problems.push("securityContext: no numeric UID in the image or the pod");
  if (container.securityContext?.allowPrivilegeEscalation !== false)
    problems.push("securityContext.allowPrivilegeEscalation: must be false");
  if (!container.securityContext?.capabilities?.drop?.includes("ALL")) problems.push("securityContext.capabilities.drop: must include ALL");
  if (container.securityContext?.capabilities?.add?.length) problems.push("securityContext.capabilities.add: no capability is needed");
  if (container.securityContext?.readOnlyRootFilesystem === true) {
    // what the server writes (measured: a node as UID 10001 on PostgreSQL, everything else read-only)
    const writable: Array<[string, string]> = [
      [ctx.image.stateDir, "the first start against an empty database writes data/default.key (server/bootstrap.ts)"],
    ];
    for (const [path, why] of writable) {
      const mount = container.volumeMounts?.find((v) => v.mountPath === path);
      if (!mount || !pod.volumes?.some((v) => v.name === mount.name && v.emptyDir)) {
        problems.push(`volumeMounts: a read-only root needs an emptyDir at ${path}: ${why}`);
      }
    }
  }
  if (!envOf(container, "GRADEBOX_METRICS_TOKEN")?.valueFrom?.secretKeyRef) {
    problems.push("env GRADEBOX_METRICS_TOKEN: must come from a Secret; unset, each pod makes its own token in data/metrics.token");
  }

  // spread across nodes
  const spread =
    pod.topologySpreadConstraints?.some(
      (t) => t.topologyKey === "kubernetes.io/hostname" && selects(t.labelSelector?.matchLabels, labels),
    ) ||
    pod.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.some(
      (t) => t.topologyKey === "kubernetes.io/hostname" && selects(t.labelSelector?.matchLabels, labels),
    ) ||
    pod.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.some(
      (t) => t.podAffinityTerm.topologyKey === "kubernetes.io/hostname" && selects(t.podAffinityTerm.labelSelector?.matchLabels, labels),
    );
  if (!spread) problems.push("topologySpreadConstraints: nothing spreads the pods across nodes (kubernetes.io/hostname)");

  // --- Service
  for (const service of byKind<Service>(m.resources, "Service")) {
    if ((service.spec.type ?? "ClusterIP") !== "ClusterIP")
      problems.push(`Service ${service.metadata.name}: type ${service.spec.type}, expected ClusterIP`);
    if (!selects(service.spec.selector, labels))
      problems.push(`Service ${service.metadata.name}: its selector does not match the pod labels`);
    const port = service.spec.ports.find((p) => p.port === 80);
    if (!port) problems.push(`Service ${service.metadata.name}: no port 80`);
    else if (portOf(port.targetPort ?? port.port) !== containerPort) {
      problems.push(`Service ${service.metadata.name}: targetPort ${port.targetPort} is not the container port ${containerPort}`);
    }
  }

  // --- HorizontalPodAutoscaler
  if (hpa) {
    const ref = hpa.spec.scaleTargetRef;
    if (ref.kind !== "Deployment" || ref.name !== deployment.metadata.name || (ref.apiVersion && ref.apiVersion !== "apps/v1")) {
      problems.push(`HPA: scaleTargetRef ${ref.kind}/${ref.name} is not the Deployment ${deployment.metadata.name}`);
    }
    if (!((hpa.spec.minReplicas ?? 1) >= 3)) problems.push(`HPA: minReplicas ${hpa.spec.minReplicas ?? 1}, at least 3 are needed`);
    if (!(hpa.spec.maxReplicas >= (hpa.spec.minReplicas ?? 1))) problems.push("HPA: maxReplicas is below minReplicas");
    const cpu = hpa.spec.metrics?.find((x) => x.type === "Resource" && x.resource?.name === "cpu");
    const utilization = cpu?.resource?.target?.averageUtilization ?? 0;
    if (cpu?.resource?.target?.type !== "Utilization" || !(utilization > 0 && utilization <= 100)) {
      problems.push("HPA: no CPU Utilization metric with averageUtilization in (0, 100]");
    }
  }

  // --- PodDisruptionBudget
  for (const pdb of byKind<Pdb>(m.resources, "PodDisruptionBudget")) {
    if (!selects(pdb.spec.selector?.matchLabels, labels))
      problems.push(`PodDisruptionBudget ${pdb.metadata.name}: its selector does not match the pod labels`);
    const min = hpa?.spec.minReplicas ?? 1;
    const maxUnavailable = pdb.spec.maxUnavailable === undefined ? undefined : scaled(pdb.spec.maxUnavailable, min, "0");
    const minAvailable = pdb.spec.minAvailable === undefined ? undefined : scaled(pdb.spec.minAvailable, min, "0");
    const allows = maxUnavailable !== undefined ? maxUnavailable >= 1 : minAvailable !== undefined && minAvailable < min;
    if (!allows)
      problems.push(`PodDisruptionBudget ${pdb.metadata.name}: at ${min} replicas it lets no pod be evicted (drains would hang)`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Loading the real files

const loadYaml = (path: string): Resource[] =>
  parseAllDocuments(read(path)).map((doc) => {
    if (doc.errors.length) throw new Error(`${path}: ${doc.errors[0].message}`);
    return doc.toJS() as Resource;
  });

function loadManifests(): { manifests: Manifests; listed: string[]; kustomization: { resources?: string[]; namespace?: string } } {
  const kustomization = loadYaml(`${K8S}/kustomization.yaml`)[0] as unknown as { resources?: string[]; namespace?: string };
  const listed = kustomization.resources ?? [];
  return {
    manifests: { resources: listed.flatMap((f) => loadYaml(`${K8S}/${f}`)), secretExamples: loadYaml(`${K8S}/secret.example.yaml`) },
    listed,
    kustomization,
  };
}

const config = loadConfig({});
const packageJson = JSON.parse(read("package.json")) as {
  version: string;
  scripts: { start: string };
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};
/**
 * What the image's CMD runs (compiled: its sources), the build of the compiled tree, the console,
 * and the `gradebox` command's keys/serve.
 */
const RUNTIME_ENTRIES = ["server/main.ts", "scripts/build.ts", "console/app.ts", "bin/gradebox.js", "package.json"];
/** scripts/build.ts: its ROOMS, the console and the migrations, into dist/app. */
const COMPILED: Compiled = {
  dir: "dist/app",
  builder: "scripts/build.ts",
  inputs: ["server", "sandbox", "cli", "sdk", "console", "migrations", "scripts/build.ts"],
};

function dockerContext(): DockerContext {
  return {
    dockerignore: read(".dockerignore"),
    runtimePaths: runtimeClosure(RUNTIME_ENTRIES).paths,
    startScript: packageJson.scripts.start,
    defaultPort: config.port,
    exists: (path) => existsSync(join(root, path)),
    compiled: COMPILED,
  };
}

function manifestContext(df: Dockerfile): ManifestContext {
  const facts = imageFacts(df);
  return {
    image: { uid: facts.uid, port: Number.isFinite(facts.port) ? facts.port : config.port, stateDir: posix.join(facts.workdir, "data") },
    forceExitS: forceExitSeconds(),
    maxTimeoutS: MAX_TIMEOUT_S,
    defaults: { memoryMb: config.memoryMb, warmHeapMb: config.warmHeapMb },
  };
}

// ---------------------------------------------------------------------------------------------
// The real files pass

test("the Dockerfile: multi-stage, production dependencies, non-root, --no-node-snapshot, health check, everything the server loads", () => {
  const df = parseDockerfile(read("Dockerfile"));
  assert.deepEqual(checkDockerfile(df, dockerContext()), []);
  const facts = imageFacts(df);
  assert.equal(facts.uid, 10001);
  assert.deepEqual(facts.cmd, ["node", "--no-node-snapshot", "dist/app/server/main.js"]);
});

test("the run-time closure finds what the server loads, and every package it imports is a dependency", () => {
  const { paths, packages } = runtimeClosure(RUNTIME_ENTRIES);
  // the walk reaches the forked worker, its watchdog, the migrations and the console's files
  for (const path of ["sandbox/worker/worker.ts", "sandbox/worker/watchdog.ts", "sdk/graders.ts", "console/index.html", "cli/main.ts"]) {
    assert.ok(paths.has(path), `${path} is in the closure`);
  }
  assert.ok(
    [...paths.keys()].some((p) => /^migrations\/\d{4}_.+\.sql$/.test(p)),
    "the migrations are in the closure",
  );
  for (const name of ["fastify", "isolated-vm", "tsx", "esbuild", "highlight.js"]) assert.ok(packages.has(name), `${name} is imported`);
  assert.deepEqual(checkRuntimeDependencies(packages, packageJson), []);
});

test("the manifests: probes, resources, secrets, shutdown, security, Service, HPA, PDB agree", (t) => {
  const df = parseDockerfile(read("Dockerfile"));
  const ctx = manifestContext(df);
  const { manifests } = loadManifests();
  assert.deepEqual(checkManifests(manifests, ctx), []);
  const sizing = manifestSizing(manifests, ctx);
  t.diagnostic(
    `${sizing.workers} workers: ${sizing.memory.fixed} + ${sizing.workers} × ${sizing.memory.perWorker} = ${sizing.memory.total} MiB; ` +
      `up to ${sizing.maxPods} pods × ${sizing.perNode} = ${sizing.connections} PostgreSQL connections; force exit ${ctx.forceExitS} s`,
  );
});

test("the kustomization lists every manifest but the Secret template, and they all parse", () => {
  const { listed, kustomization, manifests } = loadManifests();
  const files = readdirSync(join(root, K8S)).filter((f) => /\.ya?ml$/.test(f));
  const expected = files.filter((f) => f !== "kustomization.yaml" && f !== "secret.example.yaml").sort();
  assert.deepEqual([...listed].sort(), expected, "every manifest is listed");
  assert.ok(!listed.includes("secret.example.yaml"), "the Secret template is not applied");
  assert.equal(kustomization.namespace, "gradebox");
  assert.ok(
    manifests.resources.every((r) => r.kind && r.apiVersion && r.metadata?.name),
    "every document has kind, apiVersion and a name",
  );
  // the template's values are valid configuration
  const secrets = byKind<Secret>(manifests.secretExamples, "Secret");
  const token = secrets.find((s) => s.metadata.name === "gradebox-metrics")?.stringData?.token;
  assert.doesNotThrow(() => loadConfig({ GRADEBOX_METRICS_TOKEN: token }), "the example metrics token satisfies the server's rule");
  assert.match(secrets.find((s) => s.metadata.name === "gradebox-db")?.stringData?.url ?? "", /^postgres:\/\//);
});

test("the constants the checks use are the server's", () => {
  assert.equal(forceExitSeconds(), 15, "server/main.ts force-exits 15 s after SIGTERM (DEPLOY.md's timeline)");
  assert.doesNotThrow(() => loadConfig({ GRADEBOX_TIMEOUT_MS: String(MAX_TIMEOUT_S * 1000) }));
  assert.throws(
    () => loadConfig({ GRADEBOX_TIMEOUT_MS: String(MAX_TIMEOUT_S * 1000 + 1) }),
    /GRADEBOX_TIMEOUT_MS/,
    "60 s is the largest time limit",
  );
  // the bounds a worker enforces on itself (sandbox/worker/memory.ts), with a 1 GB baseline to read them by
  const GB = 1024 ** 3;
  const MiB = 1024 ** 2;
  for (const memoryMb of [64, 256]) {
    const b = memoryBounds({ memoryMb, maxWarmHeapMb: 384 }, GB);
    assert.equal(
      b.callGrowth,
      (2 * memoryMb + 64) * MiB,
      "a call may grow a worker by 2 × the isolate limit + 64 MB (the formula's last term)",
    );
    assert.equal(
      b.idleSlack,
      Math.max(128, 2 * memoryMb) * MiB,
      "an idle worker is replaced past baseline + warm heap + max(128, 2 × limit)",
    );
    assert.equal(
      b.ceiling,
      GB + 384 * MiB + Math.max(128, 2 * memoryMb) * MiB + (2 * memoryMb + 64) * MiB,
      "no worker outgrows the formula's per-worker terms: the watchdog's ceiling",
    );
  }
  assert.equal(config.port, 8787);
});

test("docs/DEPLOY.md states the numbers these manifests give, in at most 150 lines", () => {
  const doc = read("docs/DEPLOY.md");
  const { manifests } = loadManifests();
  const sizing = manifestSizing(manifests, manifestContext(parseDockerfile(read("Dockerfile"))));
  assert.ok(doc.split("\n").length <= 150, "at most 150 lines");
  assert.ok(doc.includes("kubectl apply -k deploy/k8s"), "how to apply");
  assert.ok(doc.includes(`${sizing.memory.total} MiB`), `the pod memory (${sizing.memory.total} MiB)`);
  assert.ok(doc.includes(`${sizing.memory.perWorker} MiB`), `the memory per worker (${sizing.memory.perWorker} MiB)`);
  assert.ok(doc.includes(`${sizing.connections} connections`), `the peak PostgreSQL connections (${sizing.connections})`);
});

// ---------------------------------------------------------------------------------------------
// Each checker rejects a copy with one field broken

type Mutation<T, R = void> = [name: string, mutate: (copy: T) => R, expected: RegExp];
const containerOf = (m: Manifests) => byKind<Deployment>(m.resources, "Deployment")[0].spec.template.spec.containers[0];
const podOf = (m: Manifests) => byKind<Deployment>(m.resources, "Deployment")[0].spec.template.spec;
const env = (m: Manifests, name: string) => envOf(containerOf(m), name) as EnvVar;

const MANIFEST_MUTATIONS: Mutation<Manifests>[] = [
  ["no readinessProbe", (m) => delete containerOf(m).readinessProbe, /readinessProbe: missing/],
  [
    "readiness on another path",
    (m) => (containerOf(m).readinessProbe = { httpGet: { path: "/healthz", port: "http" } }),
    /readinessProbe: httpGet path/,
  ],
  [
    "liveness on /readyz",
    (m) => ((containerOf(m).livenessProbe as Probe).httpGet = { path: "/readyz", port: "http" }),
    /livenessProbe: httpGet path/,
  ],
  [
    "liveness on another port",
    (m) => ((containerOf(m).livenessProbe as Probe).httpGet = { path: "/healthz", port: 9000 }),
    /livenessProbe: port/,
  ],
  [
    "a hair-trigger liveness",
    (m) => Object.assign(containerOf(m).livenessProbe as Probe, { periodSeconds: 5, failureThreshold: 1 }),
    /livenessProbe/,
  ],
  ["grace period too short", (m) => (podOf(m).terminationGracePeriodSeconds = 60), /terminationGracePeriodSeconds: 60/],
  [
    "a longer preStop, same grace",
    (m) => (containerOf(m).lifecycle = { preStop: { exec: { command: ["sleep", "40"] } } }),
    /preStop 40 .* = 115/,
  ],
  ["no preStop", (m) => delete containerOf(m).lifecycle, /lifecycle.preStop/],
  ["memory request above the limit", (m) => ((containerOf(m).resources?.requests ?? {}).memory = "4Gi"), /requests.memory exceeds/],
  ["no CPU limit", (m) => delete containerOf(m).resources?.limits?.cpu, /limits.cpu: missing/],
  [
    "memory limit below the formula",
    (m) => Object.assign(containerOf(m).resources ?? {}, { requests: { cpu: "2", memory: "1Gi" }, limits: { cpu: "2", memory: "1Gi" } }),
    /limits.memory: 1024 MiB/,
  ],
  ["more CPU, same memory", (m) => Object.assign(containerOf(m).resources?.limits ?? {}, { cpu: "4" }), /limits.memory/],
  ["a bigger warm heap, same memory", (m) => (env(m, "GRADEBOX_WARM_HEAP_MB").value = "1024"), /limits.memory/],
  [
    "workers not matched to the CPU limit",
    (m) => Object.assign(env(m, "GRADEBOX_WORKERS"), { value: "4", valueFrom: undefined }),
    /GRADEBOX_WORKERS: 4 workers/,
  ],
  [
    "workers unset",
    (m) => (containerOf(m).env = containerOf(m).env?.filter((e) => e.name !== "GRADEBOX_WORKERS")),
    /GRADEBOX_WORKERS: unset/,
  ],
  [
    "database URL as a literal",
    (m) => Object.assign(env(m, "GRADEBOX_DB"), { value: "postgres://u:p@db/gradebox", valueFrom: undefined }),
    /GRADEBOX_DB: must come from a Secret/,
  ],
  [
    "a Secret the template does not have",
    (m) => ((env(m, "GRADEBOX_DB").valueFrom?.secretKeyRef ?? { name: "" }).name = "pg"),
    /secret pg key url/,
  ],
  ["host left at loopback", (m) => (env(m, "GRADEBOX_HOST").value = "127.0.0.1"), /GRADEBOX_HOST/],
  ["service links on", (m) => delete podOf(m).enableServiceLinks, /enableServiceLinks/],
  ["runAsNonRoot false", (m) => ((containerOf(m).securityContext ?? {}).runAsNonRoot = false), /runAsNonRoot/],
  ["another UID than the image's", (m) => ((podOf(m).securityContext ?? {}).runAsUser = 1000), /differs from the image's USER/],
  ["privilege escalation", (m) => ((containerOf(m).securityContext ?? {}).allowPrivilegeEscalation = true), /allowPrivilegeEscalation/],
  ["capabilities kept", (m) => ((containerOf(m).securityContext ?? {}).capabilities = { drop: ["NET_RAW"] }), /capabilities.drop/],
  [
    "read-only root without data/",
    (m) => (containerOf(m).volumeMounts = containerOf(m).volumeMounts?.filter((v) => v.name !== "data")),
    /emptyDir at \/app\/data/,
  ],
  [
    "no metrics token",
    (m) => (containerOf(m).env = containerOf(m).env?.filter((e) => e.name !== "GRADEBOX_METRICS_TOKEN")),
    /GRADEBOX_METRICS_TOKEN: must come from a Secret/,
  ],
  ["no spreading", (m) => delete podOf(m).topologySpreadConstraints, /across nodes/],
  ["spec.replicas set", (m) => (byKind<Deployment>(m.resources, "Deployment")[0].spec.replicas = 3), /spec.replicas is set/],
  ["containerPort not the image's", (m) => ((containerOf(m).ports ?? [])[0].containerPort = 8080), /containerPort 8080/],
  ["Service targetPort elsewhere", (m) => (byKind<Service>(m.resources, "Service")[0].spec.ports[0].targetPort = 8080), /targetPort 8080/],
  [
    "Service selector off",
    (m) => (byKind<Service>(m.resources, "Service")[0].spec.selector = { app: "other" }),
    /Service gradebox: its selector/,
  ],
  [
    "HPA on another target",
    (m) => (byKind<Hpa>(m.resources, "HorizontalPodAutoscaler")[0].spec.scaleTargetRef.name = "web"),
    /HPA: scaleTargetRef/,
  ],
  [
    "HPA on memory",
    (m) => {
      for (const x of byKind<Hpa>(m.resources, "HorizontalPodAutoscaler")[0].spec.metrics ?? []) if (x.resource) x.resource.name = "memory";
    },
    /HPA: no CPU/,
  ],
  ["HPA below 3", (m) => (byKind<Hpa>(m.resources, "HorizontalPodAutoscaler")[0].spec.minReplicas = 2), /minReplicas 2/],
  [
    "PDB selector off",
    (m) => (byKind<Pdb>(m.resources, "PodDisruptionBudget")[0].spec.selector = { matchLabels: { app: "web" } }),
    /PodDisruptionBudget gradebox: its selector/,
  ],
  [
    "PDB that blocks drains",
    (m) => Object.assign(byKind<Pdb>(m.resources, "PodDisruptionBudget")[0].spec, { maxUnavailable: undefined, minAvailable: 3 }),
    /lets no pod be evicted/,
  ],
  [
    "no HPA",
    (m) => (m.resources = m.resources.filter((r) => r.kind !== "HorizontalPodAutoscaler")),
    /HorizontalPodAutoscaler: expected exactly one/,
  ],
  ["a Secret shipped", (m) => m.resources.push(...m.secretExamples), /must not ship a Secret/],
];

test("the manifest checker rejects each broken copy", async (t) => {
  const ctx = manifestContext(parseDockerfile(read("Dockerfile")));
  const { manifests } = loadManifests();
  for (const [name, mutate, expected] of MANIFEST_MUTATIONS) {
    await t.test(name, () => {
      const copy = structuredClone(manifests);
      mutate(copy);
      const problems = checkManifests(copy, ctx);
      assert.ok(
        problems.some((p) => expected.test(p)),
        `expected a problem matching ${expected}, got ${JSON.stringify(problems)}`,
      );
    });
  }
});

const DOCKERFILE_MUTATIONS: Mutation<string, string>[] = [
  ["one stage", (s) => s.replace(/FROM \$\{NODE_IMAGE\} AS deps[\s\S]*?(?=FROM \$\{NODE_IMAGE\} AS runtime)/, ""), /at least 2 stages/],
  ["no --no-node-snapshot", (s) => s.replace('"--no-node-snapshot", "dist/', '"dist/'), /no-node-snapshot/],
  ["shell-form CMD", (s) => s.replace(/^CMD \[.*$/m, "CMD node --no-node-snapshot dist/app/server/main.js"), /exec form/],
  [
    "CMD through tsx",
    (s) => s.replace(/^CMD \[.*$/m, 'CMD ["node", "--no-node-snapshot", "--import", "tsx", "server/main.ts"]'),
    /`--import` compiles TypeScript at run time/,
  ],
  [
    "CMD on the sources",
    (s) => s.replace(/^CMD \[.*$/m, 'CMD ["node", "--no-node-snapshot", "server/main.ts"]'),
    /not a file of the compiled tree/,
  ],
  ["USER root", (s) => s.replace(/^USER .*$/m, "USER root"), /numeric UID/],
  ["USER 0", (s) => s.replace(/^USER .*$/m, "USER 0"), /runs as root/],
  ["no USER", (s) => s.replace(/^USER .*$/m, ""), /runs as root/],
  ["devDependencies installed", (s) => s.replace("npm ci --omit=dev", "npm ci"), /installs devDependencies/],
  ["npm install in the final stage", (s) => s.replace(/^USER /m, "RUN npm install --omit=dev\nUSER "), /final stage installs packages/],
  ["node_modules not copied", (s) => s.replace(/(AS runtime[\s\S]*?)^COPY --from=deps .*\n/m, "$1"), /does not copy node_modules/],
  ["no HEALTHCHECK", (s) => s.replace(/^HEALTHCHECK[\s\S]*?\n(?=#|CMD)/m, ""), /HEALTHCHECK: missing/],
  ["HEALTHCHECK with curl", (s) => s.replace(/CMD \["node", "-e", .*\]$/m, 'CMD ["curl", "-f", "http://127.0.0.1:8787/healthz"]'), /curl/],
  ["host not 0.0.0.0", (s) => s.replace("GRADEBOX_HOST=0.0.0.0", "GRADEBOX_HOST=127.0.0.1"), /GRADEBOX_HOST/],
  ["port not exposed", (s) => s.replace(/^EXPOSE .*$/m, "EXPOSE 8080"), /EXPOSE/],
  ["sandbox not copied", (s) => s.replace(/^COPY sandbox .*$/m, ""), /build stage lacks sandbox\/.*at run time/],
  ["migrations not copied", (s) => s.replace(/^COPY migrations .*$/m, ""), /build stage lacks migrations\//],
  ["not built", (s) => s.replace(/^RUN .*scripts\/build.ts.*$/m, ""), /no build stage runs it/],
  ["builder not copied", (s) => s.replace(/^COPY scripts\/build.ts .*$/m, ""), /build stage lacks scripts\/build.ts/],
  ["compiled tree not copied", (s) => s.replace(/^COPY --from=build .*$/m, ""), /does not copy dist\/app from the build stage/],
  [
    "built without node_modules",
    (s) => s.replace(/^(FROM .* AS build\nWORKDIR .*\n)COPY --from=deps .*\n/m, "$1"),
    /runs without node_modules/,
  ],
  ["the command not copied", (s) => s.replace(/^COPY bin .*$/m, ""), /lacks bin\/gradebox.js.*COPY it in the final stage/],
  ["Node 20", (s) => s.replace("node:24-bookworm-slim", "node:20-bookworm-slim"), /Node 24/],
  ["STOPSIGNAL SIGKILL", (s) => s.replace("STOPSIGNAL SIGTERM", "STOPSIGNAL SIGKILL"), /STOPSIGNAL/],
];

test("the Dockerfile checker rejects each broken copy", async (t) => {
  const text = read("Dockerfile");
  const ctx = dockerContext();
  for (const [name, mutate, expected] of DOCKERFILE_MUTATIONS) {
    await t.test(name, () => {
      const mutated = mutate(text);
      assert.notEqual(mutated, text, "the mutation applies");
      const problems = checkDockerfile(parseDockerfile(mutated), ctx);
      assert.ok(
        problems.some((p) => expected.test(p)),
        `expected a problem matching ${expected}, got ${JSON.stringify(problems)}`,
      );
    });
  }
  await t.test(".dockerignore excludes the lock file npm ci needs", () => {
    const problems = checkDockerfile(parseDockerfile(text), { ...ctx, dockerignore: ctx.dockerignore.replace("!package-lock.json\n", "") });
    assert.ok(
      problems.some((p) => /COPY package-lock.json: .dockerignore excludes it/.test(p)),
      JSON.stringify(problems),
    );
  });
  await t.test(".dockerignore excludes the server", () => {
    const problems = checkDockerfile(parseDockerfile(text), { ...ctx, dockerignore: `${ctx.dockerignore}\nserver\n` });
    assert.ok(
      problems.some((p) => /COPY server: .dockerignore excludes it/.test(p)),
      JSON.stringify(problems),
    );
  });
  await t.test("a run-time file the image does not copy", () => {
    const runtimePaths = new Map([...ctx.runtimePaths, ["templates/prompt.hbs", "server/judges/kinds.ts"]]);
    const problems = checkDockerfile(parseDockerfile(text), { ...ctx, runtimePaths });
    assert.ok(
      problems.some((p) => /lacks templates\/prompt.hbs.*no input of scripts\/build.ts/.test(p)),
      JSON.stringify(problems),
    );
  });
});

test("the dependency checker rejects a run-time import of a devDependency", () => {
  const { packages } = runtimeClosure(RUNTIME_ENTRIES);
  const { tsx, ...dependencies } = packageJson.dependencies ?? {};
  const moved = { dependencies, devDependencies: { ...packageJson.devDependencies, tsx } };
  assert.ok(checkRuntimeDependencies(packages, moved).some((p) => /imports tsx, a devDependency/.test(p)));
  assert.ok(checkRuntimeDependencies(new Map([["left-pad", "server/x.ts"]]), packageJson).some((p) => /does not list/.test(p)));
});

test("the .dockerignore matcher follows Docker's rules", () => {
  const rules = "*\n!server\n**/*.test.ts\n";
  assert.equal(dockerignored(rules, "server/main.ts"), false);
  assert.equal(dockerignored(rules, "data/gradebox.db"), true);
  assert.equal(dockerignored(rules, "server/x.test.ts"), true);
  assert.equal(dockerignored(read(".dockerignore"), "data/default.key"), true, "the database and keys never enter the build context");
  assert.equal(dockerignored(read(".dockerignore"), ".node/bin/node"), true);
});
