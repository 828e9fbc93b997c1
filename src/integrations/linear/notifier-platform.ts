import type { NotifierPlatform } from "../../notifier/platform.ts";
import type { RunItem } from "../../runs/run-item.ts";
import { finalActivity, planFingerprint, sessionPlan } from "./activity-words.ts";
import type { LinearSender } from "./linear-sender.ts";
import { activityId, type LinearOperation, linearTarget } from "./session-messages.ts";

/** The run source of runs started from Linear (an Oz source value). */
export const LINEAR_SOURCE = "LINEAR";

/**
 * A Linear agent session as the notifier sees it (docs/surfaces.md): the "card" is the session's plan
 * (agentSessionUpdate), edited as the run moves on; the final reply is a `response` or `error` activity,
 * after the pull request is linked on the issue. Steps are the StepReporter's. A binding's workspace is
 * the organisation, its channel the agent session and its thread the issue.
 */
export function linearNotifierPlatform(deps: {
  sender: LinearSender;
  editIntervalMs: number;
  publicUrl: () => string;
}): NotifierPlatform {
  const runPage = (run: RunItem) => `${deps.publicUrl()}/runs/${run.run_id}`;
  return {
    platform: "linear",
    source: LINEAR_SOURCE,
    editIntervalMs: deps.editIntervalMs,
    target: (b) => linearTarget(b.workspace),
    fingerprint: (run, stalled) => planFingerprint(run, stalled),
    card: (run, b, _now, stalledMs) => {
      const payload: LinearOperation = {
        op: "session",
        sessionId: b.channel,
        plan: sessionPlan(run, stalledMs !== undefined),
      };
      return payload;
    },
    finalReply: (run, b) => {
      const pr = pullRequestOf(run);
      const payload: LinearOperation = {
        op: "activity",
        sessionId: b.channel,
        // One final per execution: a follow-up that runs the agent again ends with a final of its own.
        activityId: activityId(`linear-final:${run.run_id}:${run.finished_at}`),
        content: finalActivity(run, runPage(run)),
        ...(run.state === "CANCELLED" ? {} : { summaryOf: run.run_id }),
        ...(pr && b.thread
          ? { link: { issueId: b.thread, url: pr.url, title: `PR #${pr.number}: ${run.title}` } }
          : {}),
      };
      return payload;
    },
    outcomeReaction: () => undefined,
    send: (row) => deps.sender.send(row),
  };
}

function pullRequestOf(run: RunItem): { url: string; number: string } | undefined {
  const pr = (run.artifacts ?? []).findLast(
    (a) => a.artifact_type === "PULL_REQUEST" && typeof a.data?.url === "string",
  );
  if (!pr) return undefined;
  const url = String(pr.data.url);
  return { url, number: /\/pull\/(\d+)/.exec(url)?.[1] ?? "" };
}
