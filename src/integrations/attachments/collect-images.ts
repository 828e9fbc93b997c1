import { ATTACHMENT_MIME_TYPES, MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS } from "../../model/attachment.ts";
import type { AttachmentInput } from "../../runs/attachments.ts";
import type { DownloadResult } from "./bounded-download.ts";

/**
 * Turns the files of a Slack message or the images of a GitHub comment into a run's attachments, within
 * the limits the API has (docs/api.md: at most MAX_ATTACHMENTS JPEG/PNG/GIF/WebP images of
 * at most 5 MB each). What cannot be attached is never dropped silently: each such file gets a sentence
 * naming it, for the platform to post where the request was made. The run still starts (or the follow-up
 * is still sent) with the images that could be attached.
 */

/** One file the message carries. */
export interface ImageCandidate {
  /** How people know it: the Slack file's name, a GitHub image's alt text or URL. */
  label: string;
  /** The attachment's file name; the extension of the sniffed type is added when it has none. */
  fileName: string;
  /** The type the platform declares before any download (Slack does): refused early when not an image. */
  declaredType?: string;
  /** The size the platform declares before any download: refused early when over the limit. */
  declaredSize?: number;
  /** Set when the caller refuses it already (a host that is not the platform's): the sentence's end. */
  refused?: string;
  download: () => Promise<DownloadResult>;
}

export interface CollectedImages {
  attachments: AttachmentInput[];
  /** One sentence per file (or group of files) not attached, naming them. */
  notes: string[];
}

/** How a platform writes a file's name in a sentence (inline code on both, escaped its own way). */
export type NameFormatter = (label: string) => string;

const ALLOWED_WORDS = "JPEG, PNG, GIF or WebP";
const EXTENSIONS: Record<string, string> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
};
/** What file-type reports for the allowed types (an animated PNG is still a PNG). */
const SNIFFED: Record<string, string> = { ...Object.fromEntries(ATTACHMENT_MIME_TYPES.map((t) => [t, t])) };
SNIFFED["image/apng"] = "image/png";
const MB = MAX_ATTACHMENT_BYTES / (1024 * 1024);

export async function collectImages(
  candidates: readonly ImageCandidate[],
  name: NameFormatter,
): Promise<CollectedImages> {
  const attachments: AttachmentInput[] = [];
  const notes: string[] = [];
  const overflow: string[] = [];
  for (const c of candidates) {
    const refusal = early(c);
    if (refusal) {
      notes.push(`${name(c.label)} ${refusal}`);
      continue;
    }
    // Counted before downloading: files past the limit are not fetched at all.
    if (attachments.length >= MAX_ATTACHMENTS) {
      overflow.push(name(c.label));
      continue;
    }
    const got = await c.download();
    if (!got.ok) {
      notes.push(`${name(c.label)} ${downloadFailure(got)}`);
      continue;
    }
    // file-type is loaded by the first attachment, not at start.
    const { fileTypeFromBuffer } = await import("file-type");
    const sniffed = await fileTypeFromBuffer(got.bytes);
    const mime = sniffed ? SNIFFED[sniffed.mime] : undefined;
    if (!mime) {
      notes.push(
        `${name(c.label)} is ${sniffed ? `a ${sniffed.mime} file` : "not an image"}, so it was not attached (only ${ALLOWED_WORDS} images can be).`,
      );
      continue;
    }
    attachments.push({
      file_name: withExtension(c.fileName, mime),
      mime_type: mime,
      data: Buffer.from(got.bytes).toString("base64"),
    });
  }
  if (overflow.length > 0) {
    notes.push(
      `Only ${MAX_ATTACHMENTS} images can be attached to one message, so ${overflow.join(", ")} ${overflow.length === 1 ? "was" : "were"} not attached.`,
    );
  }
  return { attachments, notes };
}

/** Why a file is refused before it is downloaded, from what the platform declares. */
function early(c: ImageCandidate): string | undefined {
  if (c.refused) return c.refused;
  const type = c.declaredType?.toLowerCase();
  if (type !== undefined && !type.startsWith("image/")) {
    return `is not an image, so it was not attached (only ${ALLOWED_WORDS} images can be).`;
  }
  if (type !== undefined && !SNIFFED[type]) {
    return `is a ${type} image, so it was not attached (only ${ALLOWED_WORDS} images can be).`;
  }
  if (c.declaredSize !== undefined && c.declaredSize > MAX_ATTACHMENT_BYTES) {
    return `is over ${MB} MB, so it was not attached.`;
  }
  return undefined;
}

function downloadFailure(got: Exclude<DownloadResult, { ok: true }>): string {
  switch (got.reason) {
    case "too_large":
      return `is over ${MB} MB, so it was not attached.`;
    case "not_allowed":
      return "redirected to a host it may not be downloaded from, so it was not attached.";
    case "http":
      return `could not be downloaded (HTTP ${got.status}), so it was not attached.`;
    case "failed":
      return `could not be downloaded (${got.message}), so it was not attached.`;
  }
}

/** A safe, bounded file name ending in the extension of its real type. */
function withExtension(fileName: string, mime: string): string {
  const ext = EXTENSIONS[mime]!;
  const clean =
    fileName
      .replace(/[\p{Cc}/\\]+/gu, "_")
      .trim()
      .slice(0, 200) || "image";
  const known = Object.values(EXTENSIONS).concat("jpeg");
  const dot = clean.lastIndexOf(".");
  return dot > 0 && known.includes(clean.slice(dot + 1).toLowerCase()) ? clean : `${clean}.${ext}`;
}
