import { toCheckpoint } from "../rows.ts";
import type { NewRunCheckpoint, RunCheckpoint } from "../store.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";

/**
 * The latest checkpoint of each run (docs/runtime.md#checkpoints). The write is fenced: one INSERT … SELECT
 * from the run's row as the worker holds it, so a worker that lost the run writes nothing.
 */

export async function saveCheckpoint(
  db: Database,
  runId: string,
  workerId: string,
  checkpoint: NewRunCheckpoint,
): Promise<boolean> {
  return db.grouped(
    () =>
      Number(
        db
          .sql(
            `INSERT INTO run_checkpoints (run_id, execution, taken_at, worker_id, size_bytes, ref_sha, snapshot)
             SELECT id, execution, ?, worker_id, ?, ?, ? FROM runs
              WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS'
             ON CONFLICT (run_id) DO UPDATE SET execution = excluded.execution, taken_at = excluded.taken_at,
               worker_id = excluded.worker_id, size_bytes = excluded.size_bytes, ref_sha = excluded.ref_sha,
               snapshot = excluded.snapshot`,
          )
          .run(
            checkpoint.takenAt,
            checkpoint.sizeBytes,
            checkpoint.refSha,
            checkpoint.snapshot,
            runId,
            workerId,
          ).changes,
      ) === 1,
  );
}

export async function holdsRun(db: Database, runId: string, workerId: string): Promise<boolean> {
  const row = db
    .sql("SELECT 1 AS held FROM runs WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS'")
    .get(runId, workerId);
  return row !== undefined;
}

export async function loadCheckpoint(db: Database, runId: string): Promise<RunCheckpoint | undefined> {
  const row = db
    .sql(
      `SELECT run_id, execution, taken_at, worker_id, size_bytes, ref_sha, snapshot
         FROM run_checkpoints WHERE run_id = ?`,
    )
    .get(runId) as Row | undefined;
  return row ? toCheckpoint(row) : undefined;
}

export async function deleteCheckpoint(db: Database, runId: string): Promise<void> {
  await db.grouped(() => db.sql("DELETE FROM run_checkpoints WHERE run_id = ?").run(runId));
}

export async function pruneCheckpoints(db: Database, finishedBefore: string): Promise<number> {
  return db.grouped(() =>
    Number(
      db
        .sql(
          `DELETE FROM run_checkpoints WHERE run_id IN (
             SELECT id FROM runs WHERE state IN ('SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED') AND finished_at < ?)`,
        )
        .run(finishedBefore).changes,
    ),
  );
}
