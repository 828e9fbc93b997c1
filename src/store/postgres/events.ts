import type { RunEvent, RunEventType } from "../../model/run.ts";
import { webhookEventOf } from "../../model/webhook.ts";
import { capEventData } from "../event-cap.ts";
import { iso } from "../rows.ts";
import type { NewRunEvent } from "../store.ts";
import type { Database, Tx } from "./database.ts";
import { enqueueWebhooks, webhookEndpoints } from "./webhooks.ts";

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

/**
 * One statement, outside a transaction, unless an event is one a webhook reports (then its deliveries are
 * written in the same transaction): numbering, insert and the notification together, one round trip.
 */
export async function appendWorkerEvents(
  db: Database,
  runId: string,
  workerId: string,
  events: readonly NewRunEvent[],
): Promise<RunEvent[] | undefined> {
  if (events.length === 0) return [];
  const at = iso(Date.now());
  if (events.some((e) => webhookEventOf(e.type, e.data))) {
    return db.tx(async (tx) => {
      const written = await insertEvents(tx, runId, events, at, workerId);
      if (written) tx.signal("event_appended", runId, written.at(-1)!.seq);
      return written;
    });
  }
  const capped = events.map((e) => capEventData(e.data));
  const rows = await db.rows(
    `${NUMBERED_INSERT}, notified AS (SELECT pg_notify($6, $7) FROM (SELECT 1 FROM inserted LIMIT 1) one)
     SELECT seq, (SELECT count(*) FROM notified) AS notified FROM inserted ORDER BY seq`,
    [
      runId,
      at,
      workerId,
      events.map((e) => e.type),
      capped.map((c) => c.json),
      ...db.notification([["event_appended", runId, -1]]),
    ],
  );
  if (rows.length === 0) return undefined;
  db.announceHere(["event_appended", runId, Number(rows.at(-1)!.seq)]);
  return rows.map((r, i) => ({ seq: Number(r.seq), at, type: events[i]!.type, data: capped[i]!.data }));
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
 * Numbers `events` from the run's counter, whose row lock (held until the commit) keeps concurrent
 * appends to one run in sequence without gaps, and inserts them: one statement. With a worker ($3), only
 * while that worker holds the run (lease fencing). `alsoSet` changes more of the run in the same UPDATE
 * (the agent's start), and `numbered` returns the run's execution with the first number used.
 */
export function numberedInsert(alsoSet = ""): string {
  return `WITH numbered AS (
    UPDATE runs SET ${alsoSet}last_event_seq = last_event_seq + cardinality($4::text[]),
        last_event_at = CASE WHEN cardinality($4::text[]) = 0 THEN last_event_at ELSE GREATEST(last_event_at, $2) END
      WHERE id = $1 AND ($3::text IS NULL OR (worker_id = $3 AND state = 'INPROGRESS'))
      RETURNING last_event_seq - cardinality($4::text[]) AS before, team_id, execution
  ), inserted AS (
    INSERT INTO run_events (run_id, seq, at, type, data)
    SELECT $1, numbered.before + e.n, $2, e.type, e.data
      FROM numbered, unnest($4::text[], $5::text[]) WITH ORDINALITY AS e(type, data, n)
    RETURNING seq
  )`;
}

const NUMBERED_INSERT = numberedInsert();

/** The team's webhook endpoints as enqueueWebhooks takes them (webhookEndpoints), for a statement's answer. */
export function endpointsOf(teamId: string): string {
  return `(SELECT json_agg(json_build_object('id', e.id, 'events', e.events) ORDER BY e.created_at, e.id)
       FROM webhook_endpoints e WHERE e.team_id = ${teamId})`;
}

const WITH_ENDPOINTS = `SELECT seq, ${endpointsOf("(SELECT team_id FROM numbered)")} AS endpoints
  FROM inserted ORDER BY seq`;

/** Appends one event in the transaction (see insertEvents). */
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
  return (await insertEvents(tx, runId, [{ type, data }], at, workerId))?.[0];
}

/**
 * Appends `events` in order in the transaction, with the webhook deliveries of those a webhook reports
 * (docs/api.md, "Webhooks"). With `workerId`, nothing is written and undefined returned unless that worker
 * holds the run; without, a run that does not exist is an error.
 */
export async function insertEvents(
  tx: Tx,
  runId: string,
  events: readonly NewRunEvent[],
  at: string,
  workerId?: string,
): Promise<RunEvent[] | undefined> {
  if (events.length === 0) return [];
  const capped = events.map((e) => capEventData(e.data));
  // The team's endpoints come with the insert when a webhook may report one of the events.
  const reported = events.some((e) => webhookEventOf(e.type, e.data));
  const rows = await tx.rows(
    `${NUMBERED_INSERT} ${reported ? WITH_ENDPOINTS : "SELECT seq FROM inserted ORDER BY seq"}`,
    [runId, at, workerId ?? null, events.map((e) => e.type), capped.map((c) => c.json)],
  );
  if (rows.length === 0) {
    if (workerId !== undefined) return undefined;
    throw new Error(`run ${runId} does not exist`);
  }
  const written = writtenEvents(events, capped, Number(rows[0]!.seq), at);
  if (reported) await enqueueReported(tx, runId, written, rows[0]!.endpoints);
  return written;
}

/** The events as written: numbered from `first`, their data as capped. */
export function writtenEvents(
  events: readonly NewRunEvent[],
  capped: ReturnType<typeof capEventData>[],
  first: number,
  at: string,
): RunEvent[] {
  return events.map((e, i) => ({ seq: first + i, at, type: e.type, data: capped[i]!.data }));
}

/**
 * The webhook deliveries of the written events a webhook reports, given the team's endpoints as the
 * statement that wrote them read them (endpointsOf): what a webhook reports is written with the change
 * it reports (docs/api.md, "Webhooks").
 */
export async function enqueueReported(
  tx: Tx,
  runId: string,
  written: readonly RunEvent[],
  endpointsJson: unknown,
): Promise<void> {
  const endpoints = webhookEndpoints(endpointsJson);
  if (endpoints.length === 0) return;
  for (const event of written) await enqueueWebhooks(tx, runId, event.type, event.data, event.at, endpoints);
}
