/**
 * How the integrations tell people why a RunsApi call failed. RunsApi errors carry the HTTP status and
 * the problem's detail (ApiError in process, the client's error classes over HTTP).
 */
export function statusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown }).status;
  return typeof status === "number" ? status : undefined;
}

/** A sentence for a chat reply: the problem's own detail for client errors, never internals. */
export function describeError(err: unknown): string {
  const status = statusOf(err);
  // In process an ApiError carries `detail`; over HTTP the client's error carries the problem document.
  const e = err as { detail?: unknown; problem?: { detail?: unknown } };
  const detail = e.detail ?? e.problem?.detail;
  if (status === 404) return "no such run.";
  if (status !== undefined && status < 500 && typeof detail === "string") return `${detail}.`;
  return "Dispatch is busy or unavailable just now; try again in a moment.";
}
