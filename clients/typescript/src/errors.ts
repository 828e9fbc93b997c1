import type { Problem } from "./api-types.ts";

/** Base of everything the client throws on purpose. */
export class DispatchError extends Error {
  override name = "DispatchError";
}

/**
 * A request that did not succeed: an error response (with `status`, `headers` and the
 * application/problem+json body as `problem`) or no response at all (status undefined).
 */
export class APIError extends DispatchError {
  override name = "APIError";
  /** HTTP status; undefined when no response arrived. */
  readonly status: number | undefined;
  readonly headers: Headers | undefined;
  /** The problem document (docs/api.md); undefined when the body was not one. */
  readonly problem: Problem | undefined;
  /** The parsed body when it was JSON, else its text. */
  readonly body: unknown;
  /** `error_code` of the problem, e.g. `resource_not_found`. */
  readonly code: string | undefined;
  /** The server's `x-request-id`, also the problem's `trace_id`: quote it when reporting a bug. */
  readonly requestID: string | undefined;

  constructor(
    status: number | undefined,
    body: unknown,
    message: string | undefined,
    headers: Headers | undefined,
    options?: { cause?: unknown },
  ) {
    super(APIError.describe(status, body, message), options);
    this.status = status;
    this.headers = headers;
    this.body = body;
    this.problem = isProblem(body) ? body : undefined;
    this.code = this.problem?.error_code;
    this.requestID = headers?.get("x-request-id") ?? this.problem?.trace_id ?? undefined;
  }

  private static describe(status: number | undefined, body: unknown, message: string | undefined): string {
    if (isProblem(body)) return `${status} ${body.error}`;
    if (message) return status ? `${status} ${message}` : message;
    return status ? `${status} status code (no problem body)` : "Connection error.";
  }

  /** The error class for a response's status. */
  static generate(status: number, body: unknown, message: string | undefined, headers: Headers): APIError {
    const Class = STATUS_CLASSES[status] ?? (status >= 500 ? InternalServerError : APIError);
    return new Class(status, body, message, headers);
  }
}

export class BadRequestError extends APIError {
  override name = "BadRequestError";
}
export class AuthenticationError extends APIError {
  override name = "AuthenticationError";
}
export class PermissionDeniedError extends APIError {
  override name = "PermissionDeniedError";
}
export class NotFoundError extends APIError {
  override name = "NotFoundError";
}
export class ConflictError extends APIError {
  override name = "ConflictError";
}
export class UnprocessableEntityError extends APIError {
  override name = "UnprocessableEntityError";
}
export class RateLimitError extends APIError {
  override name = "RateLimitError";
}
/** Any status ≥ 500 (500 internal_error, 503 resource_unavailable, or a proxy's 502/504). */
export class InternalServerError extends APIError {
  override name = "InternalServerError";
}

/** No response: connection refused or reset, DNS failure, a stream that dropped and could not resume. */
export class APIConnectionError extends APIError {
  override name = "APIConnectionError";
  constructor(options: { message?: string; cause?: unknown } = {}) {
    super(undefined, undefined, options.message ?? "Connection error.", undefined, { cause: options.cause });
  }
}

export class APIConnectionTimeoutError extends APIConnectionError {
  override name = "APIConnectionTimeoutError";
  constructor(options: { message?: string } = {}) {
    super({ message: options.message ?? "Request timed out." });
  }
}

/** The caller's AbortSignal fired. */
export class APIUserAbortError extends APIError {
  override name = "APIUserAbortError";
  constructor(options: { message?: string } = {}) {
    super(undefined, undefined, options.message ?? "Request was aborted.", undefined);
  }
}

const STATUS_CLASSES: Record<number, typeof APIError> = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  422: UnprocessableEntityError,
  429: RateLimitError,
};

function isProblem(body: unknown): body is Problem {
  return (
    typeof body === "object" &&
    body !== null &&
    typeof (body as Problem).error === "string" &&
    typeof (body as Problem).error_code === "string"
  );
}
