import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";

/** Where a run's executions link their traces to: the span of the request that created it. */

/** Inside the transaction that creates the run. */
export function recordRunTrace(db: Database, runId: string, traceparent: string): void {
  db.sql("INSERT INTO run_traces (run_id, traceparent) VALUES (?, ?)").run(runId, traceparent);
}

export async function getRunTrace(db: Database, runId: string): Promise<string | undefined> {
  const row = db.sql("SELECT traceparent FROM run_traces WHERE run_id = ?").get(runId) as Row | undefined;
  return row ? String(row.traceparent) : undefined;
}
