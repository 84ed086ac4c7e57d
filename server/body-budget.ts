// Request bodies held by the API process at once, bounded in all and per project. A body is held
// from the moment it is read until its response is sent: its chunks, its text, its parsed value
// and whatever the route builds from it (a 9.6 MB batch of 400 000 turns is ~30 MB of heap as
// text and objects). Six such bodies sent at once by one project held the event loop for seconds;
// now a project may hold half of the total (by default) and the rest of its requests are refused
// with a Retry-After before their bodies are read.
//
// A body with a Content-Length is counted whole before any of it is read; a chunked body is
// counted chunk by chunk as it arrives, and refused at the chunk that would pass a limit. The
// project is the API key's: the /v1 authentication hook runs (onRequest) before this one
// (preParsing), so a request without a valid key is refused before its body is read at all.
// Requests outside /v1 (no route there reads a body, but Fastify reads one for a 404) count
// against one more share, the anonymous one.

import { Transform } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { Config } from "./config.ts";
import { AppError } from "./errors.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** the request body bytes held at once (body-budget.ts) */
    bodyBudget: BodyBudget;
  }
}

/** seconds a refused client is told to wait: bodies are held for the time of one request */
export const BODY_RETRY_AFTER_S = 1;

export class BodyBudget {
  private total = 0;
  private readonly byProject = new Map<string, number>();

  constructor(readonly limits: Pick<Config, "bodyBytesInFlight" | "bodyBytesPerProject">) {}

  /** Bytes held now: in all, or by one project. */
  held(project?: string): number {
    return project === undefined ? this.total : (this.byProject.get(project) ?? 0);
  }

  /** Holds `bytes` more for the project, or throws TOO_MANY_BODIES (its share) or BODY_CAPACITY (the total). */
  take(project: string, bytes: number): void {
    const { bodyBytesInFlight, bodyBytesPerProject } = this.limits;
    const mine = this.held(project);
    const who = project === "" ? "requests without an API key" : `project "${project}"`;
    if (mine + bytes > bodyBytesPerProject) {
      throw new AppError(
        "TOO_MANY_BODIES",
        `${who} already has ${mine} bytes of request bodies being read or handled; ${bytes} more would pass its share of ` +
          `${bodyBytesPerProject} (GRADEBOX_BODY_BYTES_PER_PROJECT): send fewer large requests at once, or retry when some are answered`,
        { limit: bodyBytesPerProject, retryAfter: BODY_RETRY_AFTER_S },
      );
    }
    if (this.total + bytes > bodyBytesInFlight) {
      throw new AppError(
        "BODY_CAPACITY",
        `the server already has ${this.total} bytes of request bodies being read or handled; ${bytes} more would pass its ` +
          `capacity of ${bodyBytesInFlight} (GRADEBOX_BODY_BYTES_IN_FLIGHT): retry shortly`,
        { limit: bodyBytesInFlight, retryAfter: BODY_RETRY_AFTER_S },
      );
    }
    this.total += bytes;
    this.byProject.set(project, mine + bytes);
  }

  /** Gives back bytes a finished request held. */
  give(project: string, bytes: number): void {
    if (bytes === 0) return;
    this.total -= bytes;
    const left = this.held(project) - bytes;
    if (left > 0) this.byProject.set(project, left);
    else this.byProject.delete(project);
  }
}

/** Counts every body against `budget` from preParsing until the response is sent (or the connection closes). */
export function registerBodyBudget(app: FastifyInstance, config: Pick<Config, "bodyLimit">, budget: BodyBudget): void {
  app.decorate("bodyBudget", budget);
  app.addHook("preParsing", async (req, reply, payload) => {
    const length = req.headers["content-length"];
    const chunked = length === undefined && req.headers["transfer-encoding"] !== undefined;
    if (length === undefined && !chunked) return payload;
    const declared = Number(length);
    // no body, or one Fastify refuses unread (413 past the limit, 400 for a malformed length)
    if (!chunked && (!(declared > 0) || declared > config.bodyLimit)) return payload;
    const project = req.project;
    let held = 0;
    const take = (bytes: number) => {
      budget.take(project, bytes);
      held += bytes;
    };
    // 'close' comes once the response is sent or the connection is gone, whichever way the request ended
    reply.raw.once("close", () => budget.give(project, held));
    if (!chunked) {
      take(declared);
      return payload;
    }
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        try {
          take(chunk.length);
        } catch (error) {
          done(error as Error);
          return;
        }
        counted.receivedEncodedLength += chunk.length;
        done(null, chunk);
      },
    }) as Transform & { receivedEncodedLength: number };
    counted.receivedEncodedLength = 0;
    payload.on("error", (error) => counted.destroy(error));
    return payload.pipe(counted);
  });
}
