// The worker processes: starts them (grading workers and the validation worker), reads their
// replies and their watchdogs' verdict lines, replaces one that dies or holds more memory than
// it should, and kills one that has said nothing for its whole budget. What a worker runs, and
// what its death means, is the scheduler's (scheduler.ts) and blame's (blame.ts).

import { type ChildProcess, fork } from "node:child_process";
import type { EventEmitter } from "node:events";
import type { Readable } from "node:stream";
import { VERDICT_FD, type Verdict, type WorkerHello, type WorkerReply } from "../protocol/replies.ts";
import { type EngineLimits, LIMITS_ENV, ROLE_ENV, type WorkerNotice, type WorkerRequest } from "../protocol/requests.ts";
import { verdictLines } from "./replies.ts";
import type { Running } from "./tasks.ts";

/**
 * Run from the sources (`make run`, the tests) this file is TypeScript and so is the worker,
 * which runs through tsx's loader; compiled (`make build`, the image) both are JavaScript and the
 * worker runs on plain node.
 */
const COMPILED = import.meta.url.endsWith(".js");
/** The worker process's entry: the one place that names it. */
const WORKER = COMPILED ? new URL("../worker/worker.js", import.meta.url) : new URL("../worker/worker.ts", import.meta.url);
const LOADER = COMPILED ? [] : ["--import", import.meta.resolve("tsx")];
/** How often the pool looks for workers that stopped answering altogether. */
const BACKSTOP_TICK_MS = 250;

/** The server's handle on one worker process. */
export interface WorkerHandle {
  role: "grade" | "validate";
  child: ChildProcess;
  ready: boolean;
  /** replaced already; closes once idle */
  retiring: boolean;
  running?: Running;
  /** set when the pool's backstop killed this worker */
  hung?: boolean;
  /** the watchdog's last verdict line */
  verdict?: Verdict;
  verdictBuffer: string;
  /** the end of what the worker wrote to stderr, for the server log */
  stderrTail: string;
  /** graders this worker ran recently: dispatch prefers to send a grader back to them */
  recent: Set<string>;
  /** the id of the batch this worker holds: the last one it was sent (a grade request without a batch means this one) */
  heldBatch?: number;
}

/** What the supervisor tells the scheduler. */
export interface SupervisorHooks {
  /** a worker became ready, or one exited: look for work to hand out */
  pump(): void;
  /** a worker's message other than its hello, unread */
  reply(worker: WorkerHandle, message: WorkerReply): void;
  /** a worker exited; `running` is what it was running, if anything */
  exited(worker: WorkerHandle, running: Running | undefined, code: number | null, signal: NodeJS.Signals | null): void;
}

export class Supervisor {
  readonly workers: WorkerHandle[] = [];
  closing = false;
  /** workers started again after one died */
  restarts = 0;
  /** workers replaced because they held more memory than they should (none of them died) */
  recycled = 0;
  private readonly backstop: NodeJS.Timeout;

  constructor(
    private readonly limits: EngineLimits,
    /** emits "workerExit", and "workersStopped" once when a terminal's signal stopped them */
    private readonly events: EventEmitter,
    private readonly hooks: SupervisorHooks,
  ) {
    this.backstop = setInterval(() => this.checkStuck(), BACKSTOP_TICK_MS);
    this.backstop.unref();
  }

  /** Grading workers ready to take work. */
  grading(): WorkerHandle[] {
    return this.workers.filter((w) => w.role === "grade" && w.ready && !w.retiring);
  }

  spawn(role: WorkerHandle["role"]): Promise<void> {
    const child = fork(WORKER, [], {
      // isolated-vm sizes each isolate's young generation from its memory limit (64 MB: ~1.4 MB), so
      // an allocating grader paid a scavenge every ~11 items; 2 MB semi-spaces cut CPU per item of a
      // ~100 µs grader from 1.13× native to 1.08× (measured), and leave a warm isolate's RSS as it was
      execArgv: ["--no-node-snapshot", "--max-semi-space-size=2", ...LOADER],
      // the V8 serializer copies a packed batch's strings as they are, where JSON would escape them again
      serialization: "advanced",
      env: { ...process.env, [LIMITS_ENV]: JSON.stringify(this.limits), [ROLE_ENV]: role },
      // V8 prints pages of heap statistics when it aborts on out-of-memory: keep them off the
      // server's output (the pool reports the abort itself). fd 4 carries watchdog verdicts.
      stdio: ["ignore", "inherit", "pipe", "ipc", "pipe"],
    });
    const worker: WorkerHandle = { role, child, ready: false, retiring: false, recent: new Set(), stderrTail: "", verdictBuffer: "" };
    child.stderr?.on("data", (chunk: Buffer) => {
      worker.stderrTail = (worker.stderrTail + chunk.toString()).slice(-2000);
    });
    const verdicts = child.stdio[VERDICT_FD] as Readable | null;
    verdicts?.on("data", (chunk: Buffer) => this.onVerdictData(worker, chunk));
    this.workers.push(worker);
    return new Promise((resolve, reject) => {
      child.on("message", (msg: WorkerReply | WorkerHello) => {
        if (msg?.op === "ready") {
          worker.ready = true;
          resolve();
          this.hooks.pump();
          return;
        }
        this.hooks.reply(worker, msg);
      });
      // A verdict is written just before the watchdog kills the process: act on the exit only
      // once the verdict pipe has been read to its end (or shortly after, should it stay open).
      let pipeOpen = verdicts !== null && !verdicts.closed;
      let exited: [number | null, NodeJS.Signals | null] | undefined;
      let done = false;
      const finish = () => {
        if (done || !exited || pipeOpen) return;
        done = true;
        const [code, signal] = exited;
        const index = this.workers.indexOf(worker);
        if (index >= 0) this.workers.splice(index, 1);
        if (!worker.ready) reject(new Error(`sandbox worker exited during start-up (code ${code}, signal ${signal})`));
        this.onExit(worker, code, signal);
      };
      verdicts?.on("close", () => {
        pipeOpen = false;
        finish();
      });
      child.on("exit", (code, signal) => {
        exited = [code, signal];
        finish();
        setTimeout(() => {
          pipeOpen = false;
          finish();
        }, 250).unref();
      });
      child.on("error", () => {}); // 'exit' follows and does the work
    });
  }

  /** Verdict lines, read strictly (replies.ts): a recycle request retires the worker; any other is kept for blame. */
  private onVerdictData(worker: WorkerHandle, chunk: Buffer): void {
    const { verdicts, rest } = verdictLines(worker.verdictBuffer + chunk.toString());
    worker.verdictBuffer = rest;
    for (const verdict of verdicts) {
      if (verdict.verdict === "recycle") this.retire(worker);
      else worker.verdict = verdict;
    }
  }

  /** Replaces a worker that holds memory it should not: a new one starts, the old one closes once idle. */
  retire(worker: WorkerHandle): void {
    if (worker.retiring || this.closing) return;
    worker.retiring = true;
    this.recycled++;
    this.spawn(worker.role).catch(() => {});
    if (!worker.running && worker.child.connected) worker.child.disconnect();
  }

  private onExit(worker: WorkerHandle, code: number | null, signal: NodeJS.Signals | null): void {
    const running = worker.running;
    worker.running = undefined;
    // A terminal sends SIGINT (Ctrl-C) and SIGHUP to its whole foreground process group: the
    // server got it too and is stopping, so the workers' exits are expected, not replaced
    if ((signal === "SIGINT" || signal === "SIGHUP") && !this.closing) {
      this.stop();
      this.events.emit("workersStopped", signal);
    }
    if (!this.closing && !worker.retiring) {
      this.events.emit("workerExit", { pid: worker.child.pid, code, signal, stderrTail: worker.stderrTail });
    }
    this.hooks.exited(worker, running, code, signal);
    if (!this.closing && !worker.retiring) {
      this.restarts++;
      this.spawn(worker.role).catch(() => {
        // start-up failing is not a grader's fault: retry after a pause rather than spin
        setTimeout(() => this.closing || this.spawn(worker.role).catch(() => {}), 1000).unref();
      });
    }
    this.hooks.pump();
  }

  /** Hands a request to an idle worker; its verdicts from here on are about this request. */
  send(worker: WorkerHandle, request: WorkerRequest, running: Running): void {
    worker.verdict = undefined;
    worker.running = running;
    worker.child.send(request);
  }

  /** The worker answered its request (`running` is cleared): one replaced meanwhile closes now. */
  answered(worker: WorkerHandle): void {
    if (worker.retiring && worker.child.connected) worker.child.disconnect();
  }

  /** A worker whose reply broke the protocol is not trusted with anything more. */
  kill(worker: WorkerHandle): void {
    worker.child.kill("SIGKILL");
  }

  /** Tells every ready worker, now. */
  notify(notice: WorkerNotice): void {
    for (const worker of this.workers) {
      if (worker.ready && worker.child.connected) worker.child.send(notice);
    }
  }

  /** The pool's last resort: a worker that has said nothing for its whole budget is killed. Nobody is blamed. */
  private checkStuck(): void {
    const now = Date.now();
    for (const worker of this.workers) {
      if (worker.running && !worker.hung && now - worker.running.sentAt > worker.running.budgetMs) {
        worker.hung = true;
        worker.child.kill("SIGKILL");
      }
    }
  }

  /** No worker is started or replaced from now on. */
  stop(): void {
    this.closing = true;
    clearInterval(this.backstop);
  }

  /** Closes every worker: its channel first, SIGKILL after 5 s. */
  async exitAll(): Promise<void> {
    await Promise.all(
      this.workers.map(
        (worker) =>
          new Promise<void>((resolve) => {
            if (worker.child.exitCode !== null || worker.child.signalCode !== null) return resolve();
            worker.child.once("exit", () => resolve());
            if (worker.child.connected) worker.child.disconnect();
            setTimeout(() => worker.child.kill("SIGKILL"), 5000).unref();
          }),
      ),
    );
  }
}
