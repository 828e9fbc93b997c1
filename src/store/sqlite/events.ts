import type { RunEvent, RunEventType } from "../../model/run.ts";
import { capEventData } from "../event-cap.ts";
import { iso } from "../rows.ts";
import type { NewRunEvent } from "../store.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";
import { enqueueWebhooks } from "./webhooks.ts";

/** The transcript: run events numbered by the run's own sequence. */

export async function appendEvent(
  db: Database,
  runId: string,
  type: RunEventType,
  data: Record<string, unknown>,
): Promise<RunEvent> {
  const event = await db.grouped(() => insertEvent(db, runId, type, data, iso(Date.now())));
  db.signals.emit("event_appended", runId, event.seq);
  return event;
}

export async function appendWorkerEvents(
  db: Database,
  runId: string,
  workerId: string,
  events: readonly NewRunEvent[],
): Promise<RunEvent[] | undefined> {
  const written = await db.grouped(() => insertWorkerEvents(db, runId, workerId, events, iso(Date.now())));
  const last = written?.at(-1);
  if (last) db.signals.emit("event_appended", runId, last.seq);
  return written;
}

/**
 * `events` in order, only while the worker holds the run (the first one's fenced write checks it, and the
 * transaction keeps it so for the rest); undefined, nothing written, when it does not.
 */
export function insertWorkerEvents(
  db: Database,
  runId: string,
  workerId: string,
  events: readonly NewRunEvent[],
  at: string,
): RunEvent[] | undefined {
  const written: RunEvent[] = [];
  for (const event of events) {
    const one = insertEvent(db, runId, event.type, event.data, at, workerId);
    if (!one) return undefined;
    written.push(one);
  }
  return written;
}

export async function listEvents(
  db: Database,
  runId: string,
  after: number,
  limit: number,
): Promise<RunEvent[]> {
  const rows = db
    .sql(
      "SELECT seq, at, type, data FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT (SELECT ?)",
    )
    .all(runId, after, limit) as Row[];
  return rows.map((r) => ({
    seq: Number(r.seq),
    at: String(r.at),
    type: r.type as RunEventType,
    data: JSON.parse(String(r.data)),
  }));
}

/**
 * The run's next event number. last_event_at is the run's latest progress (stall detection); it never
 * moves back on a skewed clock. Constant texts: the statement cache is keyed by the text, and one built
 * per event was hashed per event.
 */
const NEXT_SEQ = `UPDATE runs SET last_event_seq = last_event_seq + 1, last_event_at = max(coalesce(last_event_at, ''), ?)
  WHERE id = ? RETURNING last_event_seq`;
/** The same, only while the worker holds the run (lease fencing). */
const NEXT_SEQ_WHILE_HELD = `UPDATE runs SET last_event_seq = last_event_seq + 1, last_event_at = max(coalesce(last_event_at, ''), ?)
  WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS' RETURNING last_event_seq`;

export function insertEvent(
  db: Database,
  runId: string,
  type: RunEventType,
  data: Record<string, unknown>,
  at: string,
): RunEvent;
/** With `workerId`: only while that worker holds the run (lease fencing); undefined when it does not. */
export function insertEvent(
  db: Database,
  runId: string,
  type: RunEventType,
  data: Record<string, unknown>,
  at: string,
  workerId: string,
): RunEvent | undefined;
export function insertEvent(
  db: Database,
  runId: string,
  type: RunEventType,
  data: Record<string, unknown>,
  at: string,
  workerId?: string,
): RunEvent | undefined {
  const row = (
    workerId === undefined
      ? db.sql(NEXT_SEQ).get(at, runId)
      : db.sql(NEXT_SEQ_WHILE_HELD).get(at, runId, workerId)
  ) as Row | undefined;
  if (!row) {
    if (workerId !== undefined) return undefined;
    throw new Error(`run ${runId} does not exist`);
  }
  return writeEvent(db, runId, Number(row.last_event_seq), type, data, at);
}

/**
 * Writes event `seq` of the run, numbered already (insertEvent, or a new run's first with its row), and
 * the webhook deliveries it makes; must run inside the transaction that numbered it.
 */
export function writeEvent(
  db: Database,
  runId: string,
  seq: number,
  type: RunEventType,
  data: Record<string, unknown>,
  at: string,
): RunEvent {
  const capped = capEventData(data);
  db.sql("INSERT INTO run_events (run_id, seq, at, type, data) VALUES (?, ?, ?, ?, ?)").run(
    runId,
    seq,
    at,
    type,
    capped.json,
  );
  // What a webhook reports is written with the change it reports (docs/api.md, "Webhooks").
  enqueueWebhooks(db, runId, type, capped.data, at);
  return { seq, at, type, data: capped.data };
}
