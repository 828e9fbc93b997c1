import { createHash } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import type { AttachmentMimeType, NewAttachment } from "../../src/model/attachment.ts";

/** Real, tiny images (1×1 pixel): the server sniffs their bytes, so they must be genuine. */
export const PNG_1x1 = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64",
);
export const GIF_1x1 = Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64");

/** As the API takes it. */
export function wireAttachment(fileName: string, bytes: Buffer, mimeType = "image/png") {
  return { file_name: fileName, mime_type: mimeType, data: bytes.toString("base64") };
}

/** As the store takes it. */
export function newAttachment(
  fileName: string,
  bytes: Buffer,
  mimeType: AttachmentMimeType = "image/png",
): NewAttachment {
  return {
    id: uuidv7(),
    fileName,
    mimeType,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    content: new Uint8Array(bytes),
  };
}
