import type { BoundPlace } from "../../model/audience.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import { iso, toBinding } from "../rows.ts";
import type { InboundDelivery, NewInboundDelivery } from "../store.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";

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
  return db.grouped(() => claimKey(db, key, source, windowMs, Date.now()));
}

/** Records `key`; false when it was seen before (within `windowMs`, when given). */
function claimKey(db: Database, key: string, source: string, windowMs: number | undefined, now: number) {
  const seen = db.sql("SELECT received_at FROM inbox WHERE key = ?").get(key) as Row | undefined;
  if (seen && (windowMs === undefined || now - Date.parse(String(seen.received_at)) < windowMs)) return false;
  db.sql(
    "INSERT INTO inbox (key, source, received_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET received_at = excluded.received_at",
  ).run(key, source, iso(now));
  return true;
}

export async function acceptInbound(db: Database, d: NewInboundDelivery): Promise<boolean> {
  return db
    .grouped(() => {
      const now = Date.now();
      for (const k of d.keys) {
        // Thrown, not returned: the savepoint then undoes the keys recorded before this one.
        if (!claimKey(db, k.key, d.source, k.windowMs, now)) throw new DuplicateDelivery();
      }
      db.sql(
        `INSERT INTO inbox_deliveries (source, kind, delivery_id, payload, received_at)
       VALUES (?, ?, ?, ?, ?)`,
      ).run(d.source, d.kind, d.deliveryId, d.payload, iso(now));
      return true;
    })
    .catch((err: unknown) => {
      if (err instanceof DuplicateDelivery) return false;
      throw err;
    });
}

class DuplicateDelivery extends Error {}

export async function claimInboundDeliveries(
  db: Database,
  owner: string,
  opts: { source: string; limit: number; leaseMs: number; maxAttempts: number },
): Promise<InboundDelivery[]> {
  return db.grouped(() => {
    const now = Date.now();
    const rows = db
      .sql(
        `SELECT * FROM inbox_deliveries
          WHERE source = ? AND attempts < ?
            AND (lease_expires_at IS NULL OR lease_expires_at <= ?)
          ORDER BY id LIMIT (SELECT ?)`,
      )
      .all(opts.source, opts.maxAttempts, iso(now), opts.limit) as Row[];
    const until = iso(now + opts.leaseMs);
    return rows.map((row) => {
      db.sql(
        "UPDATE inbox_deliveries SET attempts = attempts + 1, lease_owner = ?, lease_expires_at = ? WHERE id = ?",
      ).run(owner, until, row.id!);
      return {
        id: Number(row.id),
        source: String(row.source),
        kind: String(row.kind),
        deliveryId: String(row.delivery_id),
        payload: String(row.payload),
        attempts: Number(row.attempts) + 1,
        receivedAt: String(row.received_at),
      };
    });
  });
}

export async function finishInboundDelivery(db: Database, id: number, owner: string): Promise<boolean> {
  // A handled payload is not kept: the dedupe keys in `inbox` are what stop a redelivery.
  return db.grouped(
    () =>
      Number(db.sql("DELETE FROM inbox_deliveries WHERE id = ? AND lease_owner = ?").run(id, owner).changes) >
      0,
  );
}

export async function releaseInboundDelivery(
  db: Database,
  id: number,
  owner: string,
  retryAt: string,
): Promise<void> {
  await db.grouped(() =>
    db
      .sql(
        `UPDATE inbox_deliveries SET lease_owner = NULL, lease_expires_at = ?
          WHERE id = ? AND lease_owner = ?`,
      )
      .run(retryAt, id, owner),
  );
}

export async function bindThread(db: Database, b: ThreadBinding): Promise<void> {
  await db.grouped(() =>
    db
      .sql(
        `INSERT INTO thread_bindings (run_id, platform, workspace, channel, thread, trigger_ref, requester, created_at, adopted)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, platform, workspace, channel) DO NOTHING`,
      )
      .run(
        b.runId,
        b.platform,
        b.workspace,
        b.channel,
        b.thread,
        b.triggerRef,
        b.requester,
        b.createdAt,
        b.adopted ? 1 : 0,
      ),
  );
  // Where the run reports to is part of its reporting state: the notifier can act on it now.
  db.signals.emit("run_changed", b.runId);
}

/** The origin first: the earliest thread the run was asked in (then adopted ones; ties in key order). */
const BINDING_ORDER = "ORDER BY adopted, created_at, platform, workspace, channel";

export async function getThreadBinding(
  db: Database,
  runId: string,
  key?: string,
): Promise<ThreadBinding | undefined> {
  const row = (
    key === undefined
      ? db.sql(`SELECT * FROM thread_bindings WHERE run_id = ? ${BINDING_ORDER} LIMIT 1`).get(runId)
      : db
          .sql(
            "SELECT * FROM thread_bindings WHERE run_id = ? AND platform || ':' || workspace || ':' || channel = ?",
          )
          .get(runId, key)
  ) as Row | undefined;
  return row ? toBinding(row) : undefined;
}

export async function listThreadBindings(db: Database, runId: string): Promise<ThreadBinding[]> {
  return (db.sql(`SELECT * FROM thread_bindings WHERE run_id = ? ${BINDING_ORDER}`).all(runId) as Row[]).map(
    toBinding,
  );
}

export async function markThreadAsked(db: Database, runId: string, key: string, at: string): Promise<void> {
  await db.grouped(() =>
    db
      .sql(
        `UPDATE thread_bindings SET asked_at = ?
          WHERE run_id = ? AND platform || ':' || workspace || ':' || channel = ?`,
      )
      .run(at, runId, key),
  );
}

export async function endThread(db: Database, runId: string, key: string, why: string): Promise<boolean> {
  const changed = await db.grouped(
    () =>
      db
        .sql(
          `UPDATE thread_bindings SET ended = ?
            WHERE run_id = ? AND platform || ':' || workspace || ':' || channel = ? AND ended IS NULL`,
        )
        .run(why, runId, key).changes,
  );
  return Number(changed) === 1;
}

export async function listBoundPlaces(db: Database, teamId: string): Promise<BoundPlace[]> {
  const rows = db
    .sql(
      `SELECT DISTINCT b.platform, b.workspace, b.channel FROM thread_bindings b
        JOIN runs r ON r.id = b.run_id WHERE r.team_id = ?`,
    )
    .all(teamId) as Row[];
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
  const row = db
    .sql(
      `SELECT * FROM thread_bindings WHERE platform = ? AND workspace = ? AND channel = ? AND thread IS ?
        ORDER BY created_at DESC, run_id DESC LIMIT 1`,
    )
    .get(where.platform, where.workspace, where.channel, where.thread) as Row | undefined;
  return row ? toBinding(row) : undefined;
}

export async function listChannelBindings(
  db: Database,
  where: Pick<ThreadBinding, "platform" | "workspace" | "channel">,
  limit: number,
): Promise<ThreadBinding[]> {
  const rows = db
    .sql(
      `SELECT * FROM thread_bindings WHERE platform = ? AND workspace = ? AND channel = ?
        ORDER BY created_at DESC, run_id DESC LIMIT (SELECT ?)`,
    )
    .all(where.platform, where.workspace, where.channel, limit) as Row[];
  return rows.map(toBinding);
}

export async function setBindingThread(
  db: Database,
  runId: string,
  key: string,
  thread: string,
): Promise<void> {
  await db.grouped(() =>
    db
      .sql(
        `UPDATE thread_bindings SET thread = ?
          WHERE run_id = ? AND platform || ':' || workspace || ':' || channel = ? AND thread IS NULL`,
      )
      .run(thread, runId, key),
  );
}

export async function pruneInbox(db: Database, olderThan: string): Promise<number> {
  return db.grouped(
    () =>
      Number(db.sql("DELETE FROM inbox WHERE received_at < ?").run(olderThan).changes) +
      Number(db.sql("DELETE FROM inbox_deliveries WHERE received_at < ?").run(olderThan).changes),
  );
}
