import type { StatusMessage } from "./run.ts";
import { formatDuration } from "./run-wording.ts";

/**
 * Waiting for a person (docs/architecture.md, "Waiting for a person"): a BLOCKED run's reason says what
 * it waits for (`status_message.reason`), every surface shows "Waiting for you", and nobody answering in
 * time ends it.
 */
export const WAITING_REASONS = ["awaiting_approval", "awaiting_budget", "awaiting_input"] as const;
export type WaitingReason = (typeof WAITING_REASONS)[number];

/** What a run waits for, in words, by its reason. */
export function waitingFor(reason: string | undefined): string {
  switch (reason) {
    case "awaiting_approval":
      return "approval of its plan";
    case "awaiting_budget":
      return "more budget";
    case "awaiting_input":
      return "an answer to its question";
    default:
      return "a person";
  }
}

/** DISPATCH_BLOCKED_TIMEOUT_S when unset: three days, a weekend included. */
export const DEFAULT_BLOCKED_TIMEOUT_S = 3 * 24 * 3600;

/** How a run ends that waited longer than the timeout. */
export function unansweredStatus(waited: StatusMessage | null, timeoutS: number): StatusMessage {
  return {
    message: `Nobody answered within ${formatDuration(timeoutS * 1000)} (DISPATCH_BLOCKED_TIMEOUT_S) while it waited for ${waitingFor(waited?.error_code)}, so the run is cancelled. Send a follow-up to continue it.`,
    error_code: "unanswered",
    retryable: false,
  };
}
