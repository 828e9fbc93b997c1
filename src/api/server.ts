import { randomUUID } from "node:crypto";
import Fastify, { type FastifyInstance, type FastifyRequest, LogController } from "fastify";
import type { Logger } from "pino";
import { RunError } from "../model/errors.ts";
import type { Caller } from "../model/identity.ts";
import type { RunService } from "../runs/run-service.ts";
import { type ApiKeyLookup, Authenticator } from "./auth.ts";
import { clientErrorHandler, discardRefusedBody } from "./connection-errors.ts";
import { type EventStreamCaps, EventStreamSlots } from "./event-stream-slots.ts";
import { acceptJsonBodies } from "./json-body.ts";
import type { Metrics } from "./metrics.ts";
import { ApiError, codeForStatus, sendProblem } from "./problem.ts";
import { RateLimiter } from "./rate-limit.ts";
import { lazyRequestLogger } from "./request-logger.ts";
import { endRequestSpan, startRequestSpan } from "./request-trace.ts";
import { LIMITS } from "./schemas/common.ts";

const IDLE_CONNECTION_MS = 120_000;

export interface ServerDeps {
  apiKeys: ApiKeyLookup;
  /** Tells a storage fault (a concurrent change won, the database is down) from a bug. */
  runService: Pick<RunService, "classifyError">;
  metrics: Pick<Metrics, "httpRequests" | "httpDuration">;
  logger: Logger;
  rateLimit: { perMinute: number; burst: number };
  /**
   * How long a request's headers and body may take to arrive, how many sockets may be open at once, and
   * whose X-Forwarded-For names the client (Fastify's trustProxy: false, or the proxies' addresses).
   */
  http: {
    requestTimeoutMs: number;
    maxConnections: number;
    trustProxy?: false | string;
    /** Caps on open event streams, in all (below maxConnections), per client and per run. */
    eventStreams: EventStreamCaps;
  };
  /** False while shutting down: new API calls get resource_unavailable. */
  isAccepting: () => boolean;
  /** Which requests get an access log line (config.accessLog); "errors" when not given. */
  accessLog?: AccessLog;
}

/**
 * errors: answers ≥ 500 at warn, and every request at debug (so only when the log level is debug or
 * trace); sample: as errors, plus 1 request in SAMPLE_EVERY at info; all: every request at info; off: no
 * access lines (the error handler still logs each fault with its request id).
 */
export type AccessLog = "errors" | "sample" | "all" | "off";

const SAMPLE_EVERY = 100;

/**
 * The HTTP server's parts that every route shares: request ids, authentication and rate limits (for routes
 * with `config.auth`), metrics, and problem+json answers for errors, unknown routes and wrong methods. The
 * routes themselves are plugins that the caller registers.
 */
export function buildServer(deps: ServerDeps): FastifyInstance {
  const { requestTimeoutMs, maxConnections } = deps.http;
  const app = Fastify({
    // req.ip: the client as trusted proxies name it, else the connection's address (limits per client).
    trustProxy: deps.http.trustProxy ?? false,
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
    // Fastify's own two info lines per request (incoming, completed) were most of a GET's logging cost
    // and all of its noise: the onResponse hook below writes one line, as accessLog says.
    logController: new LogController({ disableRequestLogging: true }),
    // The per-request child logger is made only when the request logs something.
    childLoggerFactory: lazyRequestLogger,
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

  // Past the cap, node closes new connections at once instead of letting them queue up memory. Event
  // streams are refused (429) below it, so that a crowd of them leaves connections for everything else.
  app.server.maxConnections = maxConnections;
  app.decorate("eventStreams", new EventStreamSlots(deps.http.eventStreams));

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
  app.decorate("reauthenticate", (req: FastifyRequest) => authenticator.authenticate(req));
  app.decorate("authenticateWrite", (req: FastifyRequest) => authenticator.authenticate(req, false));
  app.decorate("refuseRevokedKey", (req: FastifyRequest) => authenticator.refused(req));
  /** What the caller may not do on this route and request (rate limit, role); undefined when allowed. */
  const refusal = (req: FastifyRequest, caller: Caller): ApiError | undefined => {
    req.caller = caller;
    const wait = limiter.take(caller.key.id);
    if (wait > 0) {
      return new ApiError("rate_limited", `over this key's rate limit; retry in ${wait} s`, {
        "retry-after": String(wait),
      });
    }
    if (req.routeOptions.config.admin && caller.key.role !== "admin") {
      return new ApiError(
        "not_authorized",
        `this route needs an admin key and this one is a ${caller.key.role} key; ask an administrator, or create one with dispatch keys create --role admin`,
      );
    }
    if (req.method !== "GET" && req.method !== "HEAD" && caller.key.role === "read") {
      return new ApiError(
        "not_authorized",
        "this API key is read-only; use a member key to create or change runs",
      );
    }
    return undefined;
  };
  // Not async: a caller seen in the last seconds is known at once, and a promise per request (plus the
  // microtask turns Fastify spends on it) was measurable on the GET path. Errors thrown here reach the
  // error handler as an async hook's would.
  app.addHook("onRequest", (req, reply, done) => {
    reply.header("x-request-id", req.id);
    startRequestSpan(req);
    // An unknown route or method is answered before its body is parsed: a QUERY without a Content-Type
    // is a 405 like any other method the route lacks, not a complaint about its body.
    if (req.routeOptions.url === undefined) throw unmatched(req);
    if (!req.routeOptions.config.auth) return done();
    if (!deps.isAccepting()) {
      throw new ApiError("resource_unavailable", "the server is shutting down; retry shortly", {
        "retry-after": "5",
      });
    }
    const known = authenticator.cached(req);
    if (known) return done(refusal(req, known));
    authenticator.authenticate(req).then((caller) => done(refusal(req, caller)), done);
  });

  const recordMetrics = metricsRecorder(deps.metrics);
  const accessLog = deps.accessLog ?? "errors";
  let served = 0;
  const logAccess = (req: FastifyRequest, status: number, ms: number) => {
    if (accessLog === "off") return;
    const level =
      accessLog === "all" || (accessLog === "sample" && ++served % SAMPLE_EVERY === 0)
        ? "info"
        : status >= 500
          ? "warn"
          : "debug";
    if (!deps.logger.isLevelEnabled(level)) return;
    req.log[level](
      { method: req.method, url: req.url, status, ms: Math.round(ms * 10) / 10 },
      `${req.method} ${req.routeOptions.url ?? req.url.split("?")[0]} ${status}`,
    );
  };
  // Not async: nothing here waits, and a promise per request is measurable on the GET path.
  app.addHook("onResponse", (req, reply, done) => {
    const ms = reply.elapsedTime;
    recordMetrics(req.method, req.routeOptions.url ?? "unmatched", reply.statusCode, ms);
    endRequestSpan(req, reply.statusCode);
    logAccess(req, reply.statusCode, ms);
    done();
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

/**
 * Counts and times a request. The children of each (route, method, status) are kept, in maps keyed by
 * the values themselves: prom-client would otherwise build and hash the label set twice per request, and
 * a string key per request was measurable too.
 */
function metricsRecorder(metrics: Pick<Metrics, "httpRequests" | "httpDuration">) {
  type RouteMetrics = {
    timer: { observe(value: number): void };
    counters: Map<number, { inc(): void }>;
  };
  const byRoute = new Map<string, Map<string, RouteMetrics>>();
  return (method: string, route: string, status: number, ms: number) => {
    let byMethod = byRoute.get(route);
    if (!byMethod) {
      byMethod = new Map();
      byRoute.set(route, byMethod);
    }
    let recorded = byMethod.get(method);
    if (!recorded) {
      recorded = { timer: metrics.httpDuration.labels({ method, route }), counters: new Map() };
      byMethod.set(method, recorded);
    }
    let counter = recorded.counters.get(status);
    if (!counter) {
      counter = metrics.httpRequests.labels({ method, route, status: String(status) });
      recorded.counters.set(status, counter);
    }
    counter.inc();
    recorded.timer.observe(ms / 1000);
  };
}
