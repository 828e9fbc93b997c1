import type { WebhookEvent } from "../model/webhook.ts";
import { toRunItem } from "../runs/run-item.ts";

/**
 * A webhook's JSON body (docs/api.md, "Webhooks"): `{type, timestamp, data}`, Standard Webhooks' shape,
 * where `data` holds the run id, what the event type adds (previous_state, the follow-up, the delivery) and
 * the run as GET /agent/runs/{id} showed it when the event happened.
 */
export function webhookBody(
  event: WebhookEvent,
  publicUrl: string,
  queuedPrompts: readonly string[],
): string {
  return JSON.stringify({
    type: event.type,
    timestamp: event.timestamp,
    data: { run_id: event.runId, ...event.data, run: toRunItem(event.run, publicUrl, { queuedPrompts }) },
  });
}
