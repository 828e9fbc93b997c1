/**
 * Why an operation on runs was refused, in the API's `error_code` vocabulary (docs/api.md). The run
 * service throws these; the HTTP API turns them into problem+json in one place, and the integrations
 * decide what to tell people by the code, never by an HTTP status.
 */
export const RUN_ERROR_CODES = [
  "invalid_request",
  "authentication_required",
  "not_authorized",
  "resource_not_found",
  "method_not_allowed",
  "conflict",
  "payload_too_large",
  "unsupported_media_type",
  "headers_too_large",
  "request_timeout",
  "idempotency_key_reused",
  "operation_not_supported",
  "rate_limited",
  "internal_error",
  "resource_unavailable",
] as const;

export type RunErrorCode = (typeof RUN_ERROR_CODES)[number];

export class RunError extends Error {
  override name = "RunError";
  readonly code: RunErrorCode;
  /** The sentence for the person who asked: what was wrong and what to do. */
  readonly detail: string | undefined;
  /** When retrying makes sense, how long to wait first. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: RunErrorCode, detail?: string, opts: { retryAfterSeconds?: number } = {}) {
    super(detail ?? code);
    this.code = code;
    this.detail = detail;
    this.retryAfterSeconds = opts.retryAfterSeconds;
  }
}

export function isRunErrorCode(value: unknown): value is RunErrorCode {
  return typeof value === "string" && (RUN_ERROR_CODES as readonly string[]).includes(value);
}
