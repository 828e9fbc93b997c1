import type { GitHubConfig } from "../../config.ts";
import { type CommentPayload, whyIgnored as whyCommentIgnored, whyNotAPerson } from "./comment-payload.ts";
import { mentionsHandle } from "./mention.ts";

/**
 * The webhook events Dispatch acts on (docs/surfaces.md, GitHub), each with why a delivery of it is not a
 * trigger and the keys it is deduplicated on besides its delivery id. Deciding is pure and cheap: it runs
 * on the verified payload before anything is written, so an event that asks nothing costs no store write.
 * The payload fields read are those of @octokit/webhooks-types.
 */

/** Who Dispatch is on GitHub, and the label that starts a run. */
export type TriggerSettings = Pick<GitHubConfig, "botHandle" | "appId"> & { label: string };

// biome-ignore lint/suspicious/noExplicitAny: webhook payloads are read field by field, each checked
export type Payload = Record<string, any>;

interface TriggerEvent {
  whyIgnored(p: Payload, bot: TriggerSettings): string | undefined;
  keys(p: Payload): string[];
}

/** Conclusions of a finished check suite or workflow run that mean "CI failed". */
const FAILED = new Set(["failure", "timed_out"]);

const TRIGGERS: Record<string, TriggerEvent> = {
  issue_comment: {
    whyIgnored: (p, bot) => whyCommentIgnored(p as CommentPayload, bot),
    keys: (p) => [`github:comment:${p.repository.full_name}:${p.comment.id}`],
  },
  pull_request_review_comment: {
    whyIgnored: (p, bot) =>
      p.action !== "created"
        ? `action ${p.action}`
        : (whyNotAPerson(p, p.comment, bot) ??
          (mentionsHandle(String(p.comment.body ?? ""), bot.botHandle) ? undefined : "no mention")),
    keys: (p) => [`github:review-comment:${p.repository.full_name}:${p.comment.id}`],
  },
  pull_request_review: {
    whyIgnored: (p, bot) => {
      if (p.action !== "submitted") return `action ${p.action}`;
      const why = whyNotAPerson(p, p.review, bot);
      if (why) return why;
      if (String(p.review.state).toLowerCase() === "changes_requested") return undefined;
      return mentionsHandle(String(p.review.body ?? ""), bot.botHandle) ? undefined : "no mention";
    },
    keys: (p) => [`github:review:${p.repository.full_name}:${p.review.id}`],
  },
  check_suite: {
    whyIgnored: (p) => ciIgnored(p, p.check_suite),
    keys: () => [],
  },
  workflow_run: {
    whyIgnored: (p) => ciIgnored(p, p.workflow_run),
    keys: (p) => [
      `github:workflow-run:${p.repository.full_name}:${p.workflow_run.id}:${p.workflow_run.run_attempt ?? 1}`,
    ],
  },
  issues: {
    whyIgnored: (p, bot) => {
      if (!p.repository?.full_name || !p.issue) return "incomplete payload";
      if (p.sender?.type === "Bot") return "bot";
      if (p.action === "labeled") {
        return String(p.label?.name ?? "").toLowerCase() === bot.label.toLowerCase()
          ? undefined
          : "other label";
      }
      if (p.action === "assigned") {
        // Token mode: the bot is a user that can be assigned (an App cannot be).
        return String(p.assignee?.login ?? "").toLowerCase() === bot.botHandle.toLowerCase()
          ? undefined
          : "assigned to someone else";
      }
      return `action ${p.action}`;
    },
    keys: () => [],
  },
  pull_request: {
    whyIgnored: (p) =>
      p.action !== "closed"
        ? `action ${p.action}`
        : p.pull_request?.number
          ? undefined
          : "incomplete payload",
    keys: (p) => [`github:pr-closed:${p.repository.full_name}:${p.pull_request.number}`],
  },
};

/** The events Dispatch acts on: the App manifest subscribes to exactly these. */
export const TRIGGER_EVENTS: readonly string[] = Object.keys(TRIGGERS);

/** Events whose payload Dispatch reads (the rest are acknowledged and dropped). */
export function isTriggerEvent(event: string): boolean {
  return Object.hasOwn(TRIGGERS, event);
}

/** Why this delivery is not a trigger (undefined: it is one). */
export function whyIgnored(event: string, p: Payload, bot: TriggerSettings): string | undefined {
  const trigger = Object.hasOwn(TRIGGERS, event) ? TRIGGERS[event] : undefined;
  if (!trigger) return `event ${event}`;
  if (!p.repository?.full_name) return "incomplete payload";
  try {
    return trigger.whyIgnored(p, bot);
  } catch {
    // A payload missing what its event always carries is not GitHub's: nothing to act on.
    return "incomplete payload";
  }
}

/** The dedupe keys of a trigger besides its delivery id. */
export function triggerKeys(event: string, p: Payload): string[] {
  return TRIGGERS[event]?.keys(p) ?? [];
}

/** A finished check suite or workflow run is a trigger when it failed on a pull request's commit. */
function ciIgnored(p: Payload, run: Payload | undefined): string | undefined {
  if (!run) return "incomplete payload";
  if (p.action !== "completed") return `action ${p.action}`;
  if (!FAILED.has(String(run.conclusion))) return `conclusion ${run.conclusion}`;
  if (!Array.isArray(run.pull_requests) || run.pull_requests.length === 0) return "no pull request";
  return undefined;
}
