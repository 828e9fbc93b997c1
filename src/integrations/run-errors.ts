import { RunError, type RunErrorCode } from "../model/errors.ts";

/**
 * How the integrations tell people why a RunsApi call failed. Both RunsApi implementations throw RunError
 * (the run service in process; HttpRunsApi maps the client's errors back), so this decides by the code.
 */
export function runErrorCode(err: unknown): RunErrorCode | undefined {
  return err instanceof RunError ? err.code : undefined;
}

/**
 * Whether the server refused the request itself (a harness it cannot run here is operation_not_supported,
 * a bad config invalid_request): a default agent that caused it is worth naming to the person.
 */
export function refusedAgent(err: unknown): boolean {
  const code = runErrorCode(err);
  return code === "operation_not_supported" || code === "invalid_request";
}

/** The platform's fault, not the request's: say "try again", never the internals. */
const UNAVAILABLE: ReadonlySet<RunErrorCode> = new Set(["internal_error", "resource_unavailable"]);

/** A sentence for a chat reply: the problem's own detail for what the request got wrong. */
export function describeError(err: unknown): string {
  const code = runErrorCode(err);
  if (code === "resource_not_found") return "no such run.";
  if (code && !UNAVAILABLE.has(code) && err instanceof RunError && err.detail) return `${err.detail}.`;
  return "Dispatch is busy or unavailable just now; try again in a moment.";
}
