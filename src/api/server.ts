import { randomUUID } from "node:crypto";
import Fastify, { type FastifyInstance, type FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { RunError } from "../model/errors.ts";
import type { RunService } from "../runs/run-service.ts";
import { type ApiKeyLookup, Authenticator } from "./auth.ts";
import { clientErrorHandler, discardRefusedBody } from "./connection-errors.ts";
import { acceptJsonBodies } from "./json-body.ts";
import type { Metrics } from "./metrics.ts";
import { ApiError, codeForStatus, sendProblem } from "./problem.ts";
import { RateLimiter } from "./rate-limit.ts";
import { LIMITS } from "./schemas.ts";

const IDLE_CONNECTION_MS = 120_000;

export interface ServerDeps {
  apiKeys: ApiKeyLookup;
  /** Tells a storage fault (a concurrent change won, the database is down) from a bug. */
  runService: Pick<RunService, "classifyError">;
  metrics: Pick<Metrics, "httpRequests" | "httpDuration">;
  logger: Logger;
  rateLimit: { perMinute: number; burst: number };
  /** How long a request's headers and body may take to arrive, and how many sockets may be open at once. */
  http: { requestTimeoutMs: number; maxConnections: number };
  /** False while shutting down: new API calls get resource_unavailable. */
  isAccepting: () => boolean;
}

/**
 * The HTTP server's parts that every route shares: request ids, authentication and rate limits (for routes
 * with `config.auth`), metrics, and problem+json answers for errors, unknown routes and wrong methods. The
 * routes themselves are plugins that the caller registers.
 */
export function buildServer(deps: ServerDeps): FastifyInstance {
  const { requestTimeoutMs, maxConnections } = deps.http;
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: LIMITS.bodyBytes,
    // A client that trickles its headers or body is answered 408 and disconnected. The timer stops once
    // the request has arrived: an event stream's response may last as long as its client reads it.
    requestTimeout: requestTimeoutMs,
    http: {
      requestTimeout: requestTimeoutMs,
      headersTimeout: requestTimeoutMs,
      // Node looks for late requests this often (30 s by default, longer than short timeouts).
      connectionsCheckingInterval: Math.min(5_000, Math.max(25, Math.floor(requestTimeoutMs / 4))),
    },
    // A socket on which nothing moves this long is closed: longer than the event streams' keepalive, so
    // only a client that stopped reading (or never sent a request) is dropped.
    connectionTimeout: IDLE_CONNECTION_MS,
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
    clientErrorHandler: clientErrorHandler(deps.logger),
  }) as unknown as FastifyInstance;

  // Past the cap, node closes new connections at once instead of letting them queue up memory.
  app.server.maxConnections = maxConnections;

  // Only JSON bodies are accepted on the API (415 for anything else); Fastify also parses text/plain by default.
  app.removeContentTypeParser("text/plain");
  acceptJsonBodies(app);

  const routes: Array<{ method: string; pattern: RegExp }> = [];
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const pattern = new RegExp(`^${route.url.replace(/:[^/]+/g, "[^/]+").replace(/\*/g, ".*")}/?$`);
    for (const method of methods) routes.push({ method, pattern });
  });

  const limiter = new RateLimiter(deps.rateLimit.perMinute, deps.rateLimit.burst);
  const authenticator = new Authenticator(deps.apiKeys);
  app.addHook("onRequest", async (req, reply) => {
    reply.header("x-request-id", req.id);
    // An unknown route or method is answered before its body is parsed: a QUERY without a Content-Type
    // is a 405 like any other method the route lacks, not a complaint about its body.
    if (req.routeOptions.url === undefined) throw unmatched(req);
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
    if (req.routeOptions.config.admin && req.caller.key.role !== "admin") {
      throw new ApiError(
        "not_authorized",
        `this route needs an admin key and this one is a ${req.caller.key.role} key; ask an administrator, or create one with dispatch keys create --role admin`,
      );
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
      if (code === "payload_too_large" && discardRefusedBody(req.raw) === "drain") {
        reply.removeHeader("connection");
      }
      const detail =
        code === "unsupported_media_type"
          ? `send the body as application/json (got ${req.headers["content-type"] ?? "no Content-Type"})`
          : code === "payload_too_large"
            ? `the body is over ${req.routeOptions.bodyLimit ?? LIMITS.bodyBytes} bytes`
            : `body: ${e.message ?? "malformed request"}`;
      return sendProblem(reply, req, new ApiError(code, detail));
    }
    const storeFault = deps.runService.classifyError(err);
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

  app.setNotFoundHandler((req, reply) => sendProblem(reply, req, unmatched(req)));

  /** 405 naming the methods when the path exists with other methods, else 404. */
  function unmatched(req: FastifyRequest): ApiError {
    const path = req.url.split("?")[0] ?? "/";
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
    if (allowed.length > 0) {
      return new ApiError(
        "method_not_allowed",
        `${req.method} is not allowed here; use ${allowed.join(", ")}`,
        {
          allow: allowed.join(", "),
        },
      );
    }
    return new ApiError("resource_not_found", `no route ${req.method} ${path}`);
  }

  return app;
}
