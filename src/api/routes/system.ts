import { statfs } from "node:fs/promises";
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
  /** /readyz answers 503 while the data directory's filesystem has less than `minFreeBytes` free (0: never). */
  disk?: { dataDir: string; minFreeBytes: number };
  /** This process's roles and how each is doing; /readyz answers 503 until none is still `starting`. */
  roles?: () => Readonly<Record<string, string>>;
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
    if (opts.disk && opts.disk.minFreeBytes > 0)
      await checkFreeDisk(opts.disk.dataDir, opts.disk.minFreeBytes);
    const roles = opts.roles?.() ?? {};
    const starting = Object.keys(roles).filter((role) => roles[role] === "starting");
    if (starting.length > 0) {
      throw new ApiError("resource_unavailable", `still starting: ${starting.join(", ")}`, {
        "retry-after": "1",
      });
    }
    return { status: "ready", roles };
  });

  app.get("/metrics", async (_req, reply) => {
    reply.type(opts.metrics.registry.contentType);
    return opts.metrics.registry.metrics();
  });

  app.get("/api/v1/openapi.json", async (_req, reply) => reply.type("application/json").send(openapi));
}

/** Runs' workspaces and the database share the data directory's filesystem: refuse work before it fills. */
async function checkFreeDisk(dataDir: string, minFreeBytes: number): Promise<void> {
  const mb = (bytes: number) => Math.floor(bytes / 2 ** 20);
  let free: number;
  try {
    const fs = await statfs(dataDir);
    free = fs.bavail * fs.bsize;
  } catch {
    throw new ApiError("resource_unavailable", "the free space of the data directory cannot be read", {
      "retry-after": "60",
    });
  }
  if (free < minFreeBytes) {
    throw new ApiError(
      "resource_unavailable",
      `only ${mb(free)} MB free on the data directory's filesystem, below DISPATCH_MIN_FREE_DISK_MB=${mb(minFreeBytes)}; free disk space (finished runs' workspaces go after DISPATCH_WORKSPACE_RETENTION_HOURS) or lower the threshold`,
      { "retry-after": "60" },
    );
  }
}
