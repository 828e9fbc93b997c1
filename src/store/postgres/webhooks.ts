import type { RunEventType } from "../../model/run.ts";
import { type WebhookDelivery, type WebhookEndpoint, webhookEventOf } from "../../model/webhook.ts";
import { iso, toRun } from "../rows.ts";
import type { ClaimedWebhookDelivery, WebhookAttemptResult, WebhookDeliveryPage } from "../store.ts";
import {
  endpointsTaking,
  newWebhookEvent,
  toClaimedWebhookDelivery,
  toWebhookDelivery,
  toWebhookEndpoint,
} from "../webhook-rows.ts";
import type { Database, Row, Sql, Tx } from "./database.ts";

/** Webhooks: a team's endpoints, run events, and the outbox of their deliveries to each endpoint. */

/**
 * Writes the webhook event a transcript event stands for (if any) and its delivery to each endpoint of the
 * run's team that takes it; called by insertEvent, inside the transaction that appends the event.
 */
export async function enqueueWebhooks(
  tx: Tx,
  runId: string,
  type: RunEventType,
  data: Record<string, unknown>,
  at: string,
  /** The run's team's endpoints when the caller read them already (webhookEndpoints). */
  known?: Row[],
): Promise<void> {
  const event = webhookEventOf(type, data);
  if (!event) return;
  const endpoints =
    known ??
    (await tx.rows(
      `SELECT e.id, e.events FROM webhook_endpoints e JOIN runs r ON r.team_id = e.team_id
        WHERE r.id = $1 ORDER BY e.created_at, e.id`,
      [runId],
    ));
  const ids = endpointsTaking(endpoints, event.type);
  if (ids.length === 0) return;
  const run = toRun((await tx.row("SELECT * FROM runs WHERE id = $1", [runId]))!);
  const row = newWebhookEvent(run, { ...event, timestamp: at });
  await tx.changes(
    "INSERT INTO webhook_events (id, team_id, run_id, type, occurred_at, data, run) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    [row.id, row.teamId, row.runId, row.type, row.timestamp, JSON.stringify(row.data), row.runJson],
  );
  await tx.changes(
    `INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, run_id, state, attempts, next_attempt_at, created_at)
     SELECT unnest($1::text[]), $2, $3, $4, 'pending', 0, $5, $5`,
    [ids, row.id, row.type, runId, at],
  );
  tx.signal("webhook_queued");
}

/** The endpoints a statement read as json_agg(json_build_object('id', …, 'events', …)), as enqueueWebhooks takes them. */
export function webhookEndpoints(aggregated: unknown): Row[] {
  if (aggregated === null || aggregated === undefined) return [];
  return JSON.parse(String(aggregated)) as Row[];
}

export async function createWebhookEndpoint(db: Database, endpoint: WebhookEndpoint): Promise<void> {
  await db.changes(
    `INSERT INTO webhook_endpoints (id, team_id, url, events, description, secret, created_by, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      endpoint.id,
      endpoint.teamId,
      endpoint.url,
      JSON.stringify(endpoint.events),
      endpoint.description,
      endpoint.secret,
      endpoint.createdBy,
      endpoint.createdAt,
    ],
  );
}

export async function listWebhookEndpoints(db: Database, teamId: string): Promise<WebhookEndpoint[]> {
  const rows = await db.rows("SELECT * FROM webhook_endpoints WHERE team_id = $1 ORDER BY created_at, id", [
    teamId,
  ]);
  return rows.map(toWebhookEndpoint);
}

export async function getWebhookEndpoint(
  db: Sql,
  teamId: string,
  id: string,
): Promise<WebhookEndpoint | undefined> {
  const row = await db.row("SELECT * FROM webhook_endpoints WHERE id = $1 AND team_id = $2", [id, teamId]);
  return row ? toWebhookEndpoint(row) : undefined;
}

export async function deleteWebhookEndpoint(db: Database, teamId: string, id: string): Promise<boolean> {
  // Its deliveries go with it (ON DELETE CASCADE); their events are pruned once no delivery names them.
  return (
    (await db.changes("DELETE FROM webhook_endpoints WHERE id = $1 AND team_id = $2", [id, teamId])) === 1
  );
}

export async function listWebhookDeliveries(
  db: Database,
  teamId: string,
  endpointId: string,
  page: WebhookDeliveryPage,
): Promise<{ deliveries: WebhookDelivery[]; hasMore: boolean } | undefined> {
  if (!(await getWebhookEndpoint(db, teamId, endpointId))) return undefined;
  const rows = await db.rows(
    "SELECT * FROM webhook_deliveries WHERE endpoint_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3",
    [endpointId, page.before ?? Number.MAX_SAFE_INTEGER, page.limit + 1],
  );
  return {
    deliveries: rows.slice(0, page.limit).map(toWebhookDelivery),
    hasMore: rows.length > page.limit,
  };
}

const TEAM_DELIVERY = `SELECT d.* FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
  WHERE d.id = $1 AND d.endpoint_id = $2 AND e.team_id = $3`;

export async function getWebhookDelivery(
  db: Database,
  teamId: string,
  endpointId: string,
  id: number,
): Promise<WebhookDelivery | undefined> {
  const row = await db.row(TEAM_DELIVERY, [id, endpointId, teamId]);
  return row ? toWebhookDelivery(row) : undefined;
}

export async function redeliverWebhook(
  db: Database,
  teamId: string,
  endpointId: string,
  id: number,
  at: string,
): Promise<WebhookDelivery | "sending" | undefined> {
  return db.tx(async (tx) => {
    const row = await tx.row(`${TEAM_DELIVERY} FOR UPDATE OF d`, [id, endpointId, teamId]);
    if (!row) return undefined;
    if (row.state === "sending") return "sending";
    const updated = await tx.row(
      `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = $1, finished_at = NULL,
          lease_owner = NULL, lease_expires_at = NULL
        WHERE id = $2 RETURNING *`,
      [at, id],
    );
    tx.signal("webhook_queued");
    return toWebhookDelivery(updated!);
  });
}

/**
 * Claims due deliveries in one statement. SKIP LOCKED: a delivery another replica is claiming right now is
 * left to it; the later deliveries of its run to its endpoint still see it unfinished and wait, so replicas
 * never send one delivery twice nor a run's events out of order.
 */
export async function claimWebhookDeliveries(
  db: Database,
  owner: string,
  opts: { limit: number; leaseMs: number },
): Promise<ClaimedWebhookDelivery[]> {
  const now = Date.now();
  const rows = await db.rows(
    `WITH claimed AS (
       UPDATE webhook_deliveries SET state = 'sending', attempts = attempts + 1, lease_owner = $1, lease_expires_at = $2
        WHERE id IN (
          SELECT d.id FROM webhook_deliveries d
           WHERE d.state IN ('pending', 'sending') AND d.next_attempt_at <= $3
             AND (d.state = 'pending' OR d.lease_expires_at < $3)
             AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
                              WHERE p.endpoint_id = d.endpoint_id AND p.run_id = d.run_id AND p.id < d.id
                                AND p.state IN ('pending', 'sending'))
           ORDER BY d.next_attempt_at, d.id LIMIT $4
           FOR UPDATE OF d SKIP LOCKED)
        RETURNING *)
     SELECT c.*, e.url, e.secret, v.team_id AS e_team_id, v.occurred_at AS e_occurred_at, v.data AS e_data,
         v.run AS e_run
       FROM claimed c JOIN webhook_endpoints e ON e.id = c.endpoint_id JOIN webhook_events v ON v.id = c.event_id
      ORDER BY c.next_attempt_at, c.id`,
    [owner, iso(now + opts.leaseMs), iso(now), opts.limit],
  );
  return rows.map(toClaimedWebhookDelivery);
}

export async function finishWebhookAttempt(
  db: Database,
  id: number,
  owner: string,
  r: WebhookAttemptResult,
): Promise<boolean> {
  const state = r.outcome === "retry" ? "pending" : r.outcome;
  const changed = await db.changes(
    `UPDATE webhook_deliveries SET state = $1, next_attempt_at = COALESCE($2, next_attempt_at),
        finished_at = $3, lease_owner = NULL, lease_expires_at = NULL, last_attempt_at = $4, last_status = $5,
        last_error = $6, response_excerpt = $7
      WHERE id = $8 AND state = 'sending' AND lease_owner = $9`,
    [
      state,
      r.nextAttemptAt ?? null,
      state === "pending" ? null : r.at,
      r.at,
      r.status,
      r.error,
      r.responseExcerpt,
      id,
      owner,
    ],
  );
  return changed === 1;
}

export async function releaseWebhookDelivery(db: Database, id: number, owner: string): Promise<void> {
  await db.changes(
    `UPDATE webhook_deliveries SET state = 'pending', attempts = GREATEST(attempts - 1, 0), next_attempt_at = $1,
        lease_owner = NULL, lease_expires_at = NULL
      WHERE id = $2 AND state = 'sending' AND lease_owner = $3`,
    [iso(Date.now()), id, owner],
  );
}

export async function pruneWebhookDeliveries(db: Database, olderThan: string): Promise<number> {
  return db.tx(async (tx) => {
    const deliveries = await tx.changes(
      "DELETE FROM webhook_deliveries WHERE state IN ('succeeded', 'failed') AND finished_at < $1",
      [olderThan],
    );
    await tx.changes(
      `DELETE FROM webhook_events v WHERE v.occurred_at < $1
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = v.id)`,
      [olderThan],
    );
    return deliveries;
  });
}
