import type { FastifyInstance } from "fastify";
import type { z } from "zod";
import { answerPlan } from "../../runs/plan-approval.ts";
import type { RunService } from "../../runs/run-service.ts";
import { json, operation, route } from "../operation.ts";
import { ApproveRunRequestSchema } from "../schemas/run-approval.ts";
import { FollowupResponseSchema } from "../schemas/runs.ts";
import { idempotencyKey } from "./runs.ts";

export const runApprovalOperations = {
  approveRun: operation({
    id: "approveRun",
    method: "POST",
    path: "/agent/runs/{runId}/approve",
    tag: "runs",
    summary: "Approve a run's plan, or ask for changes to it (a Dispatch extension)",
    description:
      "Only a run that is BLOCKED with reason awaiting_approval (a `mode: plan` run whose plan is ready); any other is 409. The answer is a follow-up of the same run, which goes back to INPROGRESS.",
    access: "key",
    idempotent: true,
    body: { schema: ApproveRunRequestSchema, required: true },
    responses: {
      200: { description: "The follow-up that carries the answer.", content: json(FollowupResponseSchema) },
    },
    errors: [
      "invalid_request",
      "resource_not_found",
      "conflict",
      "idempotency_key_reused",
      "payload_too_large",
    ],
  }),
};

/** Plans that wait for approval (docs/api.md): the answer, through RunService so the access rule applies. */
export async function runApprovalRoutes(
  app: FastifyInstance,
  opts: { runService: Pick<RunService, "history" | "followup" | "replayedAnswer"> },
): Promise<void> {
  route(app, runApprovalOperations.approveRun, async (req) => {
    const key = idempotencyKey(req);
    const body = req.body as z.infer<typeof ApproveRunRequestSchema>;
    const answer =
      body.action === "revise"
        ? { action: "revise" as const, message: body.message! }
        : { action: "approve" as const, ...(body.message ? { message: body.message } : {}) };
    return answerPlan(
      opts.runService,
      { caller: req.caller!, ...(key ? { idempotencyKey: key } : {}), rawBody: req.body },
      req.params.runId,
      answer,
    );
  });
}
