import type { AttachmentInfo, NewAttachment } from "../../model/attachment.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";

/**
 * Image attachments of runs and follow-ups. The bytes are stored as artifact_files stores a patch (a BLOB
 * in the database, so they are as durable as the run), but once per SHA-256 in attachment_blobs.
 */

/**
 * Stores attachments inside the caller's transaction (the run's create or the follow-up's insert), so a
 * run is never acknowledged without them.
 */
export function insertAttachments(
  db: Database,
  at: { runId: string; teamId: string; followupId: string | null; createdAt: string },
  attachments: readonly NewAttachment[],
): void {
  for (const [position, a] of attachments.entries()) {
    db.sql(
      "INSERT INTO attachment_blobs (sha256, size_bytes, content) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING",
    ).run(a.sha256, a.content.length, a.content);
    db.sql(
      `INSERT INTO run_attachments (id, run_id, team_id, followup_id, position, file_name, mime_type, sha256, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(a.id, at.runId, at.teamId, at.followupId, position, a.fileName, a.mimeType, a.sha256, at.createdAt);
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
  const rows = db
    .sql(`SELECT ${COLUMNS} WHERE a.run_id = ? AND a.team_id = ? ${IN_ORDER}`)
    .all(runId, teamId) as Row[];
  return rows.map(toAttachment);
}

/** listAttachments of a run the caller holds, inside its step (the agent's start): its attachments are its team's. */
export function listOfRun(db: Database, runId: string): AttachmentInfo[] {
  return (db.sql(`SELECT ${COLUMNS} WHERE a.run_id = ? ${IN_ORDER}`).all(runId) as Row[]).map(toAttachment);
}

export async function getAttachment(
  db: Database,
  teamId: string,
  id: string,
): Promise<AttachmentInfo | undefined> {
  const row = db.sql(`SELECT ${COLUMNS} WHERE a.id = ? AND a.team_id = ?`).get(id, teamId) as Row | undefined;
  return row ? toAttachment(row) : undefined;
}

export async function readAttachmentContent(
  db: Database,
  teamId: string,
  id: string,
): Promise<Uint8Array | undefined> {
  const row = db
    .sql(
      `SELECT b.content FROM run_attachments a JOIN attachment_blobs b ON b.sha256 = a.sha256
        WHERE a.id = ? AND a.team_id = ?`,
    )
    .get(id, teamId) as Row | undefined;
  return row ? (row.content as Uint8Array) : undefined;
}

function toAttachment(row: Row): AttachmentInfo {
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
