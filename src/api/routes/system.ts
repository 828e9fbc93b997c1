import type { FastifyInstance } from "fastify";
import { buildOpenApiDocument } from "../openapi.ts";
import { ApiError } from "../problem.ts";
import type { ServerDeps } from "../server.ts";

export function registerSystemRoutes(app: FastifyInstance, deps: ServerDeps): void {
  const openapi = JSON.stringify(buildOpenApiDocument());

  app.get("/healthz", async () => ({ status: "ok" }));

  app.get("/readyz", async () => {
    if (!deps.isAccepting()) {
      throw new ApiError("resource_unavailable", "shutting down", { "retry-after": "5" });
    }
    try {
      await deps.runService.store.ping();
    } catch {
      throw new ApiError("resource_unavailable", "the database is not reachable", { "retry-after": "5" });
    }
    return { status: "ready" };
  });

  app.get("/metrics", async (_req, reply) => {
    reply.type(deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });

  app.get("/api/v1/openapi.json", async (_req, reply) => reply.type("application/json").send(openapi));
}
