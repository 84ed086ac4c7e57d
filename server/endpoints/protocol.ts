// The reward-server protocol (Adaptive's reward servers), one definition for both directions:
// Gradebox reads external endpoints' replies with these schemas, and serves every stored grader
// under …/graders/{key}/reward/ with them. Unknown fields are refused; null metadata means {};
// a null id means none (Adaptive's server and client both write "id": null when there is none),
// and is echoed as it came. Ids are integers in Adaptive's protocol; strings are kept for callers
// that used them.

import { z } from "zod";
import { Role } from "../schemas.ts";

export const RewardTurn = z
  .strictObject({ role: Role, content: z.string().describe("what was said") })
  .describe("one turn of the conversation");
const Metadata = z
  .record(z.string(), z.unknown())
  .nullable()
  .optional()
  .transform((m) => m ?? {});
export const Id = z
  .union([z.number().int(), z.string().max(256)])
  .nullable()
  .optional()
  .describe("the caller's id for the request (an integer in Adaptive's protocol; null: none), echoed in its response as it was sent");

export const ScoreRequest = z.strictObject({ turns: z.array(RewardTurn).min(1), metadata: Metadata, id: Id });
export const ScoreResponse = z.strictObject({
  reward: z.number().refine(Number.isFinite, "reward must be a finite number"),
  metadata: Metadata,
  id: Id,
});
export const BatchScoreResponse = z.strictObject({ responses: z.array(ScoreResponse) });
export const Info = z.strictObject({ version: z.string().max(256), name: z.string().max(256), description: z.string().max(10_000) });

export type ScoreRequest = z.infer<typeof ScoreRequest>;
export type ScoreResponse = z.infer<typeof ScoreResponse>;
