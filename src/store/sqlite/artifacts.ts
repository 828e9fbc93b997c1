import type { Artifact, RunRecord } from "../../model/run.ts";
import { iso } from "../rows.ts";
import { ARTIFACT_HEAD_BYTES, type ArtifactFile, type ArtifactHead, type NewArtifactFile } from "../store.ts";
import type { Database } from "./database.ts";
import { insertEvent } from "./events.ts";
import type { Row } from "./rows.ts";
import { announce, readRun } from "./runs.ts";

/**
 * A run's artifacts: appended to runs.artifacts with an `artifact` event; FILE bytes in artifact_files,
 * and their first ARTIFACT_HEAD_BYTES again in artifact_heads, for pages that show only the start.
 */

export async function recordArtifact(
  db: Database,
  runId: string,
  artifact: Artifact,
  file?: NewArtifactFile,
): Promise<RunRecord | undefined> {
  const run = await db.grouped(() => {
    const current = readRun(db, runId);
    if (!current) return undefined;
    const at = iso(Date.now());
    const artifacts = withArtifact(current.artifacts, artifact);
    db.sql("UPDATE runs SET artifacts = ?, updated_at = ? WHERE id = ?").run(
      JSON.stringify(artifacts),
      at,
      runId,
    );
    if (file) {
      db.sql(
        `INSERT INTO artifact_files (uid, run_id, team_id, created_at, content_type, size_bytes, content)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        file.uid,
        runId,
        current.teamId,
        artifact.created_at,
        file.contentType,
        file.content.length,
        file.content,
      );
      db.sql("INSERT INTO artifact_heads (uid, head) VALUES (?, ?)").run(
        file.uid,
        file.content.subarray(0, ARTIFACT_HEAD_BYTES),
      );
    }
    insertEvent(db, runId, "artifact", { ...artifact }, at);
    return { ...current, artifacts, updatedAt: at };
  });
  if (run) announce(db, run);
  return run;
}

/**
 * A pull request is one artifact however often it is pushed to: a later record of the same PR (same
 * url) replaces the first in place, keeping its created_at. Anything else is appended.
 */
function withArtifact(artifacts: Artifact[], artifact: Artifact): Artifact[] {
  if (artifact.artifact_type === "PULL_REQUEST") {
    const i = artifacts.findIndex(
      (a) => a.artifact_type === "PULL_REQUEST" && a.data.url === artifact.data.url,
    );
    if (i >= 0) {
      const next = [...artifacts];
      next[i] = { ...artifact, created_at: artifacts[i]!.created_at };
      return next;
    }
  }
  return [...artifacts, artifact];
}

export async function getArtifactFile(
  db: Database,
  teamId: string,
  uid: string,
): Promise<ArtifactFile | undefined> {
  const row = db
    .sql(
      `SELECT uid, run_id, created_at, content_type, size_bytes FROM artifact_files
        WHERE uid = ? AND team_id = ?`,
    )
    .get(uid, teamId) as Row | undefined;
  if (!row) return undefined;
  const run = readRun(db, String(row.run_id));
  const artifact = run?.artifacts.find((a) => a.data.artifact_uid === uid);
  if (!run || !artifact) return undefined;
  return {
    uid,
    runId: run.id,
    artifact,
    contentType: String(row.content_type),
    sizeBytes: Number(row.size_bytes),
  };
}

export async function readArtifactContent(
  db: Database,
  teamId: string,
  uid: string,
): Promise<Uint8Array | undefined> {
  const row = db.sql("SELECT content FROM artifact_files WHERE uid = ? AND team_id = ?").get(uid, teamId) as
    | Row
    | undefined;
  return row ? (row.content as Uint8Array) : undefined;
}

/** Reads artifact_heads only: the size comes from artifact_files' columns before its content. */
export async function readArtifactHead(
  db: Database,
  teamId: string,
  uid: string,
  maxBytes: number,
): Promise<ArtifactHead | undefined> {
  const row = db
    .sql(
      `SELECT substr(h.head, 1, ?) AS head, f.size_bytes FROM artifact_files f
         JOIN artifact_heads h ON h.uid = f.uid
        WHERE f.uid = ? AND f.team_id = ?`,
    )
    .get(Math.min(maxBytes, ARTIFACT_HEAD_BYTES), uid, teamId) as Row | undefined;
  return row ? { head: row.head as Uint8Array, sizeBytes: Number(row.size_bytes) } : undefined;
}

export async function recordAgentConfig(
  db: Database,
  runId: string,
  workerId: string,
  agentConfig: RunRecord["agentConfig"],
): Promise<boolean> {
  const changed = await db.grouped(
    () =>
      Number(
        db
          .sql(
            `UPDATE runs SET agent_config = ?, updated_at = ?
              WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS'`,
          )
          .run(JSON.stringify(agentConfig), iso(Date.now()), runId, workerId).changes,
      ) === 1,
  );
  if (changed) db.signals.emit("run_changed", runId);
  return changed;
}

export async function recordBudget(
  db: Database,
  runId: string,
  workerId: string,
  budget: NonNullable<RunRecord["budget"]>,
): Promise<boolean> {
  const changed = await db.grouped(
    () =>
      Number(
        db
          .sql(
            `UPDATE runs SET budget = ?, updated_at = ?
              WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS'`,
          )
          .run(JSON.stringify(budget), iso(Date.now()), runId, workerId).changes,
      ) === 1,
  );
  if (changed) db.signals.emit("run_changed", runId);
  return changed;
}
