import type { FastifyInstance } from "fastify";
import type { RunService } from "../../runs/run-service.ts";
import type { Metrics } from "../metrics.ts";
import { buildOpenApiDocument } from "../openapi.ts";
import { ApiError } from "../problem.ts";

export interface SystemRoutesOptions {
  /** /readyz is ready only while the run service's store answers. */
  runService: Pick<RunService, "ping">;
  metrics: Pick<Metrics, "registry">;
  /** False while shutting down: /readyz answers 503. */
  isAccepting: () => boolean;
}

/** Health, readiness, Prometheus metrics and the OpenAPI document: the routes that need no API key. */
export async function systemRoutes(app: FastifyInstance, opts: SystemRoutesOptions): Promise<void> {
  const openapi = JSON.stringify(buildOpenApiDocument());

  app.get("/healthz", async () => ({ status: "ok" }));

  app.get("/readyz", async () => {
    if (!opts.isAccepting()) {
      throw new ApiError("resource_unavailable", "shutting down", { "retry-after": "5" });
    }
    try {
      await opts.runService.ping();
    } catch {
      throw new ApiError("resource_unavailable", "the database is not reachable", { "retry-after": "5" });
    }
    return { status: "ready" };
  });

  app.get("/metrics", async (_req, reply) => {
    reply.type(opts.metrics.registry.contentType);
    return opts.metrics.registry.metrics();
  });

  app.get("/api/v1/openapi.json", async (_req, reply) => reply.type("application/json").send(openapi));
}
