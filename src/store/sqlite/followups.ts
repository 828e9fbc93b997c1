import { attachmentSummary, type NewAttachment } from "../../model/attachment.ts";
import type { FollowupRecord, RunRecord } from "../../model/run.ts";
import { iso, toFollowup } from "../rows.ts";
import { followupOutcome, groupMessages } from "../run-steering.ts";
import type { IdempotencyClaim, IdempotentResult } from "../store.ts";
import { insertAttachments } from "./attachments.ts";
import type { Database } from "./database.ts";
import { insertEvent } from "./events.ts";
import { checkIdempotency, rememberResponse } from "./idempotency.ts";
import type { Row } from "./rows.ts";
import { announce, applyTransition, teamRunState, touch } from "./runs.ts";

/** Follow-ups: accepting one (routed by the run's state) and handing the waiting ones to an execution. */

export async function addFollowup(
  db: Database,
  teamId: string,
  runId: string,
  f: { id: string; message: string; mode: string; attachments?: readonly NewAttachment[] },
  idem?: IdempotencyClaim,
): Promise<IdempotentResult<{ followup: FollowupRecord; run: RunRecord }> | undefined> {
  const result = await db.grouped(
    (): IdempotentResult<{ followup: FollowupRecord; run: RunRecord }> | undefined => {
      const state = teamRunState(db, teamId, runId);
      if (!state) return undefined;
      const seen = idem && checkIdempotency(db, idem);
      if (seen) return seen;
      const started = db.sql("SELECT agent_started FROM runs WHERE id = ?").get(runId) as Row;
      const outcome = followupOutcome(state, Number(started.agent_started) === 1);
      const now = iso(Date.now());
      db.sql(
        "INSERT INTO followups (id, run_id, message, mode, outcome, created_at) VALUES (?, ?, ?, ?, ?, ?)",
      ).run(f.id, runId, f.message, f.mode, outcome, now);
      const attachments = f.attachments ?? [];
      insertAttachments(db, { runId, teamId, followupId: f.id, createdAt: now }, attachments);
      insertEvent(
        db,
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
          ? applyTransition(db, runId, "handoff", { eventData: { followup_id: f.id } })!
          : state === "BLOCKED"
            ? applyTransition(db, runId, "answer", { eventData: { followup_id: f.id } })!
            : touch(db, runId, now);
      const followup = toFollowup(db.sql("SELECT * FROM followups WHERE id = ?").get(f.id) as Row);
      const value = { followup, run };
      const response = idem ? rememberResponse(db, idem, value) : undefined;
      return { kind: "created", value, response };
    },
  );
  if (result?.kind === "created") {
    announce(db, result.value.run);
    db.signals.emit("followup_added", runId);
  }
  return result;
}

export async function takePendingFollowups(
  db: Database,
  runId: string,
  execution: number,
  workerId?: string,
): Promise<FollowupRecord[]> {
  return db.grouped(() => {
    if (
      workerId !== undefined &&
      !db
        .sql("SELECT 1 FROM runs WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS'")
        .get(runId, workerId)
    )
      return [];
    return takePending(db, runId, execution);
  });
}

export async function listDeliveredFollowups(
  db: Database,
  runId: string,
  execution: number,
): Promise<FollowupRecord[]> {
  const rows = db
    .sql(
      "SELECT * FROM followups WHERE run_id = ? AND delivered_execution = ? ORDER BY delivered_at, created_at, id",
    )
    .all(runId, execution) as Row[];
  return rows.map(toFollowup);
}

export function takePending(db: Database, runId: string, execution: number): FollowupRecord[] {
  const rows = db
    .sql("SELECT * FROM followups WHERE run_id = ? AND delivered_at IS NULL ORDER BY created_at, id")
    .all(runId) as Row[];
  const now = iso(Date.now());
  for (const row of rows) {
    db.sql("UPDATE followups SET delivered_at = ?, delivered_execution = ? WHERE id = ?").run(
      now,
      execution,
      row.id!,
    );
  }
  return rows.map((r) => toFollowup({ ...r, delivered_at: now, delivered_execution: execution }));
}

export async function listQueuedPrompts(
  db: Database,
  runIds: readonly string[],
): Promise<Map<string, string[]>> {
  // One run (a GET) reads its index range in order; several (a list page) are looked up as one JSON array.
  const rows = (
    runIds.length === 1
      ? db
          .sql(
            "SELECT run_id, message FROM followups WHERE run_id = ? AND outcome = 'queued_prompt' ORDER BY created_at, id",
          )
          .all(runIds[0]!)
      : db
          .sql(
            `SELECT run_id, message FROM followups
             WHERE run_id IN (SELECT value FROM json_each(?)) AND outcome = 'queued_prompt' ORDER BY created_at, id`,
          )
          .all(JSON.stringify(runIds))
  ) as Row[];
  return groupMessages(rows);
}
