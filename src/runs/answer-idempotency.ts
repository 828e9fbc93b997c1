import type { IdempotencyRecords } from "../store/store.ts";
import { keyReused, requestClaim } from "./idempotency-claim.ts";
import type { RequestContext } from "./run-service.ts";

/**
 * Idempotency for answers that apply only while their run waits for them (a plan's approval, a budget's
 * extension): once one applied the run no longer waits, so a retry with the same Idempotency-Key must be
 * recognised before that is checked, and get the first answer again rather than a conflict (docs/api.md).
 */

/** The first answer of a retried request, if `ctx` carries a key already used for it; 422 for another request. */
export async function replayedAnswer(
  store: IdempotencyRecords,
  ctx: RequestContext,
  endpoint: string,
): Promise<{ response: unknown } | undefined> {
  const claim = requestClaim(ctx, endpoint);
  const recall = claim && (await store.recallIdempotency(claim));
  if (!recall) return undefined;
  if (recall.kind === "key_reused") throw keyReused();
  return { response: recall.response };
}

/** Remembers the answer under the request's key (none sent: nothing to remember). */
export async function rememberAnswer(
  store: IdempotencyRecords,
  ctx: RequestContext,
  endpoint: string,
  response: unknown,
): Promise<void> {
  const claim = requestClaim(ctx, endpoint);
  if (claim) await store.rememberIdempotency(claim, response);
}
