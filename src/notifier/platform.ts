import type { ThreadBinding } from "../model/thread-binding.ts";
import type { RunView } from "../runs/waiting-run.ts";
import type { OutboxRow } from "../store/store.ts";

/**
 * How one surface's platform shows runs and delivers what the notifier decided. The notifier owns
 * the tick, the card state and the outbox (retries, backoff, Retry-After pauses, dead letters), the same
 * for every platform; a platform renders and sends. Each integration folder provides its own.
 */
export interface NotifierPlatform {
  /** Rows whose target starts with `<platform>:` are sent by this platform. */
  readonly platform: ThreadBinding["platform"];
  /**
   * The run source of the runs its surface starts (RunsApi `source`). Such a run is bound to its thread
   * right after it is created, so one without a binding yet is looked at again for a while.
   */
  readonly source: string;
  /** At most one card edit per run per this window. */
  readonly editIntervalMs: number;
  /** Where a binding's messages go: rate limits pause only that target's rows. */
  target(binding: ThreadBinding): string;
  /**
   * A run waiting for its plan to be approved comes with the plan (RunView), so the card can show it.
   *
   * What the card shows, minus a running run's elapsed time: equal means no edit is needed. `stalled`: the
   * card says the run has made no progress for a while (model/stall.ts), without saying how long.
   */
  fingerprint(run: RunView, stalled?: boolean): string;
  /** `stalledMs`: how long a stalled run has been without progress (undefined: it is not stalled). */
  card(run: RunView, binding: ThreadBinding, now: number, stalledMs?: number): Record<string, unknown>;
  finalReply(run: RunView, binding: ThreadBinding): Record<string, unknown>;
  /** The reaction on the triggering message for a terminal state, if the platform shows one. */
  outcomeReaction(run: RunView, binding: ThreadBinding): Record<string, unknown> | undefined;
  /**
   * Sends one outbox row in one attempt (`row.threadKey` names its thread among the run's). `cardRef` is the
   * platform's id of a card message it created (a chat message id, a comment id); `thread`, when that card
   * became the root of the binding's thread (a chat card posted in a channel starts its thread). Failures are thrown as SendError.
   */
  send(row: OutboxRow): Promise<{ cardRef?: string; thread?: string }>;
}

/** A failed send, classified for the outbox. */
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

/** The platform part of an outbox target ("chat:T1:C1" → "chat"). */
export function targetPlatform(target: string): string {
  const i = target.indexOf(":");
  return i < 0 ? target : target.slice(0, i);
}
