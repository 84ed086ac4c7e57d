// The JSON body parser: strict UTF-8 (a body that is not UTF-8 is refused rather than silently
// "repaired" with U+FFFD), at most GRADEBOX_BODY_LIMIT bytes, and prototype-poisoning keys
// refused (secure-json-parse).

import type { FastifyInstance } from "fastify";
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

/**
 * The body's text, decoded chunk by chunk as it arrives, instead of Fastify's parseAs "buffer"
 * (every chunk kept until the end, then copied into one buffer). Both live outside V8's heap in
 * malloc's, and six 10 MB bodies at once left its arena 70 MB larger for good: a 10 MB buffer,
 * once freed, raises glibc's threshold for mmap to 10 MB, so the next ones come from the arena and
 * fragment it. Here each chunk is garbage as soon as it is decoded, and the text lives in V8's
 * heap, which gives it back.
 */
export function registerJsonParser(app: FastifyInstance): void {
  const limit = app.initialConfig.bodyLimit ?? 1024 * 1024;
  const tooLarge = () => new AppError("BODY_TOO_LARGE", `request body is larger than ${limit} bytes (GRADEBOX_BODY_LIMIT)`);
  // JSON only: a text/plain body is refused (415) rather than handed to validation as a string
  app.removeContentTypeParser(["application/json", "text/plain"]);
  app.addContentTypeParser("application/json", (req, payload, done) => {
    const declared = Number(req.headers["content-length"]);
    if (declared > limit) return done(tooLarge());
    const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
    let text = "";
    let received = 0;
    const finish = (error: Error | null, body?: unknown) => {
      payload.off("data", onData);
      payload.off("end", onEnd);
      payload.off("error", onError);
      done(error, body);
    };
    const notUtf8 = () => new AppError("INVALID_ENCODING", "the request body is not valid UTF-8; send JSON encoded as UTF-8");
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
      if (text.trim() === "") return finish(new AppError("INVALID_JSON", "the request body is empty; send a JSON object"));
      let body: unknown;
      try {
        body = parseUntrustedJson(text);
      } catch (error) {
        const message = error instanceof SyntaxError ? error.message : "it uses __proto__ or constructor.prototype keys, which are refused";
        return finish(new AppError("INVALID_JSON", `the request body is not valid JSON: ${message}`));
      }
      finish(null, body);
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
  });
}
