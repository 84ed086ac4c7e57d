// The JSON body parser: strict UTF-8 (a body that is not UTF-8 is refused rather than silently
// "repaired" with U+FFFD), and prototype-poisoning keys refused (secure-json-parse).

import type { FastifyInstance } from "fastify";
import sjson from "secure-json-parse";
import { AppError } from "./errors.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

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

export function registerJsonParser(app: FastifyInstance): void {
  // JSON only: a text/plain body is refused (415) rather than handed to validation as a string
  app.removeContentTypeParser(["application/json", "text/plain"]);
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (_req, body: Buffer, done) => {
    let text: string;
    try {
      text = utf8.decode(body);
    } catch {
      return done(new AppError("INVALID_ENCODING", "the request body is not valid UTF-8; send JSON encoded as UTF-8"));
    }
    if (text.trim() === "") return done(new AppError("INVALID_JSON", "the request body is empty; send a JSON object"));
    try {
      done(null, parseUntrustedJson(text));
    } catch (error) {
      const message = error instanceof SyntaxError ? error.message : "it uses __proto__ or constructor.prototype keys, which are refused";
      done(new AppError("INVALID_JSON", `the request body is not valid JSON: ${message}`));
    }
  });
}
