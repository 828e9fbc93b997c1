/** Image attachments of runs and follow-ups (docs/api.md). */

/** The image types a run accepts; the decoded bytes must really be of the type given. */
export const ATTACHMENT_MIME_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"] as const;
export type AttachmentMimeType = (typeof ATTACHMENT_MIME_TYPES)[number];

/** At most this many attachments per create and per follow-up. */
export const MAX_ATTACHMENTS = 5;
/** The most one attachment may hold once decoded: 5 MB (MiB). */
export const MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024;

/** An attachment checked and decoded, ready to be stored with its run or follow-up. */
export interface NewAttachment {
  id: string;
  fileName: string;
  mimeType: AttachmentMimeType;
  /** Hex SHA-256 of `content`: equal bytes are stored once. */
  sha256: string;
  content: Uint8Array;
}

/** A stored attachment, without its bytes. */
export interface AttachmentInfo {
  id: string;
  runId: string;
  /** The follow-up it came with; null when it came with the run's create. */
  followupId: string | null;
  fileName: string;
  mimeType: string;
  sizeBytes: number;
  sha256: string;
  createdAt: string;
}

/** The data of a `followup` event names the follow-up's attachments, so transcripts show them. */
export function attachmentSummary(a: Pick<NewAttachment, "id" | "fileName" | "mimeType" | "content">) {
  return { attachment_id: a.id, file_name: a.fileName, mime_type: a.mimeType, size_bytes: a.content.length };
}

/**
 * The body a create or follow-up with attachments may reach: MAX_ATTACHMENTS images as base64 (4 bytes
 * per 3, plus 5% for encoders that escape "/" as "\/") on top of the 1 MB every other body is allowed.
 */
export function attachmentBodyLimit(otherBytes: number): number {
  const base64 = Math.ceil(MAX_ATTACHMENT_BYTES / 3) * 4;
  return otherBytes + Math.ceil(MAX_ATTACHMENTS * base64 * 1.05);
}

/** A stored attachment with its bytes, as a harness receives it. */
export interface AttachmentContent extends AttachmentInfo {
  content: Uint8Array;
}
