import type { ThreadBinding } from "../../model/thread-binding.ts";
import type { Database } from "./database.ts";
import { iso, type Row, toBinding } from "./rows.ts";

/** Inbound deliveries already handled (the inbox), and the thread bindings of runs. */

export async function claimInbound(
  db: Database,
  key: string,
  source: string,
  windowMs?: number,
): Promise<boolean> {
  return db.grouped(() => {
    const now = Date.now();
    const seen = db.sql("SELECT received_at FROM inbox WHERE key = ?").get(key) as Row | undefined;
    if (seen && (windowMs === undefined || now - Date.parse(String(seen.received_at)) < windowMs))
      return false;
    db.sql(
      "INSERT INTO inbox (key, source, received_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET received_at = excluded.received_at",
    ).run(key, source, iso(now));
    return true;
  });
}

export async function bindThread(db: Database, b: ThreadBinding): Promise<void> {
  await db.grouped(() =>
    db
      .sql(
        `INSERT INTO thread_bindings (run_id, platform, workspace, channel, thread, trigger_ref, requester, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`,
      )
      .run(b.runId, b.platform, b.workspace, b.channel, b.thread, b.triggerRef, b.requester, b.createdAt),
  );
  // Where the run reports to is part of its reporting state: the notifier can act on it now.
  db.signals.emit("run_changed", b.runId);
}

export async function getThreadBinding(db: Database, runId: string): Promise<ThreadBinding | undefined> {
  const row = db.sql("SELECT * FROM thread_bindings WHERE run_id = ?").get(runId) as Row | undefined;
  return row ? toBinding(row) : undefined;
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

export async function setBindingThread(db: Database, runId: string, thread: string): Promise<void> {
  await db.grouped(() =>
    db.sql("UPDATE thread_bindings SET thread = ? WHERE run_id = ? AND thread IS NULL").run(thread, runId),
  );
}

export async function pruneInbox(db: Database, olderThan: string): Promise<number> {
  return db.grouped(() => Number(db.sql("DELETE FROM inbox WHERE received_at < ?").run(olderThan).changes));
}
