// The node's outbound calls (judge models, endpoints), shared fairly between projects: at most
// `perProject` calls of one project in flight across all its models and endpoints, at most
// `total` on the node, the rest waiting in arrival order per project and served round-robin
// across projects. One project's slow or hanging remotes hold only its own share of sockets;
// past `maxWaiting` queued calls its items fail at once instead of piling up.

import { UpstreamError } from "./upstream.ts";

export interface OutboundLimits {
  /** calls of one project in flight at once (GRADEBOX_OUTBOUND_PER_PROJECT) */
  perProject: number;
  /** calls of the node in flight at once (GRADEBOX_OUTBOUND_MAX) */
  total: number;
  /** calls of one project waiting at once */
  maxWaiting: number;
}

interface ProjectState {
  active: number;
  waiting: Array<() => void>;
}

export type Release = () => void;

export class OutboundGate {
  private inFlight = 0;
  private readonly projects = new Map<string, ProjectState>();
  /** projects with waiting calls, in the order they are served */
  private readonly ring: string[] = [];

  constructor(readonly limits: OutboundLimits) {}

  /** In flight now on the node, and per project (for /metrics and tests). */
  get load(): { inFlight: number; projects: Record<string, { active: number; waiting: number }> } {
    const projects: Record<string, { active: number; waiting: number }> = {};
    for (const [name, p] of this.projects) projects[name] = { active: p.active, waiting: p.waiting.length };
    return { inFlight: this.inFlight, projects };
  }

  /** A slot for one call of `project`; call the release when the call has ended, however it ended. */
  acquire(project: string): Promise<Release> {
    const p = this.state(project);
    if (p.waiting.length === 0 && p.active < this.limits.perProject && this.inFlight < this.limits.total) {
      return Promise.resolve(this.grant(project, p));
    }
    if (p.waiting.length >= this.limits.maxWaiting) {
      return Promise.reject(
        new UpstreamError(
          "unavailable",
          `project "${project}" already has ${p.waiting.length} outbound calls waiting behind ${p.active} in flight ` +
            `(at most ${this.limits.perProject} at once per project, GRADEBOX_OUTBOUND_PER_PROJECT); send fewer at once`,
        ),
      );
    }
    return new Promise<Release>((resolve) => {
      p.waiting.push(() => resolve(this.grant(project, p)));
      if (p.waiting.length === 1) this.ring.push(project);
    });
  }

  /** Binds the gate to a project, as the Upstream of one of its models or endpoints takes it. */
  for(project: string): () => Promise<Release> {
    return () => this.acquire(project);
  }

  private state(project: string): ProjectState {
    let p = this.projects.get(project);
    if (!p) {
      p = { active: 0, waiting: [] };
      this.projects.set(project, p);
    }
    return p;
  }

  private grant(project: string, p: ProjectState): Release {
    p.active++;
    this.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      p.active--;
      this.inFlight--;
      if (p.active === 0 && p.waiting.length === 0) this.projects.delete(project);
      this.pump();
    };
  }

  /** Hands free slots to waiting calls, one project after another. */
  private pump(): void {
    let skipped = 0;
    while (this.inFlight < this.limits.total && this.ring.length > 0 && skipped < this.ring.length) {
      const project = this.ring.shift() as string;
      const p = this.projects.get(project);
      if (!p || p.waiting.length === 0) continue;
      if (p.active >= this.limits.perProject) {
        // at its own cap: it waits for one of its own calls to end
        this.ring.push(project);
        skipped++;
        continue;
      }
      skipped = 0;
      const next = p.waiting.shift() as () => void;
      if (p.waiting.length > 0) this.ring.push(project);
      next();
    }
  }
}
