import { RunError } from "../model/errors.ts";
import type { FollowupOutcome } from "../model/run.ts";
import type { RequestContext, RunService } from "./run-service.ts";

/** What a person says to a plan that waits for approval. */
export type PlanAnswer = { action: "approve"; message?: string } | { action: "revise"; message: string };

/**
 * Answers a run whose plan waits for approval (BLOCKED, awaiting_approval; docs/api.md "Plans that wait
 * for approval"): Approve continues the same run in normal mode with the plan as its brief; Request
 * changes revises the plan (plan mode again). Either is a follow-up, so the access rule's steering policy,
 * idempotency and the audit log apply as to any follow-up. A run not waiting for approval is a conflict.
 */
export async function answerPlan(
  runService: Pick<RunService, "history" | "followup" | "replayedAnswer">,
  ctx: RequestContext,
  runId: string,
  answer: PlanAnswer,
): Promise<{ followup_id: string; outcome: FollowupOutcome }> {
  const { run, events } = await runService.history(ctx.caller, runId);
  // The answer is a follow-up, remembered as one: a retry after it applied gets it again, not a conflict.
  const replayed = await runService.replayedAnswer(ctx, `followup:${runId}`);
  if (replayed) return replayed.response as { followup_id: string; outcome: FollowupOutcome };
  if (run.state !== "BLOCKED" || run.statusMessage?.error_code !== "awaiting_approval") {
    throw new RunError(
      "conflict",
      `run ${runId} is ${run.state} and has no plan waiting for approval; send a follow-up instead`,
    );
  }
  if (answer.action === "revise")
    return runService.followup(ctx, runId, { message: answer.message, mode: "plan" });
  const plan = events.findLast((e) => e.type === "message" && e.data.role === "assistant")?.data.text;
  return runService.followup(ctx, runId, {
    message: approvedMessage(String(plan ?? ""), answer.message),
    mode: "normal",
  });
}

/** What the agent is told when its plan is approved: carry it out, in the same run, the plan as its brief. */
export function approvedMessage(plan: string, note?: string): string {
  return [
    "Your plan is approved. Carry it out now and change the files it names. The plan:",
    plan,
    ...(note?.trim() ? [`The approver adds: ${note.trim()}`] : []),
  ].join("\n\n");
}
