import type { FastifyReply, FastifyRequest } from "fastify";
import { RunError, type RunErrorCode } from "../model/errors.ts";

/**
 * The API's errors (docs/api.md): every non-2xx response is application/problem+json with a stable
 * error_code. The domain's RunError carries the code; this table gives each its HTTP status and title.
 */
export const ERROR_CODES = {
  invalid_request: { status: 400, title: "Invalid request" },
  authentication_required: { status: 401, title: "Authentication required" },
  not_authorized: { status: 403, title: "Not authorized" },
  resource_not_found: { status: 404, title: "Not found" },
  method_not_allowed: { status: 405, title: "Method not allowed" },
  request_timeout: { status: 408, title: "Request timeout" },
  conflict: { status: 409, title: "Conflict" },
  payload_too_large: { status: 413, title: "Payload too large" },
  unsupported_media_type: { status: 415, title: "Unsupported media type" },
  headers_too_large: { status: 431, title: "Request header fields too large" },
  idempotency_key_reused: { status: 422, title: "Idempotency key reused" },
  // Oz's code for a request that is well-formed but asks for something this server does not do.
  operation_not_supported: { status: 400, title: "Operation not supported" },
  rate_limited: { status: 429, title: "Rate limited" },
  internal_error: { status: 500, title: "Internal error" },
  resource_unavailable: { status: 503, title: "Service unavailable" },
} as const satisfies Record<RunErrorCode, { status: number; title: string }>;

export type ErrorCode = RunErrorCode;

const RETRYABLE = new Set([409, 429, 500, 503]);

/** An error only HTTP has (authentication, routing, rate limits), with the headers its answer carries. */
export class ApiError extends RunError {
  override name = "ApiError";
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, detail?: string, headers: Record<string, string> = {}) {
    const retryAfter = Number(headers["retry-after"]);
    super(code, detail, Number.isInteger(retryAfter) ? { retryAfterSeconds: retryAfter } : {});
    this.headers = headers;
  }
}

/** The HTTP answer to any RunError: its status and the headers it needs (Retry-After, Allow). */
export function httpOf(err: RunError): { status: number; headers: Record<string, string> } {
  const headers = err instanceof ApiError ? { ...err.headers } : {};
  if (err.retryAfterSeconds !== undefined) headers["retry-after"] = String(err.retryAfterSeconds);
  return { status: ERROR_CODES[err.code].status, headers };
}

/** Answers `req` with `err` as application/problem+json. */
export function sendProblem(reply: FastifyReply, req: FastifyRequest, err: RunError): FastifyReply {
  const body = problemBody(err.code, req.url.split("?")[0] ?? "/", err.detail, req.id);
  const { status, headers } = httpOf(err);
  return reply.code(status).headers(headers).type("application/problem+json").send(JSON.stringify(body));
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  error: string;
  error_code: ErrorCode;
  retryable: boolean;
  instance: string;
  trace_id?: string;
}

export function problemBody(code: ErrorCode, instance: string, detail?: string, traceId?: string): Problem {
  const { status, title } = ERROR_CODES[code];
  return {
    type: `https://dispatch.dev/problems/${code.replaceAll("_", "-")}`,
    title,
    status,
    ...(detail ? { detail } : {}),
    error: detail ? `${title} (${detail})` : title,
    error_code: code,
    retryable: RETRYABLE.has(status),
    instance,
    ...(traceId ? { trace_id: traceId } : {}),
  };
}

/** The error code for a status that a framework produced (body parsing, routing). */
export function codeForStatus(status: number): ErrorCode {
  const match = Object.entries(ERROR_CODES).find(([, v]) => v.status === status);
  if (match) return match[0] as ErrorCode;
  return status >= 500 ? "internal_error" : "invalid_request";
}
