import type { FollowupRecord, ResumeReason, RunRecord } from "../../model/run.ts";
import { DEFAULT_MAX_RESUMES, resumesExhausted, workerLostEvent } from "../../model/run-resume.ts";
import { iso, toRun } from "../rows.ts";
import type { RunPatch } from "../store.ts";
import type { Database, Tx } from "./database.ts";
import { insertEvent } from "./events.ts";
import { takePending } from "./followups.ts";
import { announce, applyTransition } from "./runs.ts";

/**
 * The executor's side of a run: claiming it with a lease, renewing, starting the agent, finishing or
 * abandoning the execution, recovering expired leases, and what a worker records on the run it holds.
 */

/**
 * The oldest run waiting to be resumed, else the oldest QUEUED run, becomes this worker's in one statement.
 * SKIP LOCKED lets workers on every replica claim at once: each takes the oldest run nobody else is
 * taking, and none waits for another's commit.
 */
export async function claimNextRun(
  db: Database,
  workerId: string,
  leaseMs: number,
): Promise<RunRecord | undefined> {
  return db.tx(async (tx) => {
    const now = Date.now();
    // A run handed back by its worker (or whose worker was lost) comes first: it was already working.
    const resumable = await tx.row(
      `WITH next AS (
         SELECT id, resume_reason FROM runs WHERE resume_reason IS NOT NULL AND state = 'INPROGRESS'
          ORDER BY queued_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
       UPDATE runs SET worker_id = $1, lease_expires_at = $2, updated_at = $3, resume_reason = NULL
         FROM next WHERE runs.id = next.id RETURNING runs.id, next.resume_reason`,
      [workerId, iso(now + leaseMs), iso(now)],
    );
    if (resumable) {
      const run = toRun((await tx.row("SELECT * FROM runs WHERE id = $1", [String(resumable.id)]))!);
      announce(tx, run);
      return { ...run, resuming: resumable.resume_reason as ResumeReason };
    }
    const row = await tx.row(
      `UPDATE runs SET state = 'INPROGRESS', worker_id = $1, lease_expires_at = $2, updated_at = $3,
          started_at = COALESCE(started_at, $3), execution_started_at = $3, agent_started = 0
        WHERE id = (SELECT id FROM runs WHERE state = 'QUEUED' ORDER BY queued_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
          AND state = 'QUEUED'
        RETURNING id`,
      [workerId, iso(now + leaseMs), iso(now)],
    );
    if (!row) return undefined;
    const id = String(row.id);
    await insertEvent(tx, id, "state", { state: "INPROGRESS", previous: "QUEUED" }, iso(now));
    const run = toRun((await tx.row("SELECT * FROM runs WHERE id = $1", [id]))!);
    announce(tx, run);
    return run;
  });
}

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
): Promise<FollowupRecord[] | undefined> {
  return db.tx(async (tx) => {
    const row = await tx.row(
      "UPDATE runs SET agent_started = 1 WHERE id = $1 AND worker_id = $2 AND state = 'INPROGRESS' RETURNING execution",
      [runId, workerId],
    );
    return row ? takePending(tx, runId, Number(row.execution)) : undefined;
  });
}

export async function finishExecution(
  db: Database,
  runId: string,
  workerId: string,
  trigger: "succeed" | "fail" | "error" | "block",
  patch: RunPatch,
): Promise<{ run?: RunRecord; pending: FollowupRecord[] }> {
  return db.tx(async (tx): Promise<{ run?: RunRecord; pending: FollowupRecord[] }> => {
    // The lock holds off a follow-up (it locks the run too) until this execution has ended or taken it.
    const owner = await tx.row(
      "SELECT execution FROM runs WHERE id = $1 AND worker_id = $2 AND state = 'INPROGRESS' FOR UPDATE",
      [runId, workerId],
    );
    if (!owner) return { pending: [] };
    const pending = await takePending(tx, runId, Number(owner.execution));
    if (pending.length > 0) return { pending };
    const run = await applyTransition(tx, runId, trigger, patch, workerId);
    if (run) announce(tx, run);
    return { run, pending };
  });
}

export async function recoverExpiredLeases(
  db: Database,
  maxResumes = DEFAULT_MAX_RESUMES,
): Promise<RunRecord[]> {
  return db.tx(async (tx) => {
    const now = Date.now();
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
