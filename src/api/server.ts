import { randomUUID } from "node:crypto";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { RunError } from "../model/errors.ts";
import type { Caller } from "../model/identity.ts";
import type { RunService } from "../runs/run-service.ts";
import { registerSessionPage } from "../web/session-page.ts";
import { Authenticator } from "./auth.ts";
import type { Metrics } from "./metrics.ts";
import { ApiError, codeForStatus, httpOf, problemBody } from "./problem.ts";
import { RateLimiter } from "./rate-limit.ts";
import { registerRunRoutes } from "./routes/runs.ts";
import { registerSystemRoutes } from "./routes/system.ts";
import { LIMITS } from "./schemas.ts";

declare module "fastify" {
  interface FastifyRequest {
    caller?: Caller;
  }
  interface FastifyContextConfig {
    /** Route needs an API key (everything under /api/v1 but the OpenAPI document). */
    auth?: boolean;
  }
}

export interface ServerDeps {
  runService: RunService;
  metrics: Metrics;
  logger: Logger;
  rateLimit: { perMinute: number; burst: number };
  /** Base for session links; known only once the server listens when not configured. */
  publicUrl: () => string;
  /** False while shutting down: /readyz answers 503 and new API calls get resource_unavailable. */
  isAccepting: () => boolean;
}

export function buildServer(deps: ServerDeps): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: LIMITS.bodyBytes,
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && /^[A-Za-z0-9._-]{1,128}$/.test(given) ? given : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    frameworkErrors: (_err, req, reply) => {
      sendProblem(
        reply,
        req,
        new ApiError(
          "invalid_request",
          "the URL is not valid: bad percent-encoding or a path segment over 500 characters",
        ),
      );
    },
    // Event streams never go idle; closing must not wait for their clients to hang up.
    forceCloseConnections: true,
  }) as unknown as FastifyInstance;

  // Only JSON bodies are accepted on the API (415 for anything else); Fastify also parses text/plain by default.
  app.removeContentTypeParser("text/plain");

  const routes: Array<{ method: string; pattern: RegExp }> = [];
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const pattern = new RegExp(`^${route.url.replace(/:[^/]+/g, "[^/]+").replace(/\*/g, ".*")}/?$`);
    for (const method of methods) routes.push({ method, pattern });
  });

  const limiter = new RateLimiter(deps.rateLimit.perMinute, deps.rateLimit.burst);
  const authenticator = new Authenticator(deps.runService.store);
  app.addHook("onRequest", async (req, reply) => {
    reply.header("x-request-id", req.id);
    if (!req.routeOptions.config.auth) return;
    if (!deps.isAccepting()) {
      throw new ApiError("resource_unavailable", "the server is shutting down; retry shortly", {
        "retry-after": "5",
      });
    }
    req.caller = await authenticator.authenticate(req);
    const wait = limiter.take(req.caller.key.id);
    if (wait > 0) {
      throw new ApiError("rate_limited", `over this key's rate limit; retry in ${wait} s`, {
        "retry-after": String(wait),
      });
    }
    if (req.method !== "GET" && req.method !== "HEAD" && req.caller.key.role === "read") {
      throw new ApiError(
        "not_authorized",
        "this API key is read-only; use a member key to create or change runs",
      );
    }
  });

  app.addHook("onResponse", async (req, reply) => {
    const route = req.routeOptions.url ?? "unmatched";
    deps.metrics.httpRequests.inc({ method: req.method, route, status: String(reply.statusCode) });
    deps.metrics.httpDuration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
  });

  app.setErrorHandler((err: unknown, req, reply) => {
    if (err instanceof RunError) return sendProblem(reply, req, err);
    const e = err as { statusCode?: number; code?: string; message?: string };
    const status = e.statusCode;
    if (status && status >= 400 && status < 500) {
      const code = codeForStatus(status);
      const detail =
        code === "unsupported_media_type"
          ? `send the body as application/json (got ${req.headers["content-type"] ?? "no Content-Type"})`
          : code === "payload_too_large"
            ? `the body is over ${LIMITS.bodyBytes} bytes`
            : `body: ${e.message ?? "malformed request"}`;
      return sendProblem(reply, req, new ApiError(code, detail));
    }
    const storeFault = deps.runService.store.classifyError(err);
    if (storeFault === "conflict") {
      return sendProblem(reply, req, new ApiError("conflict", "a concurrent change won; retry the request"));
    }
    if (storeFault === "unavailable") {
      req.log.error({ err, trace_id: req.id }, "database unavailable");
      return sendProblem(
        reply,
        req,
        new ApiError("resource_unavailable", "the database is unavailable; retry shortly", {
          "retry-after": "5",
        }),
      );
    }
    req.log.error({ err, trace_id: req.id }, "unhandled error");
    return sendProblem(reply, req, new ApiError("internal_error", "an unexpected error; it has been logged"));
  });

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split("?")[0] ?? "/";
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
    if (allowed.length > 0) {
      return sendProblem(
        reply,
        req,
        new ApiError("method_not_allowed", `${req.method} is not allowed here; use ${allowed.join(", ")}`, {
          allow: allowed.join(", "),
        }),
      );
    }
    return sendProblem(reply, req, new ApiError("resource_not_found", `no route ${req.method} ${path}`));
  });

  registerSystemRoutes(app, deps);
  registerRunRoutes(app, deps);
  registerSessionPage(app, deps);
  return app;
}

export function sendProblem(reply: FastifyReply, req: FastifyRequest, err: RunError): FastifyReply {
  const body = problemBody(err.code, req.url.split("?")[0] ?? "/", err.detail, req.id);
  const { status, headers } = httpOf(err);
  return reply.code(status).headers(headers).type("application/problem+json").send(JSON.stringify(body));
}
