/**
 * Why a run ended, on the wire (docs/api.md): `status_message.error_code` is one of Oz's `ErrorCode`
 * values (the SDKs validate responses against that enum) or absent, and Dispatch's finer reason goes in
 * `status_message.reason` (a Dispatch extension). Runs store only the reason (in `StatusMessage.error_code`
 * of the record, the name it has always had); the Oz code is derived here when a run is shown.
 */

/** Oz's `ErrorCode` enum, exactly as the official SDKs define it. */
export const OZ_ERROR_CODES = [
  "insufficient_credits",
  "feature_not_available",
  "external_authentication_required",
  "not_authorized",
  "invalid_request",
  "resource_not_found",
  "budget_exceeded",
  "integration_disabled",
  "integration_not_configured",
  "operation_not_supported",
  "environment_setup_failed",
  "content_policy_violation",
  "conflict",
  "authentication_required",
  "resource_unavailable",
  "internal_error",
] as const;
export type OzErrorCode = (typeof OZ_ERROR_CODES)[number];

/**
 * Each reason Dispatch records, and the Oz code it is shown with (null: no Oz code fits, so none is
 * shown). The choices:
 * - limits the run hit (time, steps, model output, disk, cost) are a budget the run spent: `budget_exceeded`;
 * - something outside the run that may work on another try (the model provider, the repository, the
 *   push or pull request): `resource_unavailable`, Oz's "transient infrastructure issue";
 * - the platform losing the run (worker lost or shut down, an internal fault): `internal_error`;
 * - a harness this server cannot run: `feature_not_available`; an MCP server that failed to start is
 *   the caller's configuration: `invalid_request`; an environment whose setup failed or that the
 *   server misconfigured (a token not set): `environment_setup_failed`;
 * - a work branch that is not the run's own (another pull request's, another run's): `not_authorized`;
 * - something the run names that does not exist (its skill, an environment removed since it was
 *   created): `resource_not_found`; a model id that names nothing: `invalid_request`; a model whose
 *   provider has no credentials on the server: `integration_not_configured`;
 * - the agent's own failure (a command that failed, the agent giving up) and a cancel are not errors of
 *   any Oz category: no code, the reason and the message say what happened.
 */
const OZ_CODE_OF_REASON: Record<string, OzErrorCode | null> = {
  cancelled: null,
  aborted: null,
  command_failed: null,
  agent_failed: null,
  time_limit: "budget_exceeded",
  step_limit: "budget_exceeded",
  model_output_limit: "budget_exceeded",
  disk_quota_exceeded: "budget_exceeded",
  cost_limit: "budget_exceeded",
  model_error: "resource_unavailable",
  delivery_failed: "resource_unavailable",
  repository_unavailable: "resource_unavailable",
  branch_not_owned: "not_authorized",
  worker_lost: "internal_error",
  // Waiting for a person (BLOCKED): not an error of any kind; the reason says what it waits for.
  awaiting_approval: null,
  awaiting_budget: null,
  awaiting_input: null,
  // Nobody answered a waiting run within DISPATCH_BLOCKED_TIMEOUT_S.
  unanswered: null,
  // No longer given (a stopping worker hands its runs on); runs that ended so before migration 021 keep it.
  worker_shutdown: "internal_error",
  harness_unavailable: "feature_not_available",
  mcp_server_failed: "invalid_request",
  environment_setup_failed: "environment_setup_failed",
  environment_misconfigured: "environment_setup_failed",
  environment_unavailable: "resource_not_found",
  skill_not_found: "resource_not_found",
  unknown_model: "invalid_request",
  unknown_provider: "invalid_request",
  model_not_configured: "integration_not_configured",
  internal_error: "internal_error",
};

/** The Oz code a reason is shown with; an Oz code given as a reason is itself; anything else has none. */
export function ozErrorCodeOf(reason: string | undefined): OzErrorCode | undefined {
  if (reason === undefined) return undefined;
  if (Object.hasOwn(OZ_CODE_OF_REASON, reason)) return OZ_CODE_OF_REASON[reason] ?? undefined;
  return (OZ_ERROR_CODES as readonly string[]).includes(reason) ? (reason as OzErrorCode) : undefined;
}

/** A stored status message (`error_code` holding the reason) in its wire form. */
export function wireStatusMessage(stored: { message: string; error_code?: string; retryable?: boolean }): {
  message: string;
  error_code?: OzErrorCode;
  reason?: string;
  retryable?: boolean;
} {
  const code = ozErrorCodeOf(stored.error_code);
  return {
    message: stored.message,
    ...(code ? { error_code: code } : {}),
    ...(stored.error_code !== undefined ? { reason: stored.error_code } : {}),
    ...(stored.retryable !== undefined ? { retryable: stored.retryable } : {}),
  };
}
