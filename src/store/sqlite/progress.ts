import type { SQLInputValue } from "node:sqlite";
import type { ProgressRange, RunProgress } from "../store.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";

/**
 * Run progress (stall detection, model/stall.ts): runs in progress by the time of their latest transcript
 * event, read through the partial index runs_progress (migration 014), never a scan of every run.
 */

export async function listRunsByProgress(db: Database, range: ProgressRange): Promise<RunProgress[]> {
  const where = ["state = 'INPROGRESS'", "last_event_at IS NOT NULL"];
  const params: SQLInputValue[] = [];
  if (range.after !== undefined) {
    where.push("last_event_at > ?");
    params.push(range.after);
  }
  if (range.before !== undefined) {
    where.push("last_event_at <= ?");
    params.push(range.before);
  }
  if (range.cursor) {
    where.push("(last_event_at, id) > (?, ?)");
    params.push(range.cursor.lastEventAt, range.cursor.runId);
  }
  const rows = db
    .sql(
      `SELECT id, last_event_at FROM runs WHERE ${where.join(" AND ")} ORDER BY last_event_at, id LIMIT (SELECT ?)`,
    )
    .all(...params, range.limit) as Row[];
  return rows.map((r) => ({ runId: String(r.id), lastEventAt: String(r.last_event_at) }));
}

export async function getRunProgress(db: Database, runIds: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (runIds.length === 0) return out;
  // The ids travel as one JSON array: one cached statement whatever their number.
  const rows = db
    .sql(
      "SELECT id, last_event_at FROM runs WHERE id IN (SELECT value FROM json_each(?)) AND last_event_at IS NOT NULL",
    )
    .all(JSON.stringify(runIds)) as Row[];
  for (const r of rows) out.set(String(r.id), String(r.last_event_at));
  return out;
}
