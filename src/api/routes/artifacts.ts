import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import type { RunService } from "../../runs/run-service.ts";
import type { ArtifactFile, Store } from "../../store/store.ts";
import type { ArtifactLinks, SignedLink } from "../artifact-links.ts";
import { json, operation, route } from "../operation.ts";
import { ApiError } from "../problem.ts";
import { FileArtifactResponseSchema, SignedLinkQuerySchema } from "../schemas/artifacts.ts";
import { NoQuerySchema } from "../schemas/common.ts";

export interface ArtifactRoutesOptions {
  store: Pick<Store, "getArtifactFile" | "readArtifactContent">;
  /** Whether the caller sees the artifact's run (RunAccess): another audience's artifact is an unknown one. */
  runService: Pick<RunService, "get">;
  links: ArtifactLinks;
  /** Base of the signed links handed out; known only once the server listens when not configured. */
  publicUrl: () => string;
}

type Params = { Params: { artifactUid: string } };

export const artifactOperations = {
  getArtifact: operation({
    id: "getArtifact",
    method: "GET",
    path: "/agent/artifacts/{artifactUid}",
    tag: "artifacts",
    summary: "A FILE artifact of a run (the delivered patch), with a signed download link",
    access: "key",
    query: NoQuerySchema,
    responses: {
      200: {
        description: "The artifact; data.download_url works without an API key until data.expires_at.",
        content: json(FileArtifactResponseSchema),
      },
    },
    errors: ["invalid_request", "resource_not_found"],
  }),
  downloadArtifact: operation({
    id: "downloadArtifact",
    method: "GET",
    path: "/agent/artifacts/{artifactUid}/download",
    tag: "artifacts",
    summary: "Redirects to a signed link to the artifact's bytes (valid 15 minutes)",
    access: "key",
    query: NoQuerySchema,
    responses: {
      302: {
        description: "Location is the signed link (GET .../content?team=…&expires=…&signature=…).",
        headers: { Location: z.string() },
      },
    },
    errors: ["invalid_request", "resource_not_found"],
  }),
  getArtifactContent: operation({
    id: "getArtifactContent",
    method: "GET",
    path: "/agent/artifacts/{artifactUid}/content",
    tag: "artifacts",
    summary: "The artifact's bytes, through a signed link (no API key)",
    access: "signed link",
    responses: {
      200: {
        description: "The bytes, as an attachment (Content-Disposition) of the artifact's content type.",
        content: { "application/octet-stream": z.string().meta({ format: "binary" }) },
      },
    },
    errors: ["not_authorized", "resource_not_found"],
  }),
};

/**
 * FILE artifacts of runs (the delivered patch): the artifact with a signed download link, a redirect to
 * that link, and the link itself, which serves the bytes without an API key until it expires.
 */
export async function artifactRoutes(app: FastifyInstance, opts: ArtifactRoutesOptions): Promise<void> {
  const { store, links, publicUrl } = opts;
  const ops = artifactOperations;

  const find = async (teamId: string, uid: string): Promise<ArtifactFile> => {
    const file = await store.getArtifactFile(teamId, uid);
    if (!file) throw new ApiError("resource_not_found", `no artifact ${uid}`);
    return file;
  };
  /** The caller's artifact: of their team and of a run in their audience. */
  const findFor = async (req: FastifyRequest<Params>): Promise<ArtifactFile> => {
    const file = await find(req.caller!.team.id, req.params.artifactUid);
    try {
      await opts.runService.get(req.caller!, file.runId);
    } catch {
      throw new ApiError("resource_not_found", `no artifact ${req.params.artifactUid}`);
    }
    return file;
  };

  route(app, ops.getArtifact, async (req) => {
    const file = await findFor(req);
    return fileArtifactResponse(file, links.sign(publicUrl(), req.caller!.team.id, file.uid));
  });

  route(app, ops.downloadArtifact, async (req, reply) => {
    const file = await findFor(req);
    const link = links.sign(publicUrl(), req.caller!.team.id, file.uid);
    return reply.header("cache-control", "no-store").redirect(link.url, 302);
  });

  // The signed link: no API key, so the signature is checked before anything is read.
  route(app, ops.getArtifactContent, async (req, reply) => {
    const uid = req.params.artifactUid;
    const team = signedTeam(links, uid, req.query, "GET /api/v1/agent/artifacts/{artifactUid}/download");
    const file = await find(team, uid);
    const content = await store.readArtifactContent(team, uid);
    if (!content) throw new ApiError("resource_not_found", `no artifact ${uid}`);
    return reply
      .header("content-type", file.contentType)
      .header("content-disposition", contentDisposition(fileName(file)))
      .header("cache-control", "private, no-store")
      .header("x-content-type-options", "nosniff")
      .send(Buffer.from(content.buffer, content.byteOffset, content.byteLength));
  });
}

/**
 * The team a signed content link was issued for, once its signature and expiry check out (before anything
 * is read); otherwise a 403 saying where a fresh link comes from (`renewFrom`).
 */
export function signedTeam(links: ArtifactLinks, uid: string, query: unknown, renewFrom: string): string {
  const parsed = SignedLinkQuerySchema.safeParse(query ?? {});
  const verdict = parsed.success
    ? links.check(parsed.data.team, uid, parsed.data.expires, parsed.data.signature)
    : "invalid";
  if (verdict === "expired") {
    throw new ApiError("not_authorized", `this download link has expired; get a new one from ${renewFrom}`);
  }
  if (verdict !== "valid" || !parsed.success) {
    throw new ApiError("not_authorized", "this download link is not valid (altered or incomplete)");
  }
  return parsed.data.team;
}

function fileArtifactResponse(
  file: ArtifactFile,
  link: SignedLink,
): z.input<typeof FileArtifactResponseSchema> {
  const data = file.artifact.data;
  const description = data.description;
  return {
    artifact_uid: file.uid,
    artifact_type: "FILE",
    created_at: file.artifact.created_at,
    data: {
      download_url: link.url,
      expires_at: link.expiresAt,
      content_type: file.contentType,
      filepath: typeof data.filepath === "string" ? data.filepath : fileName(file),
      filename: fileName(file),
      size_bytes: file.sizeBytes,
      ...(typeof description === "string" ? { description } : {}),
    },
  };
}

function fileName(file: ArtifactFile): string {
  const { filename, filepath } = file.artifact.data;
  if (typeof filename === "string" && filename !== "") return filename;
  if (typeof filepath === "string" && filepath !== "") return filepath.split("/").at(-1) || "artifact";
  return "artifact";
}

/**
 * `attachment; filename="changes.patch"` (or `inline; …`), with an RFC 5987 form when the name is not plain
 * ASCII.
 */
export function contentDisposition(
  name: string,
  disposition: "attachment" | "inline" = "attachment",
): string {
  const plain = name.replace(/[^\x20-\x7e]|["\\]/g, "_");
  const header = `${disposition}; filename="${plain}"`;
  return plain === name ? header : `${header}; filename*=UTF-8''${encodeURIComponent(name)}`;
}
