import { createHash } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import {
  ATTACHMENT_MIME_TYPES,
  type AttachmentMimeType,
  MAX_ATTACHMENT_BYTES,
  MAX_ATTACHMENTS,
  type NewAttachment,
} from "../model/attachment.ts";
import { RunError } from "../model/errors.ts";

/** An attachment as a request gives it (API v1, Oz): base64 bytes with their name and type. */
export interface AttachmentInput {
  file_name: string;
  mime_type: string;
  data: string;
}

const ALLOWED = ATTACHMENT_MIME_TYPES.join(", ");
/** One character class, no groups: a 7 MB string must not make the regex engine recurse per character. */
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** What file-type reports for the allowed types (an animated PNG is still a PNG). */
const SNIFFED: Record<string, AttachmentMimeType> = {
  "image/jpeg": "image/jpeg",
  "image/png": "image/png",
  "image/apng": "image/png",
  "image/gif": "image/gif",
  "image/webp": "image/webp",
};

/**
 * Checks and decodes the attachments of a create or follow-up: at most MAX_ATTACHMENTS, each an allowed
 * image type, valid base64, at most MAX_ATTACHMENT_BYTES decoded, and bytes that really are the type named
 * (sniffed, never trusted). Every refusal names the file and what is allowed. `field` is where they were
 * given ("attachments").
 */
export async function decodeAttachments(
  given: readonly AttachmentInput[] | null | undefined,
  field = "attachments",
): Promise<NewAttachment[]> {
  if (!given || given.length === 0) return [];
  if (given.length > MAX_ATTACHMENTS) {
    throw invalid(`${field}: ${given.length} attachments given; at most ${MAX_ATTACHMENTS} are allowed`);
  }
  const out: NewAttachment[] = [];
  for (const [i, a] of given.entries()) {
    const where = `${field}.${i} (${JSON.stringify(a.file_name)})`;
    const declared = a.mime_type.trim().toLowerCase();
    if (!(ATTACHMENT_MIME_TYPES as readonly string[]).includes(declared)) {
      throw invalid(
        `${where}: mime_type ${JSON.stringify(a.mime_type)} is not allowed; send one of ${ALLOWED}`,
      );
    }
    // Line breaks are tolerated (some encoders wrap base64); anything else outside the alphabet is not.
    const data = a.data.replace(/[\r\n]/g, "");
    if (Math.floor((data.length * 3) / 4) - 2 > MAX_ATTACHMENT_BYTES) {
      throw invalid(`${where}: over ${MAX_ATTACHMENT_BYTES} bytes (5 MB) once decoded; send a smaller image`);
    }
    if (data.length % 4 !== 0 || !BASE64.test(data)) {
      throw invalid(
        `${where}: data is not valid base64 (standard alphabet, padded); encode the file's bytes as base64`,
      );
    }
    const content = new Uint8Array(Buffer.from(data, "base64"));
    if (content.length > MAX_ATTACHMENT_BYTES) {
      throw invalid(
        `${where}: ${content.length} bytes once decoded, over the ${MAX_ATTACHMENT_BYTES} bytes (5 MB) allowed; send a smaller image`,
      );
    }
    // file-type is loaded by the first attachment, not at start.
    const { fileTypeFromBuffer } = await import("file-type");
    const sniffed = await fileTypeFromBuffer(content);
    const actual = sniffed ? SNIFFED[sniffed.mime] : undefined;
    if (actual !== declared) {
      const what = sniffed ? `${sniffed.mime} data` : "not an image of a known type";
      throw invalid(
        `${where}: declared ${declared} but the bytes are ${what}; send ${ALLOWED} files with their true mime_type`,
      );
    }
    out.push({
      id: uuidv7(),
      fileName: a.file_name,
      mimeType: actual,
      sha256: createHash("sha256").update(content).digest("hex"),
      content,
    });
  }
  return out;
}

function invalid(message: string): RunError {
  return new RunError("invalid_request", message);
}
