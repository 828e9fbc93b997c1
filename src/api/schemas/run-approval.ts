import { z } from "zod";
import { boundedText, LIMITS } from "./common.ts";

export const ApproveRunRequestSchema = z
  .object({
    action: z.enum(["approve", "revise"]).meta({
      description:
        "approve: the run carries out its plan (normal mode, same run); revise: the plan is revised with `message` (plan mode). Cancel with POST …/cancel.",
    }),
    message: boundedText(LIMITS.promptChars, "message")
      .regex(/\S/, "message must not be empty")
      .optional()
      .meta({
        description: "With approve: a note for the agent. With revise (required): the changes asked for.",
      }),
  })
  .refine((body) => body.action !== "revise" || body.message !== undefined, {
    message: "message: required with action revise (say what to change in the plan)",
    path: ["message"],
  })
  .meta({ id: "ApproveRunRequest" });
