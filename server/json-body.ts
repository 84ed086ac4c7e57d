// Reading a request body: strict UTF-8 (a body that is not UTF-8 is refused rather than silently
// "repaired" with U+FFFD), at most GRADEBOX_BODY_LIMIT bytes (readUtf8Body, which the packed
// batch's parser uses too); and the JSON body parser, prototype-poisoning keys refused
// (secure-json-parse).

import type { FastifyInstance, FastifyRequest } from "fastify";
import sjson from "secure-json-parse";
import { AppError } from "./errors.ts";

/**
 * Whether the body could hold a __proto__ or constructor key, written out or \u-escaped. Only
 * such a body needs secure-json-parse's regular-expression scan, which costs more than the
 * parse itself on a large batch; the three substring searches run at memory speed.
 */
const suspect = (text: string) => text.includes("\\u") || text.includes("__proto__") || text.includes("constructor");

/** JSON from someone else: prototype-poisoning keys throw; the scan runs only when one could be there. */
export function parseUntrustedJson(text: string): unknown {
  return suspect(text) ? sjson.parse(text, undefined, { protoAction: "error", constructorAction: "error" }) : JSON.parse(text);
}

/** parseUntrustedJson for a request's text: what is wrong with it is a 400 INVALID_JSON naming `what` ("the request body"). */
export function parseJsonOrRefuse(text: string, what: string): unknown {
  try {
    return parseUntrustedJson(text);
  } catch (error) {
    const why = error instanceof SyntaxError ? error.message : "it uses __proto__ or constructor.prototype keys, which are refused";
    throw new AppError("INVALID_JSON", `${what} is not valid JSON: ${why}`);
  }
}

/**
 * A request body's text, decoded chunk by chunk as it arrives, instead of Fastify's parseAs
 * "buffer" (every chunk kept until the end, then copied into one buffer). Both live outside V8's
 * heap in malloc's, and six 10 MB bodies at once left its arena 70 MB larger for good: a 10 MB
 * buffer, once freed, raises glibc's threshold for mmap to 10 MB, so the next ones come from the
 * arena and fragment it (and a body held as one Buffer is external memory, whose growth sets off
 * V8's full collections). Here each chunk is garbage as soon as it is decoded, and the text lives
 * in V8's heap, which gives it back. Strict UTF-8, at most `limit` bytes, the Content-Length kept
 * to; `done` gets the text or the AppError to answer with. Every parser of a body the server
 * reads whole uses it (this file's JSON, packed-body.ts's packed batches).
 */
export function readUtf8Body(
  req: FastifyRequest,
  payload: NodeJS.ReadableStream,
  limit: number,
  what: string,
  done: (error: Error | null, text?: string) => void,
): void {
  const tooLarge = () => new AppError("BODY_TOO_LARGE", `request body is larger than ${limit} bytes (GRADEBOX_BODY_LIMIT)`);
  const notUtf8 = () => new AppError("INVALID_ENCODING", `the request body is not valid UTF-8; send ${what} encoded as UTF-8`);
  const declared = Number(req.headers["content-length"]);
  if (declared > limit) {
    done(tooLarge());
    return;
  }
  const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
  let text = "";
  let received = 0;
  const finish = (error: Error | null, body?: string) => {
    payload.off("data", onData);
    payload.off("end", onEnd);
    payload.off("error", onError);
    done(error, body);
  };
  function onData(chunk: Buffer) {
    received += chunk.length;
    if (received > limit) return finish(tooLarge());
    try {
      text += utf8.decode(chunk, { stream: true });
    } catch {
      finish(notUtf8());
    }
  }
  function onEnd() {
    if (!Number.isNaN(declared) && received !== declared) {
      return finish(new AppError("INVALID_REQUEST", "the request body's size did not match its Content-Length"));
    }
    try {
      text += utf8.decode();
    } catch {
      return finish(notUtf8());
    }
    finish(null, text);
  }
  // the client went away, or body-budget.ts refused a chunk (its AppError answers as it is)
  function onError(error: Error & { statusCode?: number }) {
    if (!(error instanceof AppError) && !(typeof error.statusCode === "number" && error.statusCode >= 400)) error.statusCode = 400;
    finish(error);
  }
  payload.on("data", onData);
  payload.on("end", onEnd);
  payload.on("error", onError);
  payload.resume();
}

/** The JSON body parser: readUtf8Body, then JSON with prototype-poisoning keys refused. */
export function registerJsonParser(app: FastifyInstance): void {
  const limit = app.initialConfig.bodyLimit ?? 1024 * 1024;
  // JSON only: a text/plain body is refused (415) rather than handed to validation as a string
  app.removeContentTypeParser(["application/json", "text/plain"]);
  app.addContentTypeParser("application/json", (req, payload, done) =>
    readUtf8Body(req, payload, limit, "JSON", (error, text) => {
      if (error || text === undefined) return done(error);
      if (text.trim() === "") return done(new AppError("INVALID_JSON", "the request body is empty; send a JSON object"), undefined);
      try {
        done(null, parseJsonOrRefuse(text, "the request body"));
      } catch (error) {
        done(error as Error, undefined);
      }
    }),
  );
}
