import type { OutboxRow } from "../store/store.ts";

/**
 * One platform's side of the outbox: sends one row in one attempt. Retries, backoff, Retry-After pauses
 * and dead letters are the OutboxDeliverer's job, the same for every platform; a transport only says what
 * went wrong, through SendError.
 */
export interface OutboxTransport {
  /** Rows whose target starts with `<platform>:` go through this transport ("slack", "github"). */
  readonly platform: string;
  /** Sends the row; `cardTs` is the id of a card message it created (Slack ts, GitHub comment id). */
  send(row: OutboxRow): Promise<{ cardTs?: string }>;
}

/** A failed call, classified for the outbox. */
export class SendError extends Error {
  readonly kind: "rate_limited" | "retryable" | "permanent";
  readonly retryAfterMs: number | undefined;

  constructor(kind: SendError["kind"], message: string, retryAfterMs?: number) {
    super(message);
    this.name = "SendError";
    this.kind = kind;
    this.retryAfterMs = retryAfterMs;
  }
}

/** The platform part of an outbox target ("slack:T1:C1" → "slack"). */
export function targetPlatform(target: string): string {
  const i = target.indexOf(":");
  return i < 0 ? target : target.slice(0, i);
}
