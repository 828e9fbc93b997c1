import { createHash } from "node:crypto";
import type { OutboxMessage, Store } from "../../store/store.ts";
import type { ActivityContent, PlanStep } from "./linear-api.ts";

/**
 * What goes to Linear goes through the outbox (retried with backoff, Linear's rate limit honoured, never
 * sent twice): these are the rows' payloads, one operation each, sent by LinearSender.
 */
export type LinearOperation =
  | {
      op: "activity";
      sessionId: string;
      /** The activity's id, derived from the row's dedupe key: a retried create finds the one already made. */
      activityId: string;
      content: ActivityContent;
      ephemeral?: boolean;
      /** The run whose agent's last message leads the body (a final response). */
      summaryOf?: string;
      /** A pull request to link on the issue before the activity is posted. */
      link?: { issueId: string; url: string; title: string };
    }
  | {
      op: "session";
      sessionId: string;
      externalUrls?: Array<{ label: string; url: string }>;
      plan?: PlanStep[];
    }
  | { op: "start_issue"; issueId: string; appUserId: string };

/** Rows to one organisation share a target: a rate limit pauses only its rows. */
export function linearTarget(organizationId: string): string {
  return `linear:${organizationId}`;
}

/**
 * A UUID (v4 format, as agentActivityCreate takes an `id`) that is a function of `key`: the same
 * message, however often it is sent, creates one activity.
 */
export function activityId(key: string): string {
  const b = createHash("sha256").update(key).digest();
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = b.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** An activity as an outbox message. */
export function activityMessage(
  key: string,
  where: { organizationId: string; sessionId: string; stream: string },
  content: ActivityContent,
  extra: {
    ephemeral?: boolean;
    summaryOf?: string;
    link?: { issueId: string; url: string; title: string };
  } = {},
): OutboxMessage {
  const payload: LinearOperation = {
    op: "activity",
    sessionId: where.sessionId,
    activityId: activityId(key),
    content,
    ...extra,
  };
  return {
    dedupeKey: key,
    kind: "reply",
    stream: where.stream,
    target: linearTarget(where.organizationId),
    payload,
  };
}

/**
 * The messages of one agent session before and beside its run: the first thought, the run page link, the
 * issue moved to started, answers to what was written there. In one stream, so they go out in order.
 */
export class SessionMessages {
  private readonly store: Pick<Store, "enqueueOutbox">;
  readonly organizationId: string;
  readonly sessionId: string;

  constructor(store: Pick<Store, "enqueueOutbox">, organizationId: string, sessionId: string) {
    this.store = store;
    this.organizationId = organizationId;
    this.sessionId = sessionId;
  }

  private get where() {
    return {
      organizationId: this.organizationId,
      sessionId: this.sessionId,
      stream: `linear-session:${this.sessionId}`,
    };
  }

  /** `key` names what is answered (a delivery, an activity): a redelivery enqueues it again, and the outbox drops it. */
  activity(key: string, content: ActivityContent): Promise<void> {
    return this.enqueue(activityMessage(`linear:${this.sessionId}:${key}`, this.where, content));
  }

  /** The session links to the run page (and Linear stops counting the session as unresponsive). */
  linkRun(runId: string, runPage: string): Promise<void> {
    const payload: LinearOperation = {
      op: "session",
      sessionId: this.sessionId,
      externalUrls: [{ label: "Dispatch run", url: runPage }],
    };
    return this.enqueue({
      dedupeKey: `linear:${this.sessionId}:urls:${runId}`,
      kind: "reply",
      stream: this.where.stream,
      target: linearTarget(this.organizationId),
      payload,
    });
  }

  startIssue(issueId: string, appUserId: string): Promise<void> {
    const payload: LinearOperation = { op: "start_issue", issueId, appUserId };
    return this.enqueue({
      dedupeKey: `linear:${this.sessionId}:start-issue`,
      kind: "reply",
      stream: this.where.stream,
      target: linearTarget(this.organizationId),
      payload,
    });
  }

  private enqueue(message: OutboxMessage): Promise<void> {
    return this.store.enqueueOutbox(`linear:${this.sessionId}`, [message]);
  }
}
