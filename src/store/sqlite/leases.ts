import type { ResumeReason, RunRecord } from "../../model/run.ts";
import { DEFAULT_MAX_RESUMES, resumesExhausted, workerLostEvent } from "../../model/run-resume.ts";
import type { AgentStart, EndOptions, ExecutionEnd } from "../executor-records.ts";
import { iso } from "../rows.ts";
import type { NewRunEvent, RunPatch } from "../store.ts";
import { listOfRun } from "./attachments.ts";
import type { Database } from "./database.ts";
import { insertEvent, insertWorkerEvents } from "./events.ts";
import { takePending } from "./followups.ts";
import type { Row } from "./rows.ts";
import { announce, applyTransition, readRun } from "./runs.ts";

/**
 * The executor's side of a run: claiming it with a lease, renewing, starting the agent, finishing or
 * abandoning the execution, recovering expired leases, and what a worker records on the run it holds.
 */

export async function claimNextRun(
  db: Database,
  workerId: string,
  leaseMs: number,
): Promise<RunRecord | undefined> {
  const run = await db.grouped(() => claimNext(db, workerId, leaseMs));
  if (run) announce(db, run);
  return run;
}

/** The claim itself, in the caller's transaction. */
function claimNext(db: Database, workerId: string, leaseMs: number): RunRecord | undefined {
  return claimResumable(db, workerId, leaseMs) ?? claimQueued(db, workerId, leaseMs);
}

/** A run handed back by its worker (or whose worker was lost) comes first: it was already working. */
function claimResumable(db: Database, workerId: string, leaseMs: number): RunRecord | undefined {
  const row = db
    .sql(
      "SELECT id, resume_reason FROM runs WHERE resume_reason IS NOT NULL AND state = 'INPROGRESS' ORDER BY queued_at, id LIMIT 1",
    )
    .get() as Row | undefined;
  if (!row) return undefined;
  const now = Date.now();
  db.sql(
    `UPDATE runs SET worker_id = ?, lease_expires_at = ?, updated_at = ?, resume_reason = NULL
      WHERE id = ? AND resume_reason IS NOT NULL AND state = 'INPROGRESS'`,
  ).run(workerId, iso(now + leaseMs), iso(now), String(row.id));
  return { ...readRun(db, String(row.id))!, resuming: row.resume_reason as ResumeReason };
}

function claimQueued(db: Database, workerId: string, leaseMs: number): RunRecord | undefined {
  const row = db.sql("SELECT id FROM runs WHERE state = 'QUEUED' ORDER BY queued_at, id LIMIT 1").get() as
    | Row
    | undefined;
  if (!row) return undefined;
  const now = Date.now();
  db.sql(
    `UPDATE runs SET state = 'INPROGRESS', worker_id = ?, lease_expires_at = ?, updated_at = ?,
        started_at = COALESCE(started_at, ?), execution_started_at = ?, agent_started = 0
      WHERE id = ? AND state = 'QUEUED'`,
  ).run(workerId, iso(now + leaseMs), iso(now), iso(now), iso(now), String(row.id));
  insertEvent(db, String(row.id), "state", { state: "INPROGRESS", previous: "QUEUED" }, iso(now));
  return readRun(db, String(row.id));
}

export async function renewLease(
  db: Database,
  runId: string,
  workerId: string,
  leaseMs: number,
): Promise<boolean> {
  return db.grouped(() => {
    const res = db
      .sql("UPDATE runs SET lease_expires_at = ? WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS'")
      .run(iso(Date.now() + leaseMs), runId, workerId);
    return Number(res.changes) === 1;
  });
}

export async function startAgent(
  db: Database,
  runId: string,
  workerId: string,
  events: readonly NewRunEvent[] = [],
): Promise<AgentStart | undefined> {
  const result = await db.grouped(() => {
    const row = db
      .sql(
        "UPDATE runs SET agent_started = 1 WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS' RETURNING execution",
      )
      .get(runId, workerId) as Row | undefined;
    if (!row) return undefined;
    const written = insertWorkerEvents(db, runId, workerId, events, iso(Date.now()));
    // The attachments after the follow-ups taken: theirs are among them.
    const followups = takePending(db, runId, Number(row.execution));
    return { start: { followups, attachments: listOfRun(db, runId) }, last: written?.at(-1) };
  });
  if (result?.last) db.signals.emit("event_appended", runId, result.last.seq);
  return result?.start;
}

export async function finishExecution(
  db: Database,
  runId: string,
  workerId: string,
  trigger: "succeed" | "fail" | "error" | "block",
  patch: RunPatch,
  events: readonly NewRunEvent[] = [],
  { next }: EndOptions = {},
): Promise<ExecutionEnd> {
  const result = await db.grouped((): ExecutionEnd & { wrote: boolean } => {
    const owner = db
      .sql("SELECT execution FROM runs WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS'")
      .get(runId, workerId) as Row | undefined;
    if (!owner) return { pending: [], wrote: false };
    const wrote = (insertWorkerEvents(db, runId, workerId, events, iso(Date.now()))?.length ?? 0) > 0;
    const pending = takePending(db, runId, Number(owner.execution));
    if (pending.length > 0) return { pending, wrote };
    const run = applyTransition(db, runId, trigger, patch, workerId);
    if (!run) return { pending, wrote };
    if (run.state !== "BLOCKED") db.sql("DELETE FROM run_checkpoints WHERE run_id = ?").run(runId);
    // The slot the run held is free: the next run is claimed in the same step.
    const claimed = next ? claimNext(db, next.workerId, next.leaseMs) : undefined;
    return { run, pending, wrote, ...(claimed ? { next: claimed } : {}) };
  });
  if (result.run) announce(db, result.run);
  else if (result.wrote) db.signals.emit("event_appended", runId, -1);
  if (result.next) announce(db, result.next);
  return {
    ...(result.run ? { run: result.run } : {}),
    pending: result.pending,
    ...(result.next ? { next: result.next } : {}),
  };
}

export async function recoverExpiredLeases(
  db: Database,
  maxResumes = DEFAULT_MAX_RESUMES,
): Promise<RunRecord[]> {
  const changed = await db.grouped(() => {
    const now = Date.now();
    const expired = db
      .sql(
        "SELECT id, agent_started, requeue_count, resumes FROM runs WHERE state = 'INPROGRESS' AND lease_expires_at < ?",
      )
      .all(iso(now)) as Row[];
    const out: RunRecord[] = [];
    for (const row of expired) {
      const id = String(row.id);
      if (Number(row.agent_started) === 0 && Number(row.requeue_count) === 0) {
        out.push(
          applyTransition(db, id, "requeue", {
            eventData: { reason: "lease expired before the agent started" },
          })!,
        );
        continue;
      }
      const resumes = Number(row.resumes);
      if (resumes < maxResumes) {
        db.sql(
          `UPDATE runs SET worker_id = NULL, lease_expires_at = NULL, resume_reason = 'worker_lost',
              resumes = resumes + 1, updated_at = ? WHERE id = ?`,
        ).run(iso(now), id);
        insertEvent(db, id, "log", workerLostEvent(resumes + 1, maxResumes), iso(now));
        out.push(readRun(db, id)!);
        continue;
      }
      out.push(abandon(db, id, undefined, resumesExhausted(resumes, maxResumes))!);
    }
    return out;
  });
  for (const run of changed) announce(db, run);
  return changed;
}

export async function recordUsage(
  db: Database,
  runId: string,
  usage: RunRecord["requestUsage"],
  workerId?: string,
): Promise<void> {
  await db.grouped(() =>
    workerId === undefined
      ? db.sql("UPDATE runs SET request_usage = ? WHERE id = ?").run(JSON.stringify(usage), runId)
      : // The worker's own run, or one that has ended since (a cancel): never one another worker holds now.
        db
          .sql("UPDATE runs SET request_usage = ? WHERE id = ? AND (worker_id = ? OR worker_id IS NULL)")
          .run(JSON.stringify(usage), runId, workerId),
  );
}

export async function recordSkill(
  db: Database,
  runId: string,
  workerId: string,
  agentConfig: RunRecord["agentConfig"],
  agentSkill: NonNullable<RunRecord["agentSkill"]>,
): Promise<boolean> {
  const changed = await db.grouped(
    () =>
      Number(
        db
          .sql(
            `UPDATE runs SET agent_config = ?, config_name = ?, agent_skill = ?, updated_at = ?
              WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS'`,
          )
          .run(
            JSON.stringify(agentConfig),
            agentConfig.name ?? null,
            JSON.stringify(agentSkill),
            iso(Date.now()),
            runId,
            workerId,
          ).changes,
      ) === 1,
  );
  if (changed) db.signals.emit("run_changed", runId);
  return changed;
}

export async function handBackRun(
  db: Database,
  runId: string,
  workerId: string,
  message: string,
): Promise<boolean> {
  const run = await db.grouped(() => {
    const now = iso(Date.now());
    const res = db
      .sql(
        `UPDATE runs SET worker_id = NULL, lease_expires_at = NULL, resume_reason = 'shutdown', updated_at = ?
          WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS'`,
      )
      .run(now, runId, workerId);
    if (Number(res.changes) !== 1) return undefined;
    insertEvent(db, runId, "log", { level: "info", phase: "worker", message }, now);
    return readRun(db, runId);
  });
  if (run) announce(db, run);
  return run !== undefined;
}

/** ERROR for a run its worker can no longer finish; follow-ups it never took start the next execution. */
function abandon(
  db: Database,
  runId: string,
  workerId: string | undefined,
  statusMessage: NonNullable<RunRecord["statusMessage"]>,
): RunRecord | undefined {
  const errored = applyTransition(db, runId, "error", { statusMessage }, workerId);
  if (!errored) return undefined;
  const waiting = db
    .sql("SELECT 1 FROM followups WHERE run_id = ? AND delivered_at IS NULL LIMIT 1")
    .get(runId);
  if (!waiting) return errored;
  return applyTransition(db, runId, "handoff", { eventData: { reason: "undelivered follow-up" } });
}

export async function cancelUnansweredRuns(
  db: Database,
  blockedBefore: string,
  statusMessage: (run: RunRecord) => NonNullable<RunRecord["statusMessage"]>,
): Promise<RunRecord[]> {
  const ended = await db.grouped(() => {
    const rows = db
      .sql("SELECT id FROM runs WHERE state = 'BLOCKED' AND blocked_at < ? ORDER BY blocked_at LIMIT 100")
      .all(blockedBefore) as Row[];
    const out: RunRecord[] = [];
    for (const row of rows) {
      const run = readRun(db, String(row.id));
      const cancelled = run && applyTransition(db, run.id, "cancel", { statusMessage: statusMessage(run) });
      if (cancelled) out.push(cancelled);
    }
    return out;
  });
  for (const run of ended) announce(db, run);
  return ended;
}
