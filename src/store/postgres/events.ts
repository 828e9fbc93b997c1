import type { RunEvent, RunEventType } from "../../model/run.ts";
import { capEventData } from "../event-cap.ts";
import { iso } from "../rows.ts";
import type { Database, Tx } from "./database.ts";
import { enqueueWebhooks } from "./webhooks.ts";

/** The transcript: run events numbered by the run's own sequence. */

export async function appendEvent(
  db: Database,
  runId: string,
  type: RunEventType,
  data: Record<string, unknown>,
): Promise<RunEvent> {
  return db.tx(async (tx) => {
    const event = await insertEvent(tx, runId, type, data, iso(Date.now()));
    tx.signal("event_appended", runId, event.seq);
    return event;
  });
}

export async function appendWorkerEvent(
  db: Database,
  runId: string,
  workerId: string,
  type: RunEventType,
  data: Record<string, unknown>,
): Promise<RunEvent | undefined> {
  return db.tx(async (tx) => {
    const event = await insertEvent(tx, runId, type, data, iso(Date.now()), workerId);
    if (event) tx.signal("event_appended", runId, event.seq);
    return event;
  });
}

export async function listEvents(
  db: Database,
  runId: string,
  after: number,
  limit: number,
): Promise<RunEvent[]> {
  const rows = await db.rows(
    "SELECT seq, at, type, data FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
    [runId, after, limit],
  );
  return rows.map((r) => ({
    seq: Number(r.seq),
    at: String(r.at),
    type: r.type as RunEventType,
    data: JSON.parse(String(r.data)),
  }));
}

/**
 * Numbers the event from the run's counter, whose row lock (held until the commit) keeps concurrent
 * appends to one run in sequence without gaps.
 */
export async function insertEvent(
  tx: Tx,
  runId: string,
  type: RunEventType,
  data: Record<string, unknown>,
  at: string,
): Promise<RunEvent>;
/** With `workerId`: only while that worker holds the run (lease fencing); undefined when it does not. */
export async function insertEvent(
  tx: Tx,
  runId: string,
  type: RunEventType,
  data: Record<string, unknown>,
  at: string,
  workerId: string,
): Promise<RunEvent | undefined>;
export async function insertEvent(
  tx: Tx,
  runId: string,
  type: RunEventType,
  data: Record<string, unknown>,
  at: string,
  workerId?: string,
): Promise<RunEvent | undefined> {
  // last_event_at is the run's latest progress (stall detection); it never moves back on a skewed clock.
  const row = await tx.row(
    `UPDATE runs SET last_event_seq = last_event_seq + 1, last_event_at = GREATEST(last_event_at, $2)
      WHERE id = $1${workerId === undefined ? "" : " AND worker_id = $3 AND state = 'INPROGRESS'"}
      RETURNING last_event_seq`,
    workerId === undefined ? [runId, at] : [runId, at, workerId],
  );
  if (!row) {
    if (workerId !== undefined) return undefined;
    throw new Error(`run ${runId} does not exist`);
  }
  const seq = Number(row.last_event_seq);
  const capped = capEventData(data);
  await tx.changes("INSERT INTO run_events (run_id, seq, at, type, data) VALUES ($1, $2, $3, $4, $5)", [
    runId,
    seq,
    at,
    type,
    capped.json,
  ]);
  // What a webhook reports is written with the change it reports (docs/api.md, "Webhooks").
  await enqueueWebhooks(tx, runId, type, capped.data, at);
  return { seq, at, type, data: capped.data };
}
