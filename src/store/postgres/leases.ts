import type { FollowupRecord, RunRecord } from "../../model/run.ts";
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
 * The oldest QUEUED run becomes this worker's in one statement. SKIP LOCKED lets workers on every replica
 * claim at once: each takes the oldest run nobody else is taking, and none waits for another's commit.
 */
export async function claimNextRun(
  db: Database,
  workerId: string,
  leaseMs: number,
): Promise<RunRecord | undefined> {
  return db.tx(async (tx) => {
    const now = Date.now();
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
  trigger: "succeed" | "fail" | "error",
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

export async function recoverExpiredLeases(db: Database): Promise<RunRecord[]> {
  return db.tx(async (tx) => {
    // Runs another replica is recovering (or whose worker is renewing right now) are skipped, not waited for.
    const expired = await tx.rows(
      `SELECT id, agent_started, requeue_count FROM runs
        WHERE state = 'INPROGRESS' AND lease_expires_at < $1
        ORDER BY id FOR UPDATE SKIP LOCKED`,
      [iso(Date.now())],
    );
    const out: RunRecord[] = [];
    for (const row of expired) {
      const id = String(row.id);
      const run =
        Number(row.agent_started) === 0 && Number(row.requeue_count) === 0
          ? await applyTransition(tx, id, "requeue", {
              eventData: { reason: "lease expired before the agent started" },
            })
          : await abandon(tx, id, undefined, {
              message: "The worker running this run was lost (its lease expired).",
              error_code: "worker_lost",
              retryable: true,
            });
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
): Promise<void> {
  await db.changes("UPDATE runs SET request_usage = $1 WHERE id = $2", [JSON.stringify(usage), runId]);
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

export async function abandonRun(
  db: Database,
  runId: string,
  workerId: string,
  statusMessage: NonNullable<RunRecord["statusMessage"]>,
): Promise<RunRecord | undefined> {
  return db.tx(async (tx) => {
    const run = await abandon(tx, runId, workerId, statusMessage);
    if (run) announce(tx, run);
    return run;
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
