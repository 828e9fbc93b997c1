import { isApiError, isNetworkError, isRateLimitError } from "jira.js/core";
import { SendError } from "../../notifier/platform.ts";
import { isJiraTimeout } from "./jira-api.ts";

/** A 429 without a usable Retry-After pauses the site this long. */
const DEFAULT_RATE_LIMIT_PAUSE_MS = 60_000;
/**
 * Handling a delivery waits out a Retry-After up to this long, this many times, before handing it back:
 * well within the delivery's lease (DISPATCH_LEASE_MS, 30 s by default).
 */
const MAX_INLINE_WAIT_MS = 10_000;
const MAX_INLINE_WAITS = 2;

/** How long Jira asked to be left alone, when the error is its 429; undefined otherwise. */
export function retryAfterMs(err: unknown): number | undefined {
  if (!isRateLimitError(err)) return undefined;
  const ms = err.retryAfterMs;
  return typeof ms === "number" && Number.isFinite(ms) ? Math.max(1, ms) : DEFAULT_RATE_LIMIT_PAUSE_MS;
}

/**
 * A failed call as the outbox retries it: a 429 pauses the site's target until Retry-After; a network
 * error, a timeout, a 5xx or a 409 (an edit racing another) is retried with backoff; a refused credential,
 * a permission, a missing issue or a refused body is permanent (retrying changes nothing).
 */
export function sendErrorOf(err: unknown): SendError {
  if (err instanceof SendError) return err;
  const wait = retryAfterMs(err);
  const message = `Jira: ${err instanceof Error ? err.message : String(err)}`.slice(0, 500);
  if (wait !== undefined) return new SendError("rate_limited", message, Math.min(wait, 15 * 60_000));
  if (isNetworkError(err) || isJiraTimeout(err)) return new SendError("retryable", message);
  if (isApiError(err)) {
    if (err.status === 401) {
      return new SendError(
        "permanent",
        `${message} (the credentials were refused: check JIRA_EMAIL and JIRA_API_TOKEN, or JIRA_PAT)`,
      );
    }
    if (err.status >= 500 || err.status === 408 || err.status === 409) {
      return new SendError("retryable", message);
    }
    return new SendError("permanent", message);
  }
  return new SendError("retryable", message);
}

/**
 * Runs `call`, waiting out Jira's Retry-After (when it is short) and trying again: handling a delivery
 * honours a 429 where it happens rather than failing the delivery. A long wait is thrown, and the inbox
 * tries the delivery again later.
 */
export async function patiently<T>(call: () => Promise<T>): Promise<T> {
  for (let waited = 0; ; waited++) {
    try {
      return await call();
    } catch (err) {
      const wait = retryAfterMs(err);
      if (wait === undefined || wait > MAX_INLINE_WAIT_MS || waited >= MAX_INLINE_WAITS) throw err;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}
