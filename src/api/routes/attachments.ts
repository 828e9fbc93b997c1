import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { ATTACHMENT_MIME_TYPES, type AttachmentInfo } from "../../model/attachment.ts";
import type { RunService } from "../../runs/run-service.ts";
import type { Store } from "../../store/store.ts";
import type { ArtifactLinks } from "../artifact-links.ts";
import { json, operation, route } from "../operation.ts";
import { ApiError } from "../problem.ts";
import { NoQuerySchema } from "../schemas/common.ts";
import { ListAttachmentsResponseSchema } from "../schemas/runs.ts";
import { contentDisposition, signedTeam } from "./artifacts.ts";

export interface AttachmentRoutesOptions {
  store: Pick<Store, "listAttachments" | "getAttachment" | "readAttachmentContent">;
  /** Whether the caller sees the run (RunAccess): a run outside their audience is an unknown one. */
  runService: Pick<RunService, "get">;
  /** Signs links of kind "attachment" with attachmentContentPath. */
  links: ArtifactLinks;
  /** Base of the signed links handed out; known only once the server listens when not configured. */
  publicUrl: () => string;
}

/** Where an attachment's bytes are served (with a signed query). */
export function attachmentContentPath(id: string): string {
  return `/api/v1/agent/attachments/${encodeURIComponent(id)}/content`;
}

export const attachmentOperations = {
  listHandoffAttachments: operation({
    id: "listHandoffAttachments",
    method: "GET",
    path: "/agent/runs/{runId}/handoff/attachments",
    tag: "runs",
    summary: "The run's image attachments (create and follow-ups), with signed download links",
    access: "key",
    query: NoQuerySchema,
    responses: {
      200: {
        description: "Oldest first; each download_url works without an API key until expires_at.",
        content: json(ListAttachmentsResponseSchema),
      },
    },
    errors: ["invalid_request", "resource_not_found"],
  }),
  getAttachmentContent: operation({
    id: "getAttachmentContent",
    method: "GET",
    path: "/agent/attachments/{attachmentId}/content",
    tag: "runs",
    summary: "An attachment's bytes, through a signed link (no API key)",
    access: "signed link",
    responses: {
      200: {
        description: "The image, inline (Content-Disposition names the file).",
        content: Object.fromEntries(
          ATTACHMENT_MIME_TYPES.map((type) => [type, z.string().meta({ format: "binary" })]),
        ),
      },
    },
    errors: ["not_authorized", "resource_not_found"],
  }),
};

/**
 * A run's image attachments: Oz's `GET /agent/runs/{runId}/handoff/attachments` lists them with signed,
 * expiring download links (as FILE artifacts get), and the link serves the bytes without an API key.
 */
export async function attachmentRoutes(app: FastifyInstance, opts: AttachmentRoutesOptions): Promise<void> {
  const { store, links, publicUrl } = opts;

  route(app, attachmentOperations.listHandoffAttachments, async (req) => {
    const teamId = req.caller!.team.id;
    await opts.runService.get(req.caller!, req.params.runId);
    const base = publicUrl();
    const attachments = await store.listAttachments(teamId, req.params.runId);
    return { attachments: attachments.map((a) => listed(a, links.sign(base, teamId, a.id))) };
  });

  // The signed link: no API key, so the signature is checked before anything is read.
  route(app, attachmentOperations.getAttachmentContent, async (req, reply) => {
    const id = req.params.attachmentId;
    const team = signedTeam(links, id, req.query, "GET /api/v1/agent/runs/{runId}/handoff/attachments");
    const attachment = await store.getAttachment(team, id);
    const content = attachment && (await store.readAttachmentContent(team, id));
    if (!attachment || !content) throw new ApiError("resource_not_found", `no attachment ${id}`);
    // Inline, so that the session page can show it; the type was sniffed at upload and is never SVG.
    return reply
      .header("content-type", attachment.mimeType)
      .header("content-disposition", contentDisposition(attachment.fileName, "inline"))
      .header("cache-control", "private, no-store")
      .header("x-content-type-options", "nosniff")
      .header("content-security-policy", "default-src 'none'; sandbox")
      .send(Buffer.from(content.buffer, content.byteOffset, content.byteLength));
  });
}

function listed(
  a: AttachmentInfo,
  link: { url: string; expiresAt: string },
): z.input<typeof ListAttachmentsResponseSchema>["attachments"][number] {
  return {
    attachment_id: a.id,
    download_url: link.url,
    filename: a.fileName,
    mime_type: a.mimeType,
    expires_at: link.expiresAt,
    size_bytes: a.sizeBytes,
    followup_id: a.followupId,
    created_at: a.createdAt,
  };
}
