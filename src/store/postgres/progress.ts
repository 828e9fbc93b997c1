import type { ProgressRange, RunProgress } from "../store.ts";
import type { Database } from "./database.ts";

/**
 * Run progress (stall detection, model/stall.ts): runs in progress by the time of their latest transcript
 * event, read through the partial index runs_progress (migration 014), never a scan of every run.
 */

export async function listRunsByProgress(db: Database, range: ProgressRange): Promise<RunProgress[]> {
  const where = ["state = 'INPROGRESS'", "last_event_at IS NOT NULL"];
  const params: unknown[] = [];
  const bind = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  if (range.after !== undefined) where.push(`last_event_at > ${bind(range.after)}`);
  if (range.before !== undefined) where.push(`last_event_at <= ${bind(range.before)}`);
  if (range.cursor) {
    where.push(`(last_event_at, id) > (${bind(range.cursor.lastEventAt)}, ${bind(range.cursor.runId)})`);
  }
  const rows = await db.rows(
    `SELECT id, last_event_at FROM runs WHERE ${where.join(" AND ")} ORDER BY last_event_at, id LIMIT ${bind(range.limit)}`,
    params,
  );
  return rows.map((r) => ({ runId: String(r.id), lastEventAt: String(r.last_event_at) }));
}

export async function getRunProgress(db: Database, runIds: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (runIds.length === 0) return out;
  const rows = await db.rows(
    "SELECT id, last_event_at FROM runs WHERE id = ANY($1::text[]) AND last_event_at IS NOT NULL",
    [runIds],
  );
  for (const r of rows) out.set(String(r.id), String(r.last_event_at));
  return out;
}
