import { z } from "zod";
import { Timestamp } from "./common.ts";

/** FILE artifacts of runs (the delivered patch). */

export const FileArtifactResponseSchema = z
  .object({
    artifact_uid: z.string(),
    artifact_type: z.literal("FILE"),
    created_at: Timestamp,
    data: z.object({
      download_url: z.string().meta({ description: "Signed link to the bytes; works without an API key." }),
      expires_at: Timestamp.meta({ description: "When download_url stops working (15 minutes)." }),
      content_type: z.string(),
      filepath: z.string(),
      filename: z.string(),
      size_bytes: z.number().int(),
      description: z.string().optional().meta({ description: 'The diff stat, e.g. "+2 −1 in 2 files".' }),
    }),
  })
  .meta({ id: "FileArtifactResponse" });

/**
 * The query of a signed link to an artifact's or an attachment's bytes (ArtifactLinks.sign); a link that
 * does not check out is a 403, not a 400.
 */
export const SignedLinkQuerySchema = z.strictObject({
  team: z.string().min(1),
  expires: z.string(),
  signature: z.string(),
});
