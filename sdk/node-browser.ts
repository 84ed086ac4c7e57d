// What a browser bundle of the package gets instead of node.ts (package.json "browser"): the
// default transport there is the global fetch, and a grader's source is passed as `source` or `fn`.

import { GradeboxError } from "./errors.ts";
import type { Transport } from "./transport.ts";

export async function readTextFile(_path: string): Promise<string> {
  throw new GradeboxError("`file` needs Node: in a browser pass the grader's `source` or `fn`");
}

export async function readGraderFile(_path: string): Promise<{ source: string; files: string[] }> {
  throw new GradeboxError("`file` needs Node: in a browser pass the grader's `source` or `fn`");
}

export const nodeTransport: Transport = async () => {
  throw new GradeboxError("the Node transport is not available in a browser: the client uses the global fetch there");
};
