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
import type { Database } from "./database.ts";
import { getThreadBinding } from "./inbound.ts";
import type { Row } from "./rows.ts";

/** The notifier's tables: its read cursor, the status card of each thread of a run, and the outbox of messages. */

export async function getNotifierCursor(db: Database, name: string): Promise<NotifierCursor | undefined> {
  const row = db.sql("SELECT updated_at, run_id FROM notifier_cursors WHERE name = ?").get(name) as
    | Row
    | undefined;
  return row ? { updatedAt: String(row.updated_at), runId: String(row.run_id) } : undefined;
}

export async function setNotifierCursor(db: Database, name: string, cursor: NotifierCursor): Promise<void> {
  await db.grouped(() =>
    db
      .sql(
        `INSERT INTO notifier_cursors (name, updated_at, run_id) VALUES (?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET updated_at = excluded.updated_at, run_id = excluded.run_id`,
      )
      .run(name, cursor.updatedAt, cursor.runId),
  );
}

export async function loadNotifierState(db: Database, runIds: string[]): Promise<Map<string, NotifierState>> {
  const out = new Map<string, NotifierState>();
  // Bounded batches keep the number of distinct cached statements small.
  for (let i = 0; i < runIds.length; i += 100) {
    const ids = runIds.slice(i, i + 100);
    const marks = ids.map(() => "?").join(", ");
    addNotifierState(
      out,
      db
        .sql(
          `SELECT * FROM thread_bindings WHERE run_id IN (${marks}) ORDER BY adopted, created_at, platform, workspace, channel`,
        )
        .all(...ids) as Row[],
      db.sql(`SELECT * FROM notifier_cards WHERE run_id IN (${marks})`).all(...ids) as Row[],
    );
  }
  return out;
}

export async function getCardState(
  db: Database,
  runId: string,
  key?: string,
): Promise<CardState | undefined> {
  const threadKey = key ?? (await getThreadBinding(db, runId).then((b) => b && threadKeyOf(b)));
  if (threadKey === undefined) return undefined;
  const row = db
    .sql("SELECT * FROM notifier_cards WHERE run_id = ? AND thread_key = ?")
    .get(runId, threadKey) as Row | undefined;
  return row ? toCardState(row) : undefined;
}

export async function recordCardChange(db: Database, c: CardChange): Promise<boolean> {
  const done = await db.grouped(() => {
    const current = db
      .sql("SELECT * FROM notifier_cards WHERE run_id = ? AND thread_key = ?")
      .get(c.runId, c.threadKey) as Row | undefined;
    if ((current ? Number(current.version) : 0) !== c.expectedVersion) return false;
    const version = c.expectedVersion + 1;
    let lastCardAt = current ? str(current.last_card_at) : null;
    if (c.card) {
      const superseded = db
        .sql(
          `UPDATE outbox SET state = 'superseded', updated_at = ?
            WHERE run_id = ? AND thread_key = ? AND kind = 'card' AND state = 'pending' RETURNING not_before`,
        )
        .all(c.now, c.runId, c.threadKey) as Row[];
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
      insertOutbox(
        db,
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
    for (const m of c.messages) insertOutbox(db, { threadKey: c.threadKey, ...m }, c.runId, c.now, c.now);
    db.sql(
      `INSERT INTO notifier_cards (run_id, thread_key, version, fingerprint, run_updated_at, last_card_at, last_final, card_ts, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)
       ON CONFLICT (run_id, thread_key) DO UPDATE SET version = excluded.version, fingerprint = excluded.fingerprint,
         run_updated_at = excluded.run_updated_at, last_card_at = excluded.last_card_at,
         last_final = excluded.last_final, updated_at = excluded.updated_at`,
    ).run(c.runId, c.threadKey, version, c.fingerprint, c.runUpdatedAt, lastCardAt, c.lastFinal, c.now);
    return true;
  });
  if (done) db.signals.emit("outbox_enqueued", c.runId);
  return done;
}

export async function claimOutbox(
  db: Database,
  owner: string,
  opts: { limit: number; leaseMs: number; excludeTargets?: string[] },
): Promise<OutboxRow[]> {
  const exclude = opts.excludeTargets ?? [];
  return db.grouped(() => {
    const now = Date.now();
    const nowIso = iso(now);
    // Candidates in due order; each must be the first unfinished row of its stream, and a thread
    // message must wait for its thread's card (a slash command's card is the thread it replies in).
    const rows = db
      .sql(
        `SELECT o.* FROM outbox o
          WHERE o.state IN ('pending', 'sending') AND o.not_before <= ?
            AND (o.state = 'pending' OR o.lease_expires_at < ?)
            AND o.target NOT IN (SELECT value FROM json_each(?))
            AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.stream = o.stream AND p.id < o.id
                              AND p.state IN ('pending', 'sending'))
            AND (o.kind = 'card'
                 OR EXISTS (SELECT 1 FROM notifier_cards c WHERE c.run_id = o.run_id
                              AND c.thread_key = o.thread_key AND c.card_ts IS NOT NULL)
                 OR NOT EXISTS (SELECT 1 FROM outbox q WHERE q.run_id = o.run_id AND q.thread_key = o.thread_key
                                  AND q.kind = 'card' AND q.id < o.id AND q.state IN ('pending', 'sending')))
          ORDER BY o.not_before, o.id LIMIT (SELECT ?)`,
      )
      .all(nowIso, nowIso, JSON.stringify(exclude), opts.limit) as Row[];
    const claimed: OutboxRow[] = [];
    const until = iso(now + opts.leaseMs);
    for (const row of rows) {
      db.sql(
        "UPDATE outbox SET state = 'sending', lease_owner = ?, lease_expires_at = ?, updated_at = ? WHERE id = ?",
      ).run(owner, until, nowIso, row.id!);
      claimed.push(toOutbox({ ...row, state: "sending" }));
    }
    return claimed;
  });
}

export async function beginOutboxAttempt(
  db: Database,
  id: number,
  owner: string,
  leaseMs: number,
): Promise<number | undefined> {
  return db.grouped(() => {
    const now = Date.now();
    const row = db
      .sql(
        `UPDATE outbox SET attempts = attempts + 1, lease_expires_at = ?, updated_at = ?
          WHERE id = ? AND state = 'sending' AND lease_owner = ? RETURNING attempts`,
      )
      .get(iso(now + leaseMs), iso(now), id, owner) as Row | undefined;
    return row ? Number(row.attempts) : undefined;
  });
}

export async function completeOutbox(
  db: Database,
  id: number,
  owner: string,
  result: { cardRef?: string; thread?: string } = {},
): Promise<boolean> {
  return db.grouped(() => {
    const now = iso(Date.now());
    const row = db
      .sql(
        `UPDATE outbox SET state = 'sent', lease_owner = NULL, lease_expires_at = NULL, last_error = NULL, updated_at = ?
          WHERE id = ? AND state = 'sending' AND lease_owner = ? RETURNING run_id, thread_key`,
      )
      .get(now, id, owner) as Row | undefined;
    if (!row) return false;
    const runId = String(row.run_id);
    const key = String(row.thread_key);
    if (result.cardRef) {
      db.sql("UPDATE notifier_cards SET card_ts = ?, updated_at = ? WHERE run_id = ? AND thread_key = ?").run(
        result.cardRef,
        now,
        runId,
        key,
      );
    }
    if (result.thread) {
      db.sql(
        `UPDATE thread_bindings SET thread = ?
          WHERE run_id = ? AND platform || ':' || workspace || ':' || channel = ? AND thread IS NULL`,
      ).run(result.thread, runId, key);
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
  return db.grouped(() => {
    const res = db
      .sql(
        `UPDATE outbox SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, not_before = ?,
            last_error = COALESCE(?, last_error), updated_at = ?
          WHERE id = ? AND state = 'sending' AND lease_owner = ?`,
      )
      .run(notBefore, error, iso(Date.now()), id, owner);
    return Number(res.changes) === 1;
  });
}

export async function deadLetterOutbox(
  db: Database,
  id: number,
  owner: string,
  error: string,
): Promise<boolean> {
  return db.grouped(() => {
    const res = db
      .sql(
        `UPDATE outbox SET state = 'dead', lease_owner = NULL, lease_expires_at = NULL, last_error = ?, updated_at = ?
          WHERE id = ? AND state = 'sending' AND lease_owner = ?`,
      )
      .run(error, iso(Date.now()), id, owner);
    return Number(res.changes) === 1;
  });
}

export async function enqueueOutbox(db: Database, runId: string, messages: OutboxMessage[]): Promise<void> {
  if (messages.length === 0) return;
  await db.grouped(() => {
    const now = iso(Date.now());
    for (const m of messages) insertOutbox(db, m, runId, now, now);
  });
  db.signals.emit("outbox_enqueued", runId);
}

export async function countOutboxByState(db: Database): Promise<Record<OutboxState, number>> {
  const counts = Object.fromEntries(OUTBOX_STATES.map((s) => [s, 0])) as Record<OutboxState, number>;
  for (const row of db.sql("SELECT state, COUNT(*) AS n FROM outbox GROUP BY state").all() as Row[]) {
    counts[row.state as OutboxState] = Number(row.n);
  }
  return counts;
}

export async function listOutbox(db: Database, runId: string): Promise<OutboxRow[]> {
  return (db.sql("SELECT * FROM outbox WHERE run_id = ? ORDER BY id").all(runId) as Row[]).map(toOutbox);
}

export async function pruneOutbox(db: Database, olderThan: string): Promise<number> {
  return db.grouped(() =>
    Number(
      db.sql("DELETE FROM outbox WHERE state IN ('sent', 'superseded') AND updated_at < ?").run(olderThan)
        .changes,
    ),
  );
}

function insertOutbox(db: Database, m: OutboxMessage, runId: string, notBefore: string, now: string): void {
  db.sql(
    `INSERT INTO outbox (dedupe_key, run_id, kind, stream, target, thread_key, payload, state, attempts, not_before, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?) ON CONFLICT (dedupe_key) DO NOTHING`,
  ).run(
    m.dedupeKey,
    runId,
    m.kind,
    m.stream,
    m.target,
    m.threadKey ?? "",
    JSON.stringify(m.payload),
    notBefore,
    now,
    now,
  );
}
