import type { BoundPlace } from "../../model/audience.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import { iso, toBinding } from "../rows.ts";
import type { InboundDelivery, NewInboundDelivery } from "../store.ts";
import { type Database, Rollback, type Sql } from "./database.ts";

/**
 * The inbox: dedupe keys of inbound deliveries, and the deliveries themselves, stored before they are
 * acknowledged and handled from here with a lease. Also the thread bindings of runs.
 */

export async function claimInbound(
  db: Database,
  key: string,
  source: string,
  windowMs?: number,
): Promise<boolean> {
  return claimKey(db, key, source, windowMs, Date.now());
}

/**
 * Records `key` in one statement; false when it was seen before (within `windowMs`, when given). A
 * concurrent claim of the same key waits on the unique index for the first one's commit, then sees it.
 */
async function claimKey(sql: Sql, key: string, source: string, windowMs: number | undefined, now: number) {
  const row =
    windowMs === undefined
      ? await sql.row(
          "INSERT INTO inbox (key, source, received_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING RETURNING key",
          [key, source, iso(now)],
        )
      : await sql.row(
          `INSERT INTO inbox (key, source, received_at) VALUES ($1, $2, $3)
           ON CONFLICT (key) DO UPDATE SET received_at = excluded.received_at WHERE inbox.received_at <= $4
           RETURNING key`,
          [key, source, iso(now), iso(now - windowMs)],
        );
  return row !== undefined;
}

export async function acceptInbound(db: Database, d: NewInboundDelivery): Promise<boolean> {
  return db.tx(async (tx) => {
    const now = Date.now();
    // In one order everywhere: two deliveries sharing keys wait for each other instead of deadlocking.
    const keys = [...d.keys].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const k of keys) {
      // A key seen before: roll back the keys recorded before this one, store nothing.
      if (!(await claimKey(tx, k.key, d.source, k.windowMs, now))) throw new Rollback(false);
    }
    await tx.changes(
      `INSERT INTO inbox_deliveries (source, kind, delivery_id, payload, received_at)
       VALUES ($1, $2, $3, $4, $5)`,
      [d.source, d.kind, d.deliveryId, d.payload, iso(now)],
    );
    return true;
  });
}

export async function claimInboundDeliveries(
  db: Database,
  owner: string,
  opts: { source: string; limit: number; leaseMs: number; maxAttempts: number },
): Promise<InboundDelivery[]> {
  const now = Date.now();
  const rows = await db.rows(
    `UPDATE inbox_deliveries SET attempts = attempts + 1, lease_owner = $1, lease_expires_at = $2
      WHERE id IN (SELECT id FROM inbox_deliveries
                    WHERE source = $3 AND attempts < $4 AND (lease_expires_at IS NULL OR lease_expires_at <= $5)
                    ORDER BY id LIMIT $6 FOR UPDATE SKIP LOCKED)
      RETURNING *`,
    [owner, iso(now + opts.leaseMs), opts.source, opts.maxAttempts, iso(now), opts.limit],
  );
  return rows
    .map((row) => ({
      id: Number(row.id),
      source: String(row.source),
      kind: String(row.kind),
      deliveryId: String(row.delivery_id),
      payload: String(row.payload),
      attempts: Number(row.attempts),
      receivedAt: String(row.received_at),
    }))
    .sort((a, b) => a.id - b.id);
}

export async function finishInboundDelivery(db: Database, id: number, owner: string): Promise<boolean> {
  // A handled payload is not kept: the dedupe keys in `inbox` are what stop a redelivery.
  return (
    (await db.changes("DELETE FROM inbox_deliveries WHERE id = $1 AND lease_owner = $2", [id, owner])) > 0
  );
}

export async function releaseInboundDelivery(
  db: Database,
  id: number,
  owner: string,
  retryAt: string,
): Promise<void> {
  await db.changes(
    "UPDATE inbox_deliveries SET lease_owner = NULL, lease_expires_at = $1 WHERE id = $2 AND lease_owner = $3",
    [retryAt, id, owner],
  );
}

export async function bindThread(db: Database, b: ThreadBinding): Promise<void> {
  await db.tx(async (tx) => {
    await tx.changes(
      `INSERT INTO thread_bindings (run_id, platform, workspace, channel, thread, trigger_ref, requester, created_at, adopted)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (run_id, platform, workspace, channel) DO NOTHING`,
      [
        b.runId,
        b.platform,
        b.workspace,
        b.channel,
        b.thread,
        b.triggerRef,
        b.requester,
        b.createdAt,
        b.adopted === true,
      ],
    );
    // Where the run reports to is part of its reporting state: the notifier can act on it now.
    tx.signal("run_changed", b.runId);
  });
}

/** The origin first: the earliest thread the run was asked in (then adopted ones; ties in key order). */
const BINDING_ORDER = "ORDER BY adopted, created_at, platform, workspace, channel";
const KEY = "platform || ':' || workspace || ':' || channel";

export async function getThreadBinding(
  db: Database,
  runId: string,
  key?: string,
): Promise<ThreadBinding | undefined> {
  const row =
    key === undefined
      ? await db.row(`SELECT * FROM thread_bindings WHERE run_id = $1 ${BINDING_ORDER} LIMIT 1`, [runId])
      : await db.row(`SELECT * FROM thread_bindings WHERE run_id = $1 AND ${KEY} = $2`, [runId, key]);
  return row ? toBinding(row) : undefined;
}

export async function listThreadBindings(db: Database, runId: string): Promise<ThreadBinding[]> {
  return (await db.rows(`SELECT * FROM thread_bindings WHERE run_id = $1 ${BINDING_ORDER}`, [runId])).map(
    toBinding,
  );
}

export async function markThreadAsked(db: Database, runId: string, key: string, at: string): Promise<void> {
  await db.changes(`UPDATE thread_bindings SET asked_at = $1 WHERE run_id = $2 AND ${KEY} = $3`, [
    at,
    runId,
    key,
  ]);
}

export async function endThread(db: Database, runId: string, key: string, why: string): Promise<boolean> {
  const changed = await db.changes(
    `UPDATE thread_bindings SET ended = $1 WHERE run_id = $2 AND ${KEY} = $3 AND ended IS NULL`,
    [why, runId, key],
  );
  return changed === 1;
}

export async function listBoundPlaces(db: Database, teamId: string): Promise<BoundPlace[]> {
  const rows = await db.rows(
    `SELECT DISTINCT b.platform, b.workspace, b.channel FROM thread_bindings b
      JOIN runs r ON r.id = b.run_id WHERE r.team_id = $1`,
    [teamId],
  );
  return rows.map((r) => ({
    platform: String(r.platform),
    workspace: String(r.workspace),
    channel: String(r.channel),
  }));
}

export async function findLatestBinding(
  db: Database,
  where: Pick<ThreadBinding, "platform" | "workspace" | "channel"> & { thread: string | null },
): Promise<ThreadBinding | undefined> {
  const row = await db.row(
    `SELECT * FROM thread_bindings
      WHERE platform = $1 AND workspace = $2 AND channel = $3 AND thread IS NOT DISTINCT FROM $4
      ORDER BY created_at DESC, run_id DESC LIMIT 1`,
    [where.platform, where.workspace, where.channel, where.thread],
  );
  return row ? toBinding(row) : undefined;
}

export async function listChannelBindings(
  db: Database,
  where: Pick<ThreadBinding, "platform" | "workspace" | "channel">,
  limit: number,
): Promise<ThreadBinding[]> {
  const rows = await db.rows(
    `SELECT * FROM thread_bindings WHERE platform = $1 AND workspace = $2 AND channel = $3
      ORDER BY created_at DESC, run_id DESC LIMIT $4`,
    [where.platform, where.workspace, where.channel, limit],
  );
  return rows.map(toBinding);
}

export async function setBindingThread(
  db: Database,
  runId: string,
  key: string,
  thread: string,
): Promise<void> {
  await db.changes(
    `UPDATE thread_bindings SET thread = $1 WHERE run_id = $2 AND ${KEY} = $3 AND thread IS NULL`,
    [thread, runId, key],
  );
}

export async function pruneInbox(db: Database, olderThan: string): Promise<number> {
  return db.tx(
    async (tx) =>
      (await tx.changes("DELETE FROM inbox WHERE received_at < $1", [olderThan])) +
      (await tx.changes("DELETE FROM inbox_deliveries WHERE received_at < $1", [olderThan])),
  );
}
