import type { SQLInputValue } from "node:sqlite";
import type { RunEventType } from "../../model/run.ts";
import { type WebhookDelivery, type WebhookEndpoint, webhookEventOf } from "../../model/webhook.ts";
import { iso } from "../rows.ts";
import type { ClaimedWebhookDelivery, WebhookAttemptResult, WebhookDeliveryPage } from "../store.ts";
import {
  endpointsTaking,
  newWebhookEvent,
  toClaimedWebhookDelivery,
  toWebhookDelivery,
  toWebhookEndpoint,
} from "../webhook-rows.ts";
import type { Database } from "./database.ts";
import { type Row, RUN_COLUMNS, runFromValues } from "./rows.ts";

/** Webhooks: a team's endpoints, run events, and the outbox of their deliveries to each endpoint. */

/**
 * Writes the webhook event a transcript event stands for (if any) and its delivery to each endpoint of the
 * run's team that takes it; called by insertEvent, inside the transaction that appends the event.
 */
export function enqueueWebhooks(
  db: Database,
  runId: string,
  type: RunEventType,
  data: Record<string, unknown>,
  at: string,
): void {
  const event = webhookEventOf(type, data);
  if (!event) return;
  const endpoints = db
    .sql(
      `SELECT e.id, e.events FROM webhook_endpoints e JOIN runs r ON r.team_id = e.team_id
        WHERE r.id = ? ORDER BY e.created_at, e.id`,
    )
    .all(runId) as Row[];
  const ids = endpointsTaking(endpoints, event.type);
  if (ids.length === 0) return;
  const values = db
    .sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = ?`, { arrays: true })
    .get(runId) as unknown as SQLInputValue[];
  const row = newWebhookEvent(runFromValues(values), { ...event, timestamp: at });
  db.sql(
    "INSERT INTO webhook_events (id, team_id, run_id, type, occurred_at, data, run) VALUES (?, ?, ?, ?, ?, ?, ?)",
  ).run(row.id, row.teamId, row.runId, row.type, row.timestamp, JSON.stringify(row.data), row.runJson);
  for (const endpointId of ids) {
    db.sql(
      `INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, run_id, state, attempts, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)`,
    ).run(endpointId, row.id, row.type, runId, at, at);
  }
  db.signalOnCommit("webhook_queued");
}

export async function createWebhookEndpoint(db: Database, endpoint: WebhookEndpoint): Promise<void> {
  await db.grouped(() =>
    db
      .sql(
        `INSERT INTO webhook_endpoints (id, team_id, url, events, description, secret, created_by, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        endpoint.id,
        endpoint.teamId,
        endpoint.url,
        JSON.stringify(endpoint.events),
        endpoint.description,
        endpoint.secret,
        endpoint.createdBy,
        endpoint.createdAt,
      ),
  );
}

export async function listWebhookEndpoints(db: Database, teamId: string): Promise<WebhookEndpoint[]> {
  return (
    db.sql("SELECT * FROM webhook_endpoints WHERE team_id = ? ORDER BY created_at, id").all(teamId) as Row[]
  ).map(toWebhookEndpoint);
}

export async function getWebhookEndpoint(
  db: Database,
  teamId: string,
  id: string,
): Promise<WebhookEndpoint | undefined> {
  const row = db.sql("SELECT * FROM webhook_endpoints WHERE id = ? AND team_id = ?").get(id, teamId) as
    | Row
    | undefined;
  return row ? toWebhookEndpoint(row) : undefined;
}

export async function deleteWebhookEndpoint(db: Database, teamId: string, id: string): Promise<boolean> {
  // Its deliveries go with it (ON DELETE CASCADE); their events are pruned once no delivery names them.
  return db.grouped(
    () =>
      Number(db.sql("DELETE FROM webhook_endpoints WHERE id = ? AND team_id = ?").run(id, teamId).changes) ===
      1,
  );
}

export async function listWebhookDeliveries(
  db: Database,
  teamId: string,
  endpointId: string,
  page: WebhookDeliveryPage,
): Promise<{ deliveries: WebhookDelivery[]; hasMore: boolean } | undefined> {
  if (!(await getWebhookEndpoint(db, teamId, endpointId))) return undefined;
  const rows = db
    .sql(
      "SELECT * FROM webhook_deliveries WHERE endpoint_id = ? AND id < ? ORDER BY id DESC LIMIT (SELECT ?)",
    )
    .all(endpointId, page.before ?? Number.MAX_SAFE_INTEGER, page.limit + 1) as Row[];
  return {
    deliveries: rows.slice(0, page.limit).map(toWebhookDelivery),
    hasMore: rows.length > page.limit,
  };
}

function teamDelivery(db: Database, teamId: string, endpointId: string, id: number): Row | undefined {
  return db
    .sql(
      `SELECT d.* FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE d.id = ? AND d.endpoint_id = ? AND e.team_id = ?`,
    )
    .get(id, endpointId, teamId) as Row | undefined;
}

export async function getWebhookDelivery(
  db: Database,
  teamId: string,
  endpointId: string,
  id: number,
): Promise<WebhookDelivery | undefined> {
  const row = teamDelivery(db, teamId, endpointId, id);
  return row ? toWebhookDelivery(row) : undefined;
}

export async function redeliverWebhook(
  db: Database,
  teamId: string,
  endpointId: string,
  id: number,
  at: string,
): Promise<WebhookDelivery | "sending" | undefined> {
  return db.grouped(() => {
    const row = teamDelivery(db, teamId, endpointId, id);
    if (!row) return undefined;
    if (row.state === "sending") return "sending";
    const updated = db
      .sql(
        `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ?, finished_at = NULL,
            lease_owner = NULL, lease_expires_at = NULL
          WHERE id = ? RETURNING *`,
      )
      .get(at, id) as Row;
    db.signalOnCommit("webhook_queued");
    return toWebhookDelivery(updated);
  });
}

export async function claimWebhookDeliveries(
  db: Database,
  owner: string,
  opts: { limit: number; leaseMs: number },
): Promise<ClaimedWebhookDelivery[]> {
  return db.grouped(() => {
    const now = Date.now();
    const nowIso = iso(now);
    // Due rows in due order, each the first unfinished delivery of its run to its endpoint.
    const due = db
      .sql(
        `SELECT d.id FROM webhook_deliveries d
          WHERE d.state IN ('pending', 'sending') AND d.next_attempt_at <= ?
            AND (d.state = 'pending' OR d.lease_expires_at < ?)
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
                             WHERE p.endpoint_id = d.endpoint_id AND p.run_id = d.run_id AND p.id < d.id
                               AND p.state IN ('pending', 'sending'))
          ORDER BY d.next_attempt_at, d.id LIMIT (SELECT ?)`,
      )
      .all(nowIso, nowIso, opts.limit) as Row[];
    return due.map((row) => {
      db.sql(
        `UPDATE webhook_deliveries SET state = 'sending', attempts = attempts + 1, lease_owner = ?, lease_expires_at = ?
          WHERE id = ?`,
      ).run(owner, iso(now + opts.leaseMs), row.id!);
      return toClaimedWebhookDelivery(
        db
          .sql(
            `SELECT d.*, e.url, e.secret, v.team_id AS e_team_id, v.occurred_at AS e_occurred_at, v.data AS e_data,
                v.run AS e_run
              FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
                JOIN webhook_events v ON v.id = d.event_id
              WHERE d.id = ?`,
          )
          .get(row.id!) as Row,
      );
    });
  });
}

export async function finishWebhookAttempt(
  db: Database,
  id: number,
  owner: string,
  r: WebhookAttemptResult,
): Promise<boolean> {
  const state = r.outcome === "retry" ? "pending" : r.outcome;
  return db.grouped(() => {
    const res = db
      .sql(
        `UPDATE webhook_deliveries SET state = ?, next_attempt_at = COALESCE(?, next_attempt_at),
            finished_at = ?, lease_owner = NULL, lease_expires_at = NULL, last_attempt_at = ?, last_status = ?,
            last_error = ?, response_excerpt = ?
          WHERE id = ? AND state = 'sending' AND lease_owner = ?`,
      )
      .run(
        state,
        r.nextAttemptAt ?? null,
        state === "pending" ? null : r.at,
        r.at,
        r.status,
        r.error,
        r.responseExcerpt,
        id,
        owner,
      );
    return Number(res.changes) === 1;
  });
}

export async function releaseWebhookDelivery(db: Database, id: number, owner: string): Promise<void> {
  await db.grouped(() =>
    db
      .sql(
        `UPDATE webhook_deliveries SET state = 'pending', attempts = max(attempts - 1, 0), next_attempt_at = ?,
            lease_owner = NULL, lease_expires_at = NULL
          WHERE id = ? AND state = 'sending' AND lease_owner = ?`,
      )
      .run(iso(Date.now()), id, owner),
  );
}

export async function pruneWebhookDeliveries(db: Database, olderThan: string): Promise<number> {
  return db.grouped(() => {
    const deliveries = db
      .sql("DELETE FROM webhook_deliveries WHERE state IN ('succeeded', 'failed') AND finished_at < ?")
      .run(olderThan).changes;
    db.sql(
      `DELETE FROM webhook_events WHERE occurred_at < ?
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.id)`,
    ).run(olderThan);
    return Number(deliveries);
  });
}
