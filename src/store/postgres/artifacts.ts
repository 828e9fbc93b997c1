import type { Artifact, RunRecord } from "../../model/run.ts";
import { iso, toRun } from "../rows.ts";
import { ARTIFACT_HEAD_BYTES, type ArtifactFile, type ArtifactHead, type NewArtifactFile } from "../store.ts";
import type { Database } from "./database.ts";
import { insertEvent } from "./events.ts";
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
  return db.tx(async (tx) => {
    const row = await tx.row("SELECT * FROM runs WHERE id = $1 FOR UPDATE", [runId]);
    if (!row) return undefined;
    const current = toRun(row);
    const at = iso(Date.now());
    const artifacts = withArtifact(current.artifacts, artifact);
    await tx.changes("UPDATE runs SET artifacts = $1, updated_at = $2 WHERE id = $3", [
      JSON.stringify(artifacts),
      at,
      runId,
    ]);
    if (file) {
      await tx.changes(
        `INSERT INTO artifact_files (uid, run_id, team_id, created_at, content_type, size_bytes, content)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          file.uid,
          runId,
          current.teamId,
          artifact.created_at,
          file.contentType,
          file.content.length,
          Buffer.from(file.content.buffer, file.content.byteOffset, file.content.byteLength),
        ],
      );
      const head = file.content.subarray(0, ARTIFACT_HEAD_BYTES);
      await tx.changes("INSERT INTO artifact_heads (uid, head) VALUES ($1, $2)", [
        file.uid,
        Buffer.from(head.buffer, head.byteOffset, head.byteLength),
      ]);
    }
    await insertEvent(tx, runId, "artifact", { ...artifact }, at);
    const run = { ...current, artifacts, updatedAt: at };
    announce(tx, run);
    return run;
  });
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
  const row = await db.row(
    `SELECT uid, run_id, created_at, content_type, size_bytes FROM artifact_files
      WHERE uid = $1 AND team_id = $2`,
    [uid, teamId],
  );
  if (!row) return undefined;
  const run = await readRun(db, String(row.run_id));
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
  const row = await db.row("SELECT content FROM artifact_files WHERE uid = $1 AND team_id = $2", [
    uid,
    teamId,
  ]);
  return row ? (row.content as Buffer) : undefined;
}

export async function readArtifactHead(
  db: Database,
  teamId: string,
  uid: string,
  maxBytes: number,
): Promise<ArtifactHead | undefined> {
  const row = await db.row(
    `SELECT substring(h.head FROM 1 FOR $1) AS head, f.size_bytes FROM artifact_files f
       JOIN artifact_heads h ON h.uid = f.uid
      WHERE f.uid = $2 AND f.team_id = $3`,
    [Math.min(maxBytes, ARTIFACT_HEAD_BYTES), uid, teamId],
  );
  return row ? { head: row.head as Buffer, sizeBytes: Number(row.size_bytes) } : undefined;
}

export async function recordAgentConfig(
  db: Database,
  runId: string,
  workerId: string,
  agentConfig: RunRecord["agentConfig"],
): Promise<boolean> {
  return db.tx(async (tx) => {
    const changed = await tx.changes(
      `UPDATE runs SET agent_config = $1, updated_at = $2
        WHERE id = $3 AND worker_id = $4 AND state = 'INPROGRESS'`,
      [JSON.stringify(agentConfig), iso(Date.now()), runId, workerId],
    );
    if (changed === 1) tx.signal("run_changed", runId);
    return changed === 1;
  });
}

export async function recordBudget(
  db: Database,
  runId: string,
  workerId: string,
  budget: NonNullable<RunRecord["budget"]>,
): Promise<boolean> {
  return db.tx(async (tx) => {
    const changed = await tx.changes(
      `UPDATE runs SET budget = $1, updated_at = $2
        WHERE id = $3 AND worker_id = $4 AND state = 'INPROGRESS'`,
      [JSON.stringify(budget), iso(Date.now()), runId, workerId],
    );
    if (changed === 1) tx.signal("run_changed", runId);
    return changed === 1;
  });
}
