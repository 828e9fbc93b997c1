import { threadKey as threadKeyOf } from "../../model/thread-binding.ts";
import { addNotifierState, iso, maxIso, str, toCardState, toOutbox } from "../rows.ts";
import {
  type CardChange,
  type CardState,
  type NotifierCursor,
  type NotifierState,
  OUTBOX_STATES,
  type OutboxMessage,
  type OutboxRow,
  type OutboxState,
} from "../store.ts";
import { type Database, Rollback, type Tx } from "./database.ts";
import { getThreadBinding } from "./inbound.ts";

/** The notifier's tables: its read cursor, the status card of each thread of a run, and the outbox of messages. */

export async function getNotifierCursor(db: Database, name: string): Promise<NotifierCursor | undefined> {
  const row = await db.row("SELECT updated_at, run_id FROM notifier_cursors WHERE name = $1", [name]);
  return row ? { updatedAt: String(row.updated_at), runId: String(row.run_id) } : undefined;
}

export async function setNotifierCursor(db: Database, name: string, cursor: NotifierCursor): Promise<void> {
  await db.changes(
    `INSERT INTO notifier_cursors (name, updated_at, run_id) VALUES ($1, $2, $3)
     ON CONFLICT (name) DO UPDATE SET updated_at = excluded.updated_at, run_id = excluded.run_id`,
    [name, cursor.updatedAt, cursor.runId],
  );
}

export async function loadNotifierState(db: Database, runIds: string[]): Promise<Map<string, NotifierState>> {
  if (runIds.length === 0) return new Map();
  return addNotifierState(
    new Map(),
    await db.rows(
      "SELECT * FROM thread_bindings WHERE run_id = ANY($1::text[]) ORDER BY adopted, created_at, platform, workspace, channel",
      [runIds],
    ),
    await db.rows("SELECT * FROM notifier_cards WHERE run_id = ANY($1::text[])", [runIds]),
  );
}

export async function getCardState(
  db: Database,
  runId: string,
  key?: string,
): Promise<CardState | undefined> {
  const threadKey = key ?? (await getThreadBinding(db, runId).then((b) => b && threadKeyOf(b)));
  if (threadKey === undefined) return undefined;
  const row = await db.row("SELECT * FROM notifier_cards WHERE run_id = $1 AND thread_key = $2", [
    runId,
    threadKey,
  ]);
  return row ? toCardState(row) : undefined;
}

export async function recordCardChange(db: Database, c: CardChange): Promise<boolean> {
  return db.tx(async (tx) => {
    const current = await tx.row(
      "SELECT * FROM notifier_cards WHERE run_id = $1 AND thread_key = $2 FOR UPDATE",
      [c.runId, c.threadKey],
    );
    if ((current ? Number(current.version) : 0) !== c.expectedVersion) return false;
    const version = c.expectedVersion + 1;
    let lastCardAt = current ? str(current.last_card_at as string | null) : null;
    if (c.card) {
      const superseded = await tx.rows(
        `UPDATE outbox SET state = 'superseded', updated_at = $1
          WHERE run_id = $2 AND thread_key = $3 AND kind = 'card' AND state = 'pending' RETURNING not_before`,
        [c.now, c.runId, c.threadKey],
      );
      let notBefore: string;
      if (superseded.length > 0) {
        // The newer content takes the place (and the due time) of the edit that was waiting.
        notBefore = superseded.map((r) => String(r.not_before)).sort()[0]!;
      } else if (lastCardAt) {
        notBefore = maxIso(c.now, iso(Date.parse(lastCardAt) + c.card.editIntervalMs));
      } else {
        notBefore = c.now;
      }
      lastCardAt = notBefore;
      await insertOutbox(
        tx,
        {
          dedupeKey: `card:${c.runId}:${c.threadKey}:${version}`,
          kind: "card",
          threadKey: c.threadKey,
          ...c.card,
        },
        c.runId,
        notBefore,
        c.now,
      );
    }
    for (const m of c.messages)
      await insertOutbox(tx, { threadKey: c.threadKey, ...m }, c.runId, c.now, c.now);
    // Two notifiers that both found no card race to insert it: the guard lets only the first one through,
    // and the other's whole change (its outbox rows too) is rolled back.
    const stored = await tx.row(
      `INSERT INTO notifier_cards (run_id, thread_key, version, fingerprint, run_updated_at, last_card_at, last_final, card_ts, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8)
       ON CONFLICT (run_id, thread_key) DO UPDATE SET version = excluded.version, fingerprint = excluded.fingerprint,
         run_updated_at = excluded.run_updated_at, last_card_at = excluded.last_card_at,
         last_final = excluded.last_final, updated_at = excluded.updated_at
       WHERE notifier_cards.version = $9
       RETURNING run_id`,
      [
        c.runId,
        c.threadKey,
        version,
        c.fingerprint,
        c.runUpdatedAt,
        lastCardAt,
        c.lastFinal,
        c.now,
        c.expectedVersion,
      ],
    );
    if (!stored) throw new Rollback(false);
    tx.signal("outbox_enqueued", c.runId);
    return true;
  });
}

/**
 * Claims due rows with a lease in one statement. SKIP LOCKED: a row another notifier is claiming right
 * now is left to it, so concurrent claimers on any replica never take the same row nor wait for each other.
 */
export async function claimOutbox(
  db: Database,
  owner: string,
  opts: { limit: number; leaseMs: number; excludeTargets?: string[] },
): Promise<OutboxRow[]> {
  const now = Date.now();
  const nowIso = iso(now);
  // Candidates in due order; each must be the first unfinished row of its stream, and a thread
  // message must wait for its thread's card (a slash command's card is the thread it replies in).
  const rows = await db.rows(
    `UPDATE outbox SET state = 'sending', lease_owner = $1, lease_expires_at = $2, updated_at = $3
      WHERE id IN (
        SELECT o.id FROM outbox o
         WHERE o.state IN ('pending', 'sending') AND o.not_before <= $3
           AND (o.state = 'pending' OR o.lease_expires_at < $3)
           AND NOT (o.target = ANY($4::text[]))
           AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.stream = o.stream AND p.id < o.id
                             AND p.state IN ('pending', 'sending'))
           AND (o.kind = 'card'
                OR EXISTS (SELECT 1 FROM notifier_cards c WHERE c.run_id = o.run_id
                             AND c.thread_key = o.thread_key AND c.card_ts IS NOT NULL)
                OR NOT EXISTS (SELECT 1 FROM outbox q WHERE q.run_id = o.run_id AND q.thread_key = o.thread_key
                                 AND q.kind = 'card' AND q.id < o.id AND q.state IN ('pending', 'sending')))
         ORDER BY o.not_before, o.id LIMIT $5
         FOR UPDATE OF o SKIP LOCKED)
      RETURNING *`,
    [owner, iso(now + opts.leaseMs), nowIso, opts.excludeTargets ?? [], opts.limit],
  );
  return rows
    .map(toOutbox)
    .sort((a, b) => (a.notBefore < b.notBefore ? -1 : a.notBefore > b.notBefore ? 1 : a.id - b.id));
}

export async function beginOutboxAttempt(
  db: Database,
  id: number,
  owner: string,
  leaseMs: number,
): Promise<number | undefined> {
  const now = Date.now();
  const row = await db.row(
    `UPDATE outbox SET attempts = attempts + 1, lease_expires_at = $1, updated_at = $2
      WHERE id = $3 AND state = 'sending' AND lease_owner = $4 RETURNING attempts`,
    [iso(now + leaseMs), iso(now), id, owner],
  );
  return row ? Number(row.attempts) : undefined;
}

export async function completeOutbox(
  db: Database,
  id: number,
  owner: string,
  result: { cardRef?: string; thread?: string } = {},
): Promise<boolean> {
  return db.tx(async (tx) => {
    const now = iso(Date.now());
    const row = await tx.row(
      `UPDATE outbox SET state = 'sent', lease_owner = NULL, lease_expires_at = NULL, last_error = NULL, updated_at = $1
        WHERE id = $2 AND state = 'sending' AND lease_owner = $3 RETURNING run_id, thread_key`,
      [now, id, owner],
    );
    if (!row) return false;
    const runId = String(row.run_id);
    const key = String(row.thread_key);
    if (result.cardRef) {
      await tx.changes(
        "UPDATE notifier_cards SET card_ts = $1, updated_at = $2 WHERE run_id = $3 AND thread_key = $4",
        [result.cardRef, now, runId, key],
      );
    }
    if (result.thread) {
      await tx.changes(
        `UPDATE thread_bindings SET thread = $1
          WHERE run_id = $2 AND platform || ':' || workspace || ':' || channel = $3 AND thread IS NULL`,
        [result.thread, runId, key],
      );
    }
    return true;
  });
}

export async function retryOutbox(
  db: Database,
  id: number,
  owner: string,
  notBefore: string,
  error: string | null,
): Promise<boolean> {
  const changed = await db.changes(
    `UPDATE outbox SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, not_before = $1,
        last_error = COALESCE($2, last_error), updated_at = $3
      WHERE id = $4 AND state = 'sending' AND lease_owner = $5`,
    [notBefore, error, iso(Date.now()), id, owner],
  );
  return changed === 1;
}

export async function deadLetterOutbox(
  db: Database,
  id: number,
  owner: string,
  error: string,
): Promise<boolean> {
  const changed = await db.changes(
    `UPDATE outbox SET state = 'dead', lease_owner = NULL, lease_expires_at = NULL, last_error = $1, updated_at = $2
      WHERE id = $3 AND state = 'sending' AND lease_owner = $4`,
    [error, iso(Date.now()), id, owner],
  );
  return changed === 1;
}

export async function enqueueOutbox(db: Database, runId: string, messages: OutboxMessage[]): Promise<void> {
  if (messages.length === 0) return;
  await db.tx(async (tx) => {
    const now = iso(Date.now());
    for (const m of messages) await insertOutbox(tx, m, runId, now, now);
    tx.signal("outbox_enqueued", runId);
  });
}

export async function countOutboxByState(db: Database): Promise<Record<OutboxState, number>> {
  const counts = Object.fromEntries(OUTBOX_STATES.map((s) => [s, 0])) as Record<OutboxState, number>;
  for (const row of await db.rows("SELECT state, COUNT(*) AS n FROM outbox GROUP BY state")) {
    counts[row.state as OutboxState] = Number(row.n);
  }
  return counts;
}

export async function listOutbox(db: Database, runId: string): Promise<OutboxRow[]> {
  return (await db.rows("SELECT * FROM outbox WHERE run_id = $1 ORDER BY id", [runId])).map(toOutbox);
}

export async function pruneOutbox(db: Database, olderThan: string): Promise<number> {
  return db.changes("DELETE FROM outbox WHERE state IN ('sent', 'superseded') AND updated_at < $1", [
    olderThan,
  ]);
}

async function insertOutbox(
  tx: Tx,
  m: OutboxMessage,
  runId: string,
  notBefore: string,
  now: string,
): Promise<void> {
  await tx.changes(
    `INSERT INTO outbox (dedupe_key, run_id, kind, stream, target, thread_key, payload, state, attempts, not_before, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', 0, $8, $9, $9) ON CONFLICT (dedupe_key) DO NOTHING`,
    [
      m.dedupeKey,
      runId,
      m.kind,
      m.stream,
      m.target,
      m.threadKey ?? "",
      JSON.stringify(m.payload),
      notBefore,
      now,
    ],
  );
}
