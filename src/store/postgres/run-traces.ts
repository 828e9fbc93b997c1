import type { Database, Tx } from "./database.ts";

/** Where a run's executions link their traces to: the span of the request that created it. */

/** Inside the transaction that creates the run. */
export async function recordRunTrace(tx: Tx, runId: string, traceparent: string): Promise<void> {
  await tx.changes("INSERT INTO run_traces (run_id, traceparent) VALUES ($1, $2)", [runId, traceparent]);
}

export async function getRunTrace(db: Database, runId: string): Promise<string | undefined> {
  const row = await db.row("SELECT traceparent FROM run_traces WHERE run_id = $1", [runId]);
  return row ? String(row.traceparent) : undefined;
}
