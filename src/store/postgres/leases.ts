import type { ResumeReason, RunRecord } from "../../model/run.ts";
import { DEFAULT_MAX_RESUMES, resumesExhausted, workerLostEvent } from "../../model/run-resume.ts";
import { canApply } from "../../model/run-state.ts";
import { webhookEventOf } from "../../model/webhook.ts";
import { capEventData } from "../event-cap.ts";
import type { AgentStart, EndOptions, ExecutionEnd, NextClaim } from "../executor-records.ts";
import { iso, toRun } from "../rows.ts";
import type { NewRunEvent, RunPatch } from "../store.ts";
import { endpointsTaking } from "../webhook-rows.ts";
import { listOfRun, toAttachment } from "./attachments.ts";
import type { Database, Row, Tx } from "./database.ts";
import { endpointsOf, insertEvent, insertEvents, numberedInsert } from "./events.ts";
import { inOrder, takePendingOfHolder } from "./followups.ts";
import { SIGNAL_CHANNEL, type SignalNote } from "./notifications.ts";
import {
  announce,
  applyTransition,
  ENDED_SETTING,
  heldEndStatement,
  transitionWithCommit,
  transitionWrite,
} from "./runs.ts";
import { enqueueWebhooks, webhookEndpoints } from "./webhooks.ts";

/**
 * The executor's side of a run: claiming it with a lease, renewing, starting the agent, finishing or
 * abandoning the execution, recovering expired leases, and what a worker records on the run it holds.
 */

/** The state event of a claim from QUEUED, as transition() words it (its webhook: run.state_changed). */
const CLAIM_EVENT = { state: "INPROGRESS", previous: "QUEUED" };

/**
 * The oldest run waiting to be resumed, else the oldest QUEUED run, becomes this worker's in one statement:
 * a run from QUEUED with its state event numbered and inserted beside it. SKIP LOCKED lets workers on every
 * replica claim at once: each takes the oldest run nobody else is taking, and none waits for another's
 * commit. The columns set from QUEUED are those of transition("claim").
 *
 * On its own (CLAIM_ALONE, one round trip, its notification built in SQL as encodeSignals words it), it
 * claims only a run whose claim no webhook of its team reports, and answers the run it found either way
 * (no row: nothing to claim; a row without the run: the claim goes to a transaction); there
 * (CLAIM_IN_TX) the team's endpoints come back with the run, for the deliveries written in its transaction.
 */
function claimStatement(guard: string, tail: string): string {
  return `WITH resumable AS (
    SELECT id, resume_reason FROM runs WHERE resume_reason IS NOT NULL AND state = 'INPROGRESS'
     ORDER BY queued_at, id LIMIT 1 FOR UPDATE SKIP LOCKED
  ), queued AS (
    SELECT id, NULL::text AS resume_reason FROM runs WHERE state = 'QUEUED' AND NOT EXISTS (SELECT 1 FROM resumable)
     ORDER BY queued_at, id LIMIT 1 FOR UPDATE SKIP LOCKED
  ), next AS (
    SELECT * FROM resumable UNION ALL SELECT * FROM queued
  ), claimed AS (
    UPDATE runs SET worker_id = $1, lease_expires_at = $2, updated_at = $3, resume_reason = NULL,
        state = 'INPROGRESS',
        started_at = CASE WHEN runs.state = 'QUEUED' THEN COALESCE(started_at, $3) ELSE started_at END,
        execution_started_at = CASE WHEN runs.state = 'QUEUED' THEN $3 ELSE execution_started_at END,
        agent_started = CASE WHEN runs.state = 'QUEUED' THEN 0 ELSE agent_started END,
        last_event_seq = last_event_seq + CASE WHEN runs.state = 'QUEUED' THEN 1 ELSE 0 END,
        last_event_at = CASE WHEN runs.state = 'QUEUED' THEN GREATEST(last_event_at, $3) ELSE last_event_at END
      FROM next WHERE runs.id = next.id ${guard}
      RETURNING runs.*, next.resume_reason AS resumed_for
  ), event AS (
    INSERT INTO run_events (run_id, seq, at, type, data)
    SELECT id, last_event_seq, $3, 'state', $4 FROM claimed WHERE resumed_for IS NULL
  )${tail}`;
}

const CLAIM_ALONE_TAIL = `, notified AS (
    SELECT pg_notify($5, json_build_object('o', $6::text, 's', json_build_array(
      json_build_array('run_changed', id), json_build_array('event_appended', id, -1)))::text)
      FROM claimed
  )
  SELECT (SELECT count(*) FROM notified) AS notified, claimed.* FROM next LEFT JOIN claimed ON claimed.id = next.id`;

/** A claim no webhook of its team reports: a resume (no state change), or a team without such an endpoint. */
const UNREPORTED = `AND (next.resume_reason IS NOT NULL OR NOT EXISTS (
     SELECT 1 FROM webhook_endpoints e WHERE e.team_id = runs.team_id AND e.events::jsonb ? 'run.state_changed'))`;

const CLAIM_ALONE = claimStatement(UNREPORTED, CLAIM_ALONE_TAIL);

/**
 * CLAIM_ALONE behind an execution's end in the same transaction: only once the end was written
 * (heldEndStatement marks it), so that a run is claimed only for a slot that was freed.
 */
const CLAIM_AFTER_END = claimStatement(
  `${UNREPORTED} AND current_setting('${ENDED_SETTING}', true) = $7`,
  CLAIM_ALONE_TAIL,
);

const CLAIM_IN_TX = claimStatement(
  "",
  ` SELECT claimed.*, ${endpointsOf("claimed.team_id")} AS endpoints FROM claimed`,
);

export async function claimNextRun(
  db: Database,
  workerId: string,
  leaseMs: number,
): Promise<RunRecord | undefined> {
  const values = claimValues(workerId, leaseMs);
  const alone = await db.row(CLAIM_ALONE, [...values, SIGNAL_CHANNEL, db.origin]);
  if (!alone) return undefined;
  if (alone.id !== null) return claimedAlone(db, alone);
  // The run's claim is one a webhook of its team reports: claimed in a transaction with its delivery.
  return db.tx(async (tx) => {
    const row = await tx.row(CLAIM_IN_TX, values);
    if (!row) return undefined;
    const run = toRun(row);
    announce(tx, run);
    if (row.resumed_for !== null) return { ...run, resuming: row.resumed_for as ResumeReason };
    await enqueueWebhooks(tx, run.id, "state", CLAIM_EVENT, values[2]!, webhookEndpoints(row.endpoints));
    return run;
  });
}

function claimValues(workerId: string, leaseMs: number): string[] {
  const now = Date.now();
  return [workerId, iso(now + leaseMs), iso(now), JSON.stringify(CLAIM_EVENT)];
}

/** The run CLAIM_ALONE claimed (its answer's row, with the run), announced here: its commit notified the others. */
function claimedAlone(db: Database, row: Row): RunRecord {
  db.announceHere(["run_changed", String(row.id)]);
  db.announceHere(["event_appended", String(row.id), -1]);
  const run = toRun(row);
  return row.resumed_for !== null ? { ...run, resuming: row.resumed_for as ResumeReason } : run;
}

/** The agent's start: the run marked started, with the events it carries numbered and inserted. */
const STARTING_ALONE = `${numberedInsert("agent_started = 1, ")}, notified AS (
    SELECT pg_notify($6, $7) FROM (SELECT 1 FROM inserted LIMIT 1) one
  )
  SELECT before, (SELECT count(*) FROM notified) AS notified FROM numbered`;

export async function renewLease(
  db: Database,
  runId: string,
  workerId: string,
  leaseMs: number,
): Promise<boolean> {
  const changed = await db.changes(
    "UPDATE runs SET lease_expires_at = $1 WHERE id = $2 AND worker_id = $3 AND state = 'INPROGRESS'",
    [iso(Date.now() + leaseMs), runId, workerId],
  );
  return changed === 1;
}

export async function startAgent(
  db: Database,
  runId: string,
  workerId: string,
  events: readonly NewRunEvent[] = [],
): Promise<AgentStart | undefined> {
  if (events.some((e) => webhookEventOf(e.type, e.data))) return startReported(db, runId, workerId, events);
  const capped = events.map((e) => capEventData(e.data));
  // The start and the events it carries in one statement, which locks the run and notifies other stores
  // of the events; the follow-ups taken after it in the same transaction, fenced by itself, then the
  // run's attachments (theirs among them). Nothing in between is decided here, so BEGIN, the three and
  // COMMIT go in one write: one round trip. A follow-up added meanwhile (it locks the run too) committed
  // before the start, and is taken with its attachments, or waits for the commit.
  const [started, taken, attachments] = await db.transaction([
    [
      STARTING_ALONE,
      [
        runId,
        iso(Date.now()),
        workerId,
        events.map((e) => e.type),
        capped.map((c) => c.json),
        ...db.notification([["event_appended", runId, -1]]),
      ],
    ],
    takePendingOfHolder(runId, workerId),
    listOfRun(runId),
  ]);
  const row = started![0];
  if (!row) return undefined;
  if (events.length > 0) db.announceHere(["event_appended", runId, Number(row.before) + events.length]);
  return { followups: inOrder(taken!), attachments: attachments!.map(toAttachment) };
}

/** A start whose events a webhook reports: their deliveries are written in its transaction. */
async function startReported(
  db: Database,
  runId: string,
  workerId: string,
  events: readonly NewRunEvent[],
): Promise<AgentStart | undefined> {
  return db.tx(async (tx) => {
    const row = await tx.row(
      "UPDATE runs SET agent_started = 1 WHERE id = $1 AND worker_id = $2 AND state = 'INPROGRESS' RETURNING 1",
      [runId, workerId],
    );
    if (!row) return undefined;
    const written = await insertEvents(tx, runId, events, iso(Date.now()), workerId);
    const last = written?.at(-1);
    if (last) tx.signal("event_appended", runId, last.seq);
    const [taken, attachments] = await tx.together([takePendingOfHolder(runId, workerId), listOfRun(runId)]);
    return { followups: inOrder(taken!), attachments: attachments!.map(toAttachment) };
  });
}

export async function finishExecution(
  db: Database,
  runId: string,
  workerId: string,
  trigger: "succeed" | "fail" | "error" | "block",
  patch: RunPatch,
  events: readonly NewRunEvent[] = [],
  { next, held }: EndOptions = {},
): Promise<ExecutionEnd> {
  if (held) {
    const ended = await endAsHeld(db, held, workerId, trigger, patch, events, next);
    if (ended) return ended;
  }
  // The next run's claim, answered with the COMMIT: a row with the run, or one without (its claim is one a
  // webhook reports, left to claimNextRun's transaction), or none (nothing to claim). Should the end fail
  // once committed (transitionWithCommit's check), a run claimed with it is requeued when its lease runs
  // out, as is any run whose worker vanished before its agent started.
  let claim: Row | undefined;
  const end = await db.tx(async (tx): Promise<ExecutionEnd> => {
    // The lock holds off a follow-up (it locks the run too) until this execution has ended or taken it;
    // the follow-ups already waiting are taken after it, in the same round trip, and the team's webhook
    // endpoints come with the run: they decide whether the end can go with the COMMIT.
    const [owners, taken] = await tx.together([
      [
        `SELECT runs.*, ${endpointsOf("runs.team_id")} AS endpoints FROM runs
          WHERE id = $1 AND worker_id = $2 AND state = 'INPROGRESS' FOR UPDATE`,
        [runId, workerId],
      ],
      takePendingOfHolder(runId, workerId),
    ]);
    if (!owners![0]) return { pending: [] };
    const { endpoints, ...owner } = owners![0];
    const locked = toRun(owner);
    const pending = inOrder(taken!);
    if (pending.length > 0) {
      const written = await insertEvents(tx, runId, events, iso(Date.now()), workerId);
      const last = written?.at(-1);
      if (last) tx.signal("event_appended", runId, last.seq);
      return { pending };
    }
    if (!canApply(trigger, locked.state)) return { pending };
    // The events go ahead of the state event, in the transition's statement.
    const write = transitionWrite(locked, trigger, patch, events, Date.now());
    const dropCheckpoint = write.sets.state !== "BLOCKED";
    let run: RunRecord | undefined;
    if (reported(write.events, webhookEndpoints(endpoints))) {
      // Its deliveries are written in the transaction, from the transition's answer.
      run = await applyTransition(tx, runId, trigger, patch, workerId, locked, events);
      // Nothing waits for the checkpoint's removal: it goes with the COMMIT.
      if (run && dropCheckpoint) tx.afterwards("DELETE FROM run_checkpoints WHERE run_id = $1", [runId]);
    } else {
      // Nothing to decide after it: the end, the checkpoint's removal, the signals and COMMIT in one write.
      run = transitionWithCommit(tx, owner, write, { dropCheckpoint });
    }
    if (!run) return { pending };
    announce(tx, run);
    // The slot the run held is free: the next run is claimed in the same write, committed with the end.
    if (next) {
      tx.afterwards(
        CLAIM_ALONE,
        [...claimValues(next.workerId, next.leaseMs), SIGNAL_CHANNEL, db.origin],
        (r) => {
          claim = r.rows[0];
        },
      );
    }
    return { run, pending };
  });
  return claim?.id != null ? { ...end, next: claimedAlone(db, claim) } : end;
}

/**
 * The end as its worker holds the run (`held`, as claimed), in one round trip: BEGIN, the run's lock, the
 * end computed from `held` (heldEndStatement: written only if the run still shows what it was computed
 * from, no follow-up waits and no webhook may report it), the next run's claim after it, COMMIT. The lock
 * is a statement of its own, so that the end's own snapshot, taken once the lock is held, sees a follow-up
 * committed just before it. Undefined when the end was not written while the worker holds the run: the
 * caller decides on the locked row then.
 */
async function endAsHeld(
  db: Database,
  held: RunRecord,
  workerId: string,
  trigger: "succeed" | "fail" | "error" | "block",
  patch: RunPatch,
  events: readonly NewRunEvent[],
  next: NextClaim | undefined,
): Promise<ExecutionEnd | undefined> {
  if (held.state !== "INPROGRESS" || !canApply(trigger, held.state)) return undefined;
  const write = transitionWrite(held, trigger, patch, events, Date.now());
  // What announce() sends for an ended run, from the statement (other stores) and from here (this one).
  const notes: SignalNote[] = [
    ["run_changed", held.id],
    ["event_appended", held.id, -1],
  ];
  const [lock, end, claim] = await db.transaction([
    [
      "SELECT 1 FROM runs WHERE id = $1 AND worker_id = $2 AND state = 'INPROGRESS' FOR UPDATE",
      [held.id, workerId],
    ],
    heldEndStatement(held, workerId, write, db.notification(notes)),
    ...(next
      ? [
          [
            CLAIM_AFTER_END,
            [...claimValues(next.workerId, next.leaseMs), SIGNAL_CHANNEL, db.origin, held.id],
          ] as [string, unknown[]],
        ]
      : []),
  ]);
  if (!lock![0]) return { pending: [] }; // not this worker's run: nothing was written
  const row = end![0];
  if (!row) return undefined;
  for (const note of notes) db.announceHere(note);
  const claimed = claim?.[0];
  return {
    run: toRun(row),
    pending: [],
    ...(claimed?.id != null ? { next: claimedAlone(db, claimed) } : {}),
  };
}

/** Whether a webhook of the team (`endpoints`) reports one of `events`. */
function reported(events: readonly NewRunEvent[], endpoints: ReturnType<typeof webhookEndpoints>): boolean {
  if (endpoints.length === 0) return false;
  return events.some((e) => {
    const event = webhookEventOf(e.type, e.data);
    return event !== undefined && endpointsTaking(endpoints, event.type).length > 0;
  });
}

export async function recoverExpiredLeases(
  db: Database,
  maxResumes = DEFAULT_MAX_RESUMES,
): Promise<RunRecord[]> {
  const now = Date.now();
  // Every worker asks at every poll, and almost always nothing has expired: one read, no transaction.
  const any = await db.row(
    "SELECT 1 FROM runs WHERE state = 'INPROGRESS' AND lease_expires_at < $1 LIMIT 1",
    [iso(now)],
  );
  if (!any) return [];
  return db.tx(async (tx) => {
    // Runs another replica is recovering (or whose worker is renewing right now) are skipped, not waited for.
    const expired = await tx.rows(
      `SELECT id, agent_started, requeue_count, resumes FROM runs
        WHERE state = 'INPROGRESS' AND lease_expires_at < $1
        ORDER BY id FOR UPDATE SKIP LOCKED`,
      [iso(now)],
    );
    const out: RunRecord[] = [];
    for (const row of expired) {
      const id = String(row.id);
      const resumes = Number(row.resumes);
      let run: RunRecord | undefined;
      if (Number(row.agent_started) === 0 && Number(row.requeue_count) === 0) {
        run = await applyTransition(tx, id, "requeue", {
          eventData: { reason: "lease expired before the agent started" },
        });
      } else if (resumes < maxResumes) {
        await tx.changes(
          `UPDATE runs SET worker_id = NULL, lease_expires_at = NULL, resume_reason = 'worker_lost',
              resumes = resumes + 1, updated_at = $2 WHERE id = $1`,
          [id, iso(now)],
        );
        await insertEvent(tx, id, "log", workerLostEvent(resumes + 1, maxResumes), iso(now));
        run = toRun((await tx.row("SELECT * FROM runs WHERE id = $1", [id]))!);
      } else {
        run = await abandon(tx, id, undefined, resumesExhausted(resumes, maxResumes));
      }
      if (run) out.push(run);
    }
    for (const run of out) announce(tx, run);
    return out;
  });
}

export async function recordUsage(
  db: Database,
  runId: string,
  usage: RunRecord["requestUsage"],
  workerId?: string,
): Promise<void> {
  if (workerId === undefined) {
    await db.changes("UPDATE runs SET request_usage = $1 WHERE id = $2", [JSON.stringify(usage), runId]);
    return;
  }
  // The worker's own run, or one that has ended since (a cancel): never one another worker holds now.
  await db.changes(
    "UPDATE runs SET request_usage = $1 WHERE id = $2 AND (worker_id = $3 OR worker_id IS NULL)",
    [JSON.stringify(usage), runId, workerId],
  );
}

export async function recordSkill(
  db: Database,
  runId: string,
  workerId: string,
  agentConfig: RunRecord["agentConfig"],
  agentSkill: NonNullable<RunRecord["agentSkill"]>,
): Promise<boolean> {
  return db.tx(async (tx) => {
    const changed = await tx.changes(
      `UPDATE runs SET agent_config = $1, config_name = $2, agent_skill = $3, updated_at = $4
        WHERE id = $5 AND worker_id = $6 AND state = 'INPROGRESS'`,
      [
        JSON.stringify(agentConfig),
        agentConfig.name ?? null,
        JSON.stringify(agentSkill),
        iso(Date.now()),
        runId,
        workerId,
      ],
    );
    if (changed === 1) tx.signal("run_changed", runId);
    return changed === 1;
  });
}

export async function handBackRun(
  db: Database,
  runId: string,
  workerId: string,
  message: string,
): Promise<boolean> {
  return db.tx(async (tx) => {
    const now = iso(Date.now());
    const changed = await tx.changes(
      `UPDATE runs SET worker_id = NULL, lease_expires_at = NULL, resume_reason = 'shutdown', updated_at = $1
        WHERE id = $2 AND worker_id = $3 AND state = 'INPROGRESS'`,
      [now, runId, workerId],
    );
    if (changed !== 1) return false;
    await insertEvent(tx, runId, "log", { level: "info", phase: "worker", message }, now);
    announce(tx, toRun((await tx.row("SELECT * FROM runs WHERE id = $1", [runId]))!));
    return true;
  });
}

/** ERROR for a run its worker can no longer finish; follow-ups it never took start the next execution. */
async function abandon(
  tx: Tx,
  runId: string,
  workerId: string | undefined,
  statusMessage: NonNullable<RunRecord["statusMessage"]>,
): Promise<RunRecord | undefined> {
  const errored = await applyTransition(tx, runId, "error", { statusMessage }, workerId);
  if (!errored) return undefined;
  const waiting = await tx.row("SELECT 1 FROM followups WHERE run_id = $1 AND delivered_at IS NULL LIMIT 1", [
    runId,
  ]);
  if (!waiting) return errored;
  return applyTransition(tx, runId, "handoff", { eventData: { reason: "undelivered follow-up" } });
}

export async function cancelUnansweredRuns(
  db: Database,
  blockedBefore: string,
  statusMessage: (run: RunRecord) => NonNullable<RunRecord["statusMessage"]>,
): Promise<RunRecord[]> {
  // As for expired leases: one read at each poll, a transaction only when a run waited too long.
  const any = await db.row("SELECT 1 FROM runs WHERE state = 'BLOCKED' AND blocked_at < $1 LIMIT 1", [
    blockedBefore,
  ]);
  if (!any) return [];
  return db.tx(async (tx) => {
    const rows = await tx.rows(
      `SELECT * FROM runs WHERE state = 'BLOCKED' AND blocked_at < $1
        ORDER BY blocked_at LIMIT 100 FOR UPDATE SKIP LOCKED`,
      [blockedBefore],
    );
    const out: RunRecord[] = [];
    for (const row of rows) {
      const run = toRun(row);
      const cancelled = await applyTransition(tx, run.id, "cancel", { statusMessage: statusMessage(run) });
      if (cancelled) out.push(cancelled);
    }
    for (const run of out) announce(tx, run);
    return out;
  });
}
