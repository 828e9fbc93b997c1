import type { AttachmentInfo, NewAttachment } from "../../model/attachment.ts";
import type { Database, Row, Tx } from "./database.ts";

/**
 * Image attachments of runs and follow-ups. The bytes are stored as artifact_files stores a patch (bytea
 * in the database, so they are as durable as the run), but once per SHA-256 in attachment_blobs.
 */

/**
 * Stores attachments inside the caller's transaction (the run's create or the follow-up's insert), so a
 * run is never acknowledged without them. Two transactions storing the same new bytes at once both
 * succeed: the second waits on the first's blob row and then skips it.
 */
export async function insertAttachments(
  tx: Tx,
  at: { runId: string; teamId: string; followupId: string | null; createdAt: string },
  attachments: readonly NewAttachment[],
): Promise<void> {
  for (const [position, a] of attachments.entries()) {
    await tx.changes(
      "INSERT INTO attachment_blobs (sha256, size_bytes, content) VALUES ($1, $2, $3) ON CONFLICT (sha256) DO NOTHING",
      [a.sha256, a.content.length, Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength)],
    );
    await tx.changes(
      `INSERT INTO run_attachments (id, run_id, team_id, followup_id, position, file_name, mime_type, sha256, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [a.id, at.runId, at.teamId, at.followupId, position, a.fileName, a.mimeType, a.sha256, at.createdAt],
    );
  }
}

const COLUMNS = `a.id, a.run_id, a.followup_id, a.file_name, a.mime_type, a.sha256, a.created_at, b.size_bytes
  FROM run_attachments a JOIN attachment_blobs b ON b.sha256 = a.sha256`;

const IN_ORDER = "ORDER BY a.created_at, a.position";

export async function listAttachments(
  db: Database,
  teamId: string,
  runId: string,
): Promise<AttachmentInfo[]> {
  const rows = await db.rows(`SELECT ${COLUMNS} WHERE a.run_id = $1 AND a.team_id = $2 ${IN_ORDER}`, [
    runId,
    teamId,
  ]);
  return rows.map(toAttachment);
}

/**
 * listAttachments of a run the caller holds, as a statement written with others in one transaction (the
 * agent's start): no team to check, the run's attachments are its team's. `toAttachment` reads its rows.
 */
export function listOfRun(runId: string): [string, unknown[]] {
  return [`SELECT ${COLUMNS} WHERE a.run_id = $1 ${IN_ORDER}`, [runId]];
}

export async function getAttachment(
  db: Database,
  teamId: string,
  id: string,
): Promise<AttachmentInfo | undefined> {
  const row = await db.row(`SELECT ${COLUMNS} WHERE a.id = $1 AND a.team_id = $2`, [id, teamId]);
  return row ? toAttachment(row) : undefined;
}

export async function readAttachmentContent(
  db: Database,
  teamId: string,
  id: string,
): Promise<Uint8Array | undefined> {
  const row = await db.row(
    `SELECT b.content FROM run_attachments a JOIN attachment_blobs b ON b.sha256 = a.sha256
      WHERE a.id = $1 AND a.team_id = $2`,
    [id, teamId],
  );
  return row ? (row.content as Buffer) : undefined;
}

export function toAttachment(row: Row): AttachmentInfo {
  return {
    id: String(row.id),
    runId: String(row.run_id),
    followupId: row.followup_id === null ? null : String(row.followup_id),
    fileName: String(row.file_name),
    mimeType: String(row.mime_type),
    sizeBytes: Number(row.size_bytes),
    sha256: String(row.sha256),
    createdAt: String(row.created_at),
  };
}
