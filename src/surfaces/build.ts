import type { FastifyInstance } from "fastify";
import type { RunAccess } from "../access/run-access.ts";
import type { Surface, SurfaceContext, SurfaceDefinition } from "./surface.ts";

/**
 * Builds every configured surface the same way: loads its folder, mounts its inbound routes (before the
 * server listens) and registers its threads' audience with the access rule. Starting and stopping them is
 * the caller's, around the server's life.
 */
export async function buildSurfaces(
  definitions: readonly SurfaceDefinition[],
  ctx: SurfaceContext,
  server: FastifyInstance,
  access: RunAccess,
): Promise<Map<string, Surface>> {
  const surfaces = new Map<string, Surface>();
  for (const definition of definitions) {
    if (!definition.configured(ctx.config)) continue;
    const surface = await (await definition.load()).createSurface(ctx);
    surfaces.set(surface.platform, surface);
    surface.inbound?.register(server);
    if (surface.audience) access.register(surface.audience);
  }
  return surfaces;
}
