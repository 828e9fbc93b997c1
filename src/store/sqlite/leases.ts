import type { FollowupRecord, RunRecord } from "../../model/run.ts";
import { iso } from "../rows.ts";
import type { RunPatch } from "../store.ts";
import type { Database } from "./database.ts";
import { insertEvent } from "./events.ts";
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
  const run = await db.grouped(() => {
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
  });
  if (run) announce(db, run);
  return run;
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
): Promise<FollowupRecord[] | undefined> {
  return db.grouped(() => {
    const row = db
      .sql(
        "UPDATE runs SET agent_started = 1 WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS' RETURNING execution",
      )
      .get(runId, workerId) as Row | undefined;
    return row ? takePending(db, runId, Number(row.execution)) : undefined;
  });
}

export async function finishExecution(
  db: Database,
  runId: string,
  workerId: string,
  trigger: "succeed" | "fail" | "error",
  patch: RunPatch,
): Promise<{ run?: RunRecord; pending: FollowupRecord[] }> {
  const result = await db.grouped(() => {
    const owner = db
      .sql("SELECT execution FROM runs WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS'")
      .get(runId, workerId) as Row | undefined;
    if (!owner) return { pending: [] };
    const pending = takePending(db, runId, Number(owner.execution));
    if (pending.length > 0) return { pending };
    return { run: applyTransition(db, runId, trigger, patch, workerId), pending };
  });
  if (result.run) announce(db, result.run);
  return result;
}

export async function recoverExpiredLeases(db: Database): Promise<RunRecord[]> {
  const changed = await db.grouped(() => {
    const now = iso(Date.now());
    const expired = db
      .sql(
        "SELECT id, agent_started, requeue_count FROM runs WHERE state = 'INPROGRESS' AND lease_expires_at < ?",
      )
      .all(now) as Row[];
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
      const run = abandon(db, id, undefined, {
        message: "The worker running this run was lost (its lease expired).",
        error_code: "worker_lost",
        retryable: true,
      })!;
      out.push(run);
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
): Promise<void> {
  await db.grouped(() =>
    db.sql("UPDATE runs SET request_usage = ? WHERE id = ?").run(JSON.stringify(usage), runId),
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

export async function abandonRun(
  db: Database,
  runId: string,
  workerId: string,
  statusMessage: NonNullable<RunRecord["statusMessage"]>,
): Promise<RunRecord | undefined> {
  const run = await db.grouped(() => abandon(db, runId, workerId, statusMessage));
  if (run) announce(db, run);
  return run;
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
