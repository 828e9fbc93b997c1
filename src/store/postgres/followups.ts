import { attachmentSummary, type NewAttachment } from "../../model/attachment.ts";
import type { FollowupRecord, RunRecord } from "../../model/run.ts";
import { iso, toFollowup } from "../rows.ts";
import { followupOutcome, groupMessages } from "../run-steering.ts";
import type { IdempotencyClaim, IdempotentResult } from "../store.ts";
import { insertAttachments } from "./attachments.ts";
import type { Database, Row, Tx } from "./database.ts";
import { insertEvent } from "./events.ts";
import { checkIdempotency, rememberResponse } from "./idempotency.ts";
import { announce, applyTransition, lockTeamRun, touch } from "./runs.ts";

/** Follow-ups: accepting one (routed by the run's state) and handing the waiting ones to an execution. */

export async function addFollowup(
  db: Database,
  teamId: string,
  runId: string,
  f: { id: string; message: string; mode: string; attachments?: readonly NewAttachment[] },
  idem?: IdempotencyClaim,
): Promise<IdempotentResult<{ followup: FollowupRecord; run: RunRecord }> | undefined> {
  return db.tx(
    async (tx): Promise<IdempotentResult<{ followup: FollowupRecord; run: RunRecord }> | undefined> => {
      // Routed by the state it is locked in: a finishing worker (which locks the run too) cannot slip between.
      const state = await lockTeamRun(tx, teamId, runId);
      if (!state) return undefined;
      const seen = idem && (await checkIdempotency(tx, idem));
      if (seen) return seen;
      const started = await tx.row("SELECT agent_started FROM runs WHERE id = $1", [runId]);
      const outcome = followupOutcome(state, Number(started?.agent_started) === 1);
      const now = iso(Date.now());
      const inserted = await tx.row(
        "INSERT INTO followups (id, run_id, message, mode, outcome, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *",
        [f.id, runId, f.message, f.mode, outcome, now],
      );
      const attachments = f.attachments ?? [];
      await insertAttachments(tx, { runId, teamId, followupId: f.id, createdAt: now }, attachments);
      await insertEvent(
        tx,
        runId,
        "followup",
        {
          followup_id: f.id,
          message: f.message,
          mode: f.mode,
          outcome,
          ...(attachments.length ? { attachments: attachments.map(attachmentSummary) } : {}),
        },
        now,
      );
      const run =
        outcome === "handoff_execution"
          ? (await applyTransition(tx, runId, "handoff", { eventData: { followup_id: f.id } }))!
          : state === "BLOCKED"
            ? (await applyTransition(tx, runId, "answer", { eventData: { followup_id: f.id } }))!
            : await touch(tx, runId, now);
      const value = { followup: toFollowup(inserted!), run };
      const response = idem ? await rememberResponse(tx, idem, value) : undefined;
      announce(tx, run);
      tx.signal("followup_added", runId);
      return { kind: "created", value, response };
    },
  );
}

export async function takePendingFollowups(
  db: Database,
  runId: string,
  execution: number,
  workerId?: string,
): Promise<FollowupRecord[]> {
  return db.tx(async (tx) => {
    if (
      workerId !== undefined &&
      !(await tx.row(
        "SELECT 1 FROM runs WHERE id = $1 AND worker_id = $2 AND state = 'INPROGRESS' FOR UPDATE",
        [runId, workerId],
      ))
    )
      return [];
    return takePending(tx, runId, execution);
  });
}

/** Marks the run's undelivered follow-ups delivered (each row once, whoever else takes at the same time). */
export async function listDeliveredFollowups(
  db: Database,
  runId: string,
  execution: number,
): Promise<FollowupRecord[]> {
  const rows = await db.rows(
    "SELECT * FROM followups WHERE run_id = $1 AND delivered_execution = $2 ORDER BY delivered_at, created_at, id",
    [runId, execution],
  );
  return rows.map(toFollowup);
}

export async function takePending(tx: Tx, runId: string, execution: number): Promise<FollowupRecord[]> {
  const rows = await tx.rows(
    `UPDATE followups SET delivered_at = $1, delivered_execution = $2
      WHERE run_id = $3 AND delivered_at IS NULL RETURNING *`,
    [iso(Date.now()), execution, runId],
  );
  return inOrder(rows);
}

/**
 * takePending as a statement of its own, fenced by itself: it takes the follow-ups for the execution of
 * the run `workerId` holds, and nothing when that worker does not hold it. Written together with the
 * statement that locks the run (`tx.together`), it costs no round trip of its own and still runs after
 * the lock, so it sees every follow-up committed while the lock was awaited.
 */
export function takePendingOfHolder(runId: string, workerId: string): [string, unknown[]] {
  return [
    `WITH holder AS (SELECT execution FROM runs WHERE id = $2 AND worker_id = $3 AND state = 'INPROGRESS')
     UPDATE followups SET delivered_at = $1, delivered_execution = holder.execution FROM holder
      WHERE followups.run_id = $2 AND followups.delivered_at IS NULL RETURNING followups.*`,
    [iso(Date.now()), runId, workerId],
  ];
}

/** Follow-ups in the order they were added. */
export function inOrder(rows: Row[]): FollowupRecord[] {
  return rows
    .map(toFollowup)
    .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
}

export async function listQueuedPrompts(
  db: Database,
  runIds: readonly string[],
): Promise<Map<string, string[]>> {
  const rows = await db.rows(
    `SELECT run_id, message FROM followups
     WHERE run_id = ANY($1::text[]) AND outcome = 'queued_prompt' ORDER BY created_at, id`,
    [runIds],
  );
  return groupMessages(rows);
}
