import { usdText } from "../../model/budget.ts";
import { deliveryLine, deliverySummary, repositoryLabel } from "../../model/delivery-summary.ts";
import type { FollowupOutcome, RunEvent } from "../../model/run.ts";
import { waitingFor } from "../../model/run-gates.ts";
import { isTerminal } from "../../model/run-state.ts";
import { costText, elapsedText, oneLine, stateWords, truncate } from "../../model/run-wording.ts";
import type { BudgetRequest } from "../../runs/budget-answer.ts";
import type { RunItem } from "../../runs/run-item.ts";
import type { ActivityContent, PlanStep } from "./linear-api.ts";

/**
 * What Dispatch says in a Linear agent session (docs/surfaces.md), as activity contents and the session's
 * plan: built from the run's wire fields and the words every surface shares (model/run-wording.ts).
 * Linear renders activity bodies as Markdown; names and text from the run are data, shown in code spans.
 */

/** Linear shows long bodies folded; beyond this a body is cut. */
const BODY_LIMIT = 4_000;
/** A step's parameter and result are one short line each. */
const STEP_LIMIT = 200;

/** The first activity of a session, before anything else can go wrong: the agent was heard. */
export function onItThought(issue: { identifier: string; title: string }): ActivityContent {
  return {
    type: "thought",
    body: `On it: ${issue.identifier} ${truncate(oneLine(issue.title), 200)}. Starting a run…`,
  };
}

/** A follow-up written in the session was handed to the run. */
export function followupThought(outcome: FollowupOutcome): ActivityContent {
  const how: Record<FollowupOutcome, string> = {
    queued_prompt: "it goes to the agent when the run starts",
    queue_pending: "the run is getting ready; the agent gets it when it starts",
    live_session: "the agent takes it at its next step",
    handoff_execution: "the run continues with it, in the same workspace and branch",
  };
  return { type: "thought", body: `Got it: ${how[outcome]}.` };
}

/**
 * A run that waits for a person asks in the session (docs/surfaces.md, "Waiting for you"): an `elicitation`
 * (Linear shows the session awaiting input) with the plan to approve, or the question; the reply in the
 * session answers it.
 */
export function elicitationActivity(
  status: { reason?: string; message?: string } | undefined,
  plan: string | undefined,
): ActivityContent {
  const reason = status?.reason;
  const lines = [`**Waiting for you: ${waitingFor(reason)}.**`];
  if (reason === "awaiting_approval") {
    if (plan?.trim()) lines.push("", truncate(plan.trim(), BODY_LIMIT - 500));
    lines.push(
      "",
      "Reply `approve` (a note after it goes to the agent) to carry this plan out in the same run, `revise <what to change>` to have it planned again, or stop the session to cancel the run.",
    );
  } else if (reason === "awaiting_budget") {
    if (status?.message) lines.push("", truncate(status.message, BODY_LIMIT - 500));
    lines.push(
      "",
      "Reply `extend $5` (any amount in US dollars) to let it spend that much more and continue, or `stop` to have it deliver what it has. The person who asked may extend within their own monthly budget; beyond it an admin must.",
    );
  } else {
    if (status?.message) lines.push("", truncate(status.message, BODY_LIMIT - 200));
    lines.push("", "Reply in this session to answer.");
  }
  return { type: "elicitation", body: truncate(lines.join("\n"), BODY_LIMIT) };
}

/** A plan answered from the session: what happens next. */
export function planAnsweredThought(action: "approve" | "revise"): ActivityContent {
  return {
    type: "thought",
    body:
      action === "approve"
        ? "Approved: the agent carries out the plan in this run."
        : "Got it: the agent revises its plan and asks again.",
  };
}

/** A budget answered from the session: what happens next. */
export function budgetAnsweredThought(request: BudgetRequest): ActivityContent {
  return {
    type: "thought",
    body:
      request.action === "extend"
        ? `Extended by ${usdText(request.amount_usd)}: the agent continues in this run.`
        : "Stopped here: the agent delivers what it has.",
  };
}

/** The session's plan: where the run is, step by step. */
export function sessionPlan(run: RunItem, stalled = false): PlanStep[] {
  const state = run.state;
  const summary = deliverySummary(run);
  const started = state !== "QUEUED";
  const ended = isTerminal(state);
  const stopped = state === "CANCELLED" || state === "FAILED" || state === "ERROR";
  const steps: PlanStep[] = [
    { content: "Start the agent in a sandbox", status: started ? "completed" : "inProgress" },
    {
      content: stalled ? "Work on the issue (no progress for a while)" : "Work on the issue",
      status: !started ? "pending" : !ended ? "inProgress" : stopped ? "canceled" : "completed",
    },
  ];
  if (summary) {
    const pr = summary.pullRequest;
    steps.push({
      content: pr
        ? `Deliver to ${repositoryLabel(summary)}: PR #${pr.number}`
        : `Deliver to ${repositoryLabel(summary)}`,
      status: pr || (ended && state === "SUCCEEDED") ? "completed" : stopped ? "canceled" : "pending",
    });
  }
  return steps;
}

/** What the plan shows, minus time: equal means the plan needs no update. */
export function planFingerprint(run: RunItem, stalled?: boolean): string {
  return JSON.stringify(sessionPlan(run, stalled));
}

/**
 * The final activity of an execution: `response` for a run that succeeded or was stopped (what was done,
 * the pull request, the cost), `error` for one that failed (what failed and what to do). `summary` is the
 * agent's last message, when the run has one.
 */
export function finalActivity(run: RunItem, runPage: string, summary?: string): ActivityContent {
  const failed = run.state === "FAILED" || run.state === "ERROR";
  const lines: string[] = [];
  if (summary?.trim()) lines.push(truncate(summary.trim(), BODY_LIMIT / 2), "");
  const facts = [stateWords(run), elapsedText(run, Date.now())];
  const cost = costText(run);
  if (cost) facts.push(cost);
  lines.push(`**${facts.join(" · ")}**`);
  const delivery = deliverySummary(run);
  const line = delivery && deliveryLine(delivery);
  if (delivery?.pullRequest)
    lines.push(
      `[PR #${delivery.pullRequest.number}](${delivery.pullRequest.url})${line ? ` · ${line}` : ""}`,
    );
  else if (line) lines.push(line);
  if (failed) {
    const why = run.status_message?.message;
    if (why) lines.push("", `What failed: ${codeSpan(truncate(oneLine(why), 500))}`);
    lines.push(
      "",
      "What to do: write in this session to have the agent try again with your instructions (same run, same branch), or open the run page for the transcript.",
    );
  }
  lines.push("", `[Run page](${runPage})`);
  return { type: failed ? "error" : "response", body: truncate(lines.join("\n"), BODY_LIMIT) };
}

/**
 * A transcript event as a session activity: a tool call (ephemeral: Linear replaces it with the next
 * activity), its result as an action with a short result, the agent's messages as thoughts. Other events
 * are not shown; `calls` remembers each call's parameter for its result.
 */
export function stepActivity(
  event: RunEvent,
  calls: Map<string, string>,
): { content: ActivityContent; ephemeral: boolean } | undefined {
  const data = event.data;
  if (event.type === "tool_call") {
    const action = text(data.tool) || "tool";
    const parameter = truncate(oneLine(parameterOf(data)), STEP_LIMIT);
    const callId = text(data.call_id);
    if (callId) calls.set(callId, parameter);
    return { content: { type: "action", action, parameter }, ephemeral: true };
  }
  if (event.type === "tool_result") {
    const action = text(data.tool) || "tool";
    const parameter = truncate(oneLine(parameterOf(data) || calls.get(text(data.call_id)) || ""), STEP_LIMIT);
    return { content: { type: "action", action, parameter, result: resultOf(data) }, ephemeral: false };
  }
  if (event.type === "message" && data.role === "assistant" && text(data.text).trim()) {
    return {
      content: { type: "thought", body: truncate(text(data.text).trim(), BODY_LIMIT) },
      ephemeral: false,
    };
  }
  return undefined;
}

function parameterOf(data: Record<string, unknown>): string {
  if (text(data.command)) return text(data.command);
  if (text(data.path)) return text(data.path);
  if (data.input && typeof data.input === "object" && Object.keys(data.input).length > 0) {
    return JSON.stringify(data.input);
  }
  return "";
}

function resultOf(data: Record<string, unknown>): string {
  const exit = typeof data.exit_code === "number" ? `exit ${data.exit_code}` : data.error ? "error" : "";
  const output = oneLine(text(data.output));
  return truncate([exit, output].filter(Boolean).join(": "), STEP_LIMIT) || "done";
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** Text in a Markdown code span: nothing inside renders as a link or a mention. */
function codeSpan(value: string): string {
  const longest = Math.max(0, ...(value.match(/`+/g) ?? []).map((r) => r.length));
  const fence = "`".repeat(longest + 1);
  return `${fence} ${value} ${fence}`;
}
