import { randomUUID } from "node:crypto";
import { withoutSecrets } from "../model/config-secrets.ts";
import type { RunRecord } from "../model/run.ts";
import type {
  WebhookDelivery,
  WebhookDeliveryState,
  WebhookEndpoint,
  WebhookEvent,
  WebhookEventType,
} from "../model/webhook.ts";
import { type Row, str } from "./rows.ts";
import type { ClaimedWebhookDelivery } from "./store-types.ts";

/** The webhook tables' rows as records, and what both backends write the same way. */

export function toWebhookEndpoint(row: Row): WebhookEndpoint {
  return {
    id: String(row.id),
    teamId: String(row.team_id),
    url: String(row.url),
    events: JSON.parse(String(row.events)) as WebhookEventType[],
    description: str(row.description),
    secret: String(row.secret),
    createdBy: String(row.created_by),
    createdAt: String(row.created_at),
  };
}

export function toWebhookDelivery(row: Row): WebhookDelivery {
  return {
    id: Number(row.id),
    endpointId: String(row.endpoint_id),
    eventId: String(row.event_id),
    eventType: row.event_type as WebhookEventType,
    runId: String(row.run_id),
    state: row.state as WebhookDeliveryState,
    attempts: Number(row.attempts),
    nextAttemptAt: row.state === "pending" ? String(row.next_attempt_at) : null,
    lastAttemptAt: str(row.last_attempt_at),
    lastStatus: row.last_status === null || row.last_status === undefined ? null : Number(row.last_status),
    lastError: str(row.last_error),
    responseExcerpt: str(row.response_excerpt),
    createdAt: String(row.created_at),
    finishedAt: str(row.finished_at),
  };
}

/** A claimed delivery joined with its endpoint (`url`, `secret`) and its event (`e_*` columns). */
export function toClaimedWebhookDelivery(row: Row): ClaimedWebhookDelivery {
  return {
    ...toWebhookDelivery(row),
    url: String(row.url),
    secret: String(row.secret),
    event: {
      id: String(row.event_id),
      teamId: String(row.e_team_id),
      runId: String(row.run_id),
      type: row.event_type as WebhookEventType,
      timestamp: String(row.e_occurred_at),
      data: JSON.parse(String(row.e_data)) as Record<string, unknown>,
      run: JSON.parse(String(row.e_run)) as RunRecord,
    },
  };
}

/** The event row to insert for `run`: its MCP servers' secret values are not stored a second time. */
export function newWebhookEvent(
  run: RunRecord,
  event: Pick<WebhookEvent, "type" | "data" | "timestamp">,
): Omit<WebhookEvent, "run"> & { runJson: string } {
  return {
    id: `msg_${randomUUID().replaceAll("-", "")}`,
    teamId: run.teamId,
    runId: run.id,
    type: event.type,
    timestamp: event.timestamp,
    data: event.data,
    runJson: JSON.stringify({ ...run, agentConfig: withoutSecrets(run.agentConfig) }),
  };
}

/** The endpoints (of `rows`) that take events of `type`. */
export function endpointsTaking(rows: Row[], type: WebhookEventType): string[] {
  return rows
    .filter((row) => (JSON.parse(String(row.events)) as string[]).includes(type))
    .map((row) => String(row.id));
}
