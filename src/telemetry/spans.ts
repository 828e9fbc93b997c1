import {
  type Attributes,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  type Link,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";

/**
 * Dispatch's spans (docs/runtime.md, "Traces"), made with the OpenTelemetry API: without a started SDK
 * (tracing off) every call here is a no-op, and the hot paths check `tracing.enabled` before doing
 * anything at all.
 */

const tracer = () => trace.getTracer("dispatch");

/** What callers get while tracing is off: a span that records nothing. */
const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Whether an exporter runs, and whether prompts, outputs and tool arguments may be exported. */
export const tracing = { enabled: false, captureContent: false };

export function enableTracing(opts: { captureContent: boolean }): void {
  tracing.enabled = true;
  tracing.captureContent = opts.captureContent;
}

/** At most this much of a prompt, output or tool argument goes into a span (when content is captured). */
const CONTENT_CHARS = 4096;

/** `text` cut to what a span may carry. */
export function contentAttribute(text: string): string {
  return text.length > CONTENT_CHARS ? `${text.slice(0, CONTENT_CHARS)}…` : text;
}

/**
 * Runs `work` in a span named `name` (a child of the active span), ending it when `work` settles; a
 * thrown error marks the span failed and is rethrown. `done` may add attributes from the result.
 */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span) => Promise<T>,
  done?: (result: T, span: Span) => void,
): Promise<T> {
  if (!tracing.enabled) return work(NO_SPAN);
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      const result = await work(span);
      done?.(result, span);
      return result;
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Marks `span` failed by `err`. */
export function failed(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/** A span started now and ended by whoever holds it (at most once), a child of the active span. */
export function startSpan(name: string, attributes: Attributes = {}, kind = SpanKind.INTERNAL): Span {
  if (!tracing.enabled) return NO_SPAN;
  return tracer().startSpan(name, { attributes, kind });
}

/**
 * Runs `work` as the root of a trace of its own, linked to the span `linkTo` names (W3C traceparent):
 * an execution is one trace, and the request that created its run links to it.
 */
export async function inRootSpan<T>(
  name: string,
  attributes: Attributes,
  linkTo: string | undefined,
  work: (span: Span) => Promise<T>,
): Promise<T> {
  if (!tracing.enabled) return work(NO_SPAN);
  const link = linkTo ? linkOf(linkTo) : undefined;
  const span = tracer().startSpan(name, { root: true, attributes, ...(link ? { links: [link] } : {}) });
  try {
    return await context.with(trace.setSpan(ROOT_CONTEXT, span), () => work(span));
  } catch (err) {
    failed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Runs `work` with `span` active (its children's parent). */
export function withSpan<T>(span: Span, work: () => T): T {
  return context.with(trace.setSpan(context.active(), span), work);
}

/** The active span as a W3C traceparent, when one is being recorded. */
export function activeTraceparent(ctx: Context = context.active()): string | undefined {
  const span = trace.getSpan(ctx);
  const sc = span?.spanContext();
  if (!span?.isRecording() || !sc || !trace.isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 1).toString(16).padStart(2, "0")}`;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

function linkOf(traceparent: string): Link | undefined {
  const m = TRACEPARENT.exec(traceparent);
  if (!m) return undefined;
  return {
    context: { traceId: m[1]!, spanId: m[2]!, traceFlags: Number.parseInt(m[3]!, 16), isRemote: true },
  };
}

export { type Span, SpanKind, SpanStatusCode };

/** A stretch of work as a span, ended by `end()` once, however many ways it has to stop. */
export function phase(name: string, attributes: Attributes = {}): { end(): void } {
  const span = startSpan(name, attributes);
  let open = true;
  return {
    end() {
      if (open) span.end();
      open = false;
    },
  };
}
