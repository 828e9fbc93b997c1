import { context, propagation } from "@opentelemetry/api";
import type { FastifyRequest } from "fastify";
import { type Span, SpanKind, SpanStatusCode, startSpan, tracing, withSpan } from "../telemetry/spans.ts";

/**
 * A span per HTTP request (docs/runtime.md, "Traces"), continuing the caller's trace when it sends a W3C
 * `traceparent`. The API's handlers run inside it, so a run created by the request records it, and every
 * execution of that run links to it.
 */
const spans = new WeakMap<FastifyRequest, Span>();

export function startRequestSpan(req: FastifyRequest): void {
  if (!tracing.enabled) return;
  const route = req.routeOptions.url ?? "unmatched";
  const parent = propagation.extract(context.active(), req.headers);
  const span = context.with(parent, () =>
    startSpan(
      `${req.method} ${route}`,
      { "http.request.method": req.method, "http.route": route, "url.path": req.url.split("?")[0] ?? "/" },
      SpanKind.SERVER,
    ),
  );
  spans.set(req, span);
}

export function endRequestSpan(req: FastifyRequest, status: number): void {
  const span = spans.get(req);
  if (!span) return;
  span.setAttribute("http.response.status_code", status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
  spans.delete(req);
}

/** Runs `work` with the request's span active, when there is one. */
export function inRequestSpan<T>(req: FastifyRequest, work: () => T): T {
  const span = spans.get(req);
  return span ? withSpan(span, work) : work();
}
