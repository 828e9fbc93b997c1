import type { RunEventType, RunRecord } from "./run.ts";

/**
 * Outbound webhooks (docs/api.md, "Webhooks"): what a team's endpoints are told about its runs, in the
 * Standard Webhooks format. Every change a webhook reports also appends a transcript event, so the store
 * derives the webhook event from that transcript event (webhookEventOf) in the transaction that appends it.
 */

export const WEBHOOK_EVENT_TYPES = [
  "run.created",
  "run.state_changed",
  "run.followup",
  "run.delivered",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export interface WebhookEndpoint {
  /** `wh_` and 16 hex digits. */
  id: string;
  teamId: string;
  url: string;
  /** The event types sent to it (all of them when created without a list). */
  events: WebhookEventType[];
  description: string | null;
  /** `whsec_` + base64 of the signing key: shown once, at creation. */
  secret: string;
  /** The principal who created it. */
  createdBy: string;
  createdAt: string;
}

/**
 * One event of a run, sent to every endpoint of the run's team that takes its type. `data` is what the
 * type adds to the run (previous_state, the follow-up, the delivery); `run` is the run as it was then.
 */
export interface WebhookEvent {
  /** `msg_…`: the webhook-id header, the same on every attempt and endpoint (receivers deduplicate on it). */
  id: string;
  teamId: string;
  runId: string;
  type: WebhookEventType;
  /** When it happened (the transcript event's time). */
  timestamp: string;
  data: Record<string, unknown>;
  run: RunRecord;
}

export const WEBHOOK_DELIVERY_STATES = ["pending", "sending", "succeeded", "failed"] as const;
export type WebhookDeliveryState = (typeof WEBHOOK_DELIVERY_STATES)[number];

/** One event on its way to one endpoint, and how its attempts went. */
export interface WebhookDelivery {
  id: number;
  endpointId: string;
  eventId: string;
  eventType: WebhookEventType;
  runId: string;
  state: WebhookDeliveryState;
  attempts: number;
  /** When the next attempt is due (while pending). */
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  /** The HTTP status of the last answer; null when there was none (refused, timed out, unreachable). */
  lastStatus: number | null;
  lastError: string | null;
  /** The start of the last answer's body, at most WEBHOOK_EXCERPT_CHARS. */
  responseExcerpt: string | null;
  createdAt: string;
  /** When it succeeded or failed for good. */
  finishedAt: string | null;
}

/** How much of a receiver's answer is kept. */
export const WEBHOOK_EXCERPT_CHARS = 500;

/**
 * The webhook event a transcript event stands for, without the run: the first `state` event is the run's
 * creation, every later one a state change; a `followup` event a follow-up; a pushed branch (the log event
 * delivery writes, src/delivery/branch-ownership.ts) and a PULL_REQUEST artifact (opened, or updated by a
 * later push) a delivery. Undefined for every other event.
 */
export function webhookEventOf(
  type: RunEventType,
  data: Record<string, unknown>,
): { type: WebhookEventType; data: Record<string, unknown> } | undefined {
  if (type === "state") {
    if (data.previous === null || data.previous === undefined) return { type: "run.created", data: {} };
    return { type: "run.state_changed", data: { state: data.state, previous_state: data.previous } };
  }
  if (type === "followup") {
    return {
      type: "run.followup",
      data: {
        followup: { id: data.followup_id, message: data.message, mode: data.mode, outcome: data.outcome },
      },
    };
  }
  if (type === "log" && data.phase === "delivery" && typeof data.pushed_branch === "string") {
    return { type: "run.delivered", data: { delivery: { kind: "branch", branch: data.pushed_branch } } };
  }
  if (type === "artifact" && data.artifact_type === "PULL_REQUEST") {
    const pr = (data.data ?? {}) as Record<string, unknown>;
    return {
      type: "run.delivered",
      data: {
        delivery: {
          kind: "pull_request",
          action: pr.updated_at ? "updated" : "opened",
          url: pr.url,
          number: pr.number,
          repository: pr.repository,
          branch: pr.branch,
          base: pr.base,
          head_sha: pr.head_sha,
        },
      },
    };
  }
  return undefined;
}
