// The reward-server protocol (Adaptive's reward servers), one definition for both directions:
// Gradebox reads external endpoints' replies with these schemas, and serves every stored grader
// under …/graders/{key}/reward/ with them. Unknown fields are refused; null metadata means {}.

import { z } from "zod";
import { ROLES } from "../../sdk/thread.ts";

export const RewardTurn = z
  .strictObject({ role: z.enum(ROLES).describe("who speaks"), content: z.string().describe("what was said") })
  .describe("one turn of the conversation");
const Metadata = z
  .record(z.string(), z.unknown())
  .nullable()
  .optional()
  .transform((m) => m ?? {});
export const Id = z
  .union([z.string().max(256), z.number().int()])
  .optional()
  .describe("the caller's id for the request, echoed in its response");

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
