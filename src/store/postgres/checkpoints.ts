import { toCheckpoint } from "../rows.ts";
import type { NewRunCheckpoint, RunCheckpoint } from "../store.ts";
import type { Database } from "./database.ts";

/**
 * The latest checkpoint of each run (docs/runtime.md#checkpoints). The write is fenced: one INSERT … SELECT
 * from the run's row as the worker holds it, so a worker that lost the run writes nothing. FOR SHARE waits
 * for a change of the run under way (the end of the execution, which drops the checkpoint; a claim by
 * another worker) and checks the row again once it committed, so none lands just after it.
 */

export async function saveCheckpoint(
  db: Database,
  runId: string,
  workerId: string,
  checkpoint: NewRunCheckpoint,
): Promise<boolean> {
  const snapshot = checkpoint.snapshot;
  const changed = await db.changes(
    `INSERT INTO run_checkpoints (run_id, execution, taken_at, worker_id, size_bytes, ref_sha, snapshot)
     SELECT id, execution, $1::text, worker_id, $2::bigint, $3::text, $4::bytea FROM runs
      WHERE id = $5 AND worker_id = $6 AND state = 'INPROGRESS' FOR SHARE
     ON CONFLICT (run_id) DO UPDATE SET execution = excluded.execution, taken_at = excluded.taken_at,
       worker_id = excluded.worker_id, size_bytes = excluded.size_bytes, ref_sha = excluded.ref_sha,
       snapshot = excluded.snapshot`,
    [
      checkpoint.takenAt,
      checkpoint.sizeBytes,
      checkpoint.refSha,
      Buffer.from(snapshot.buffer, snapshot.byteOffset, snapshot.byteLength),
      runId,
      workerId,
    ],
  );
  return changed === 1;
}

export async function holdsRun(db: Database, runId: string, workerId: string): Promise<boolean> {
  const row = await db.row(
    "SELECT 1 AS held FROM runs WHERE id = $1 AND worker_id = $2 AND state = 'INPROGRESS'",
    [runId, workerId],
  );
  return row !== undefined;
}

export async function loadCheckpoint(db: Database, runId: string): Promise<RunCheckpoint | undefined> {
  const row = await db.row(
    `SELECT run_id, execution, taken_at, worker_id, size_bytes, ref_sha, snapshot
       FROM run_checkpoints WHERE run_id = $1`,
    [runId],
  );
  return row ? toCheckpoint(row) : undefined;
}

export async function deleteCheckpoint(db: Database, runId: string): Promise<void> {
  await db.changes("DELETE FROM run_checkpoints WHERE run_id = $1", [runId]);
}

export async function pruneCheckpoints(db: Database, finishedBefore: string): Promise<number> {
  return db.changes(
    `DELETE FROM run_checkpoints WHERE run_id IN (
       SELECT id FROM runs WHERE state IN ('SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED') AND finished_at < $1)`,
    [finishedBefore],
  );
}
