/**
 * @agent-dispatch/client: the TypeScript client of the Dispatch HTTP API v1 (docs/api.md). No runtime
 * dependencies; runs wherever `fetch` does (Node ≥ 18, Deno, Bun, browsers, edge workers).
 */
export type {
  AgentConfig,
  AgentIdentity,
  AgentSkill,
  ApproveRunRequest,
  CancelRunRequest,
  CloudEnvironment,
  CreateAgentIdentityRequest,
  CreatedWebhook,
  CreateRunRequest,
  CreateRunResponse,
  CreateScheduleRequest,
  CreateWebhookRequest,
  DeleteScheduleResponse,
  FileArtifactResponse,
  FollowupRequest,
  FollowupResponse,
  ListAgentIdentitiesResponse,
  ListAgentsQuery,
  ListAgentsResponse,
  ListEnvironmentsQuery,
  ListEnvironmentsResponse,
  ListModelsResponse,
  ListRunEventsQuery,
  ListRunsQuery,
  ListRunsResponse,
  ListSchedulesResponse,
  ListWebhookDeliveriesResponse,
  ListWebhooksResponse,
  MCPServerConfig,
  Model,
  Problem,
  RunEvent,
  RunEventsResponse,
  RunItem,
  RunState,
  ScheduledAgentItem,
  UpdateAgentIdentityRequest,
  UpdateScheduleRequest,
  UsageReport,
  UsageRow,
  UsageTotals,
  Webhook,
  WebhookDelivery,
} from "./api-types.ts";
export {
  type ClientOptions,
  DEFAULT_BASE_URL,
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
  Dispatch,
  Dispatch as default,
} from "./client.ts";
export { APIPromise, type Fetch, type HeadersLike, type QueryValue, type RequestOptions } from "./core.ts";
export {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  DispatchError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
} from "./errors.ts";
export { RunEventStream } from "./event-stream.ts";
export { RunsPage, RunsPagePromise } from "./pagination.ts";
export { type AgentListParams, Agents } from "./resources/agents.ts";
export { Artifacts } from "./resources/artifacts.ts";
export { type EnvironmentListParams, Environments } from "./resources/environments.ts";
export {
  Identities,
  type IdentityCreateParams,
  type IdentityUpdateParams,
} from "./resources/identities.ts";
export { Models } from "./resources/models.ts";
export {
  isTerminalState,
  type RunApproveParams,
  type RunCreateParams,
  type RunEventsListParams,
  type RunEventsStreamParams,
  type RunFollowupParams,
  type RunListParams,
  type RunRequestOptions,
  Runs,
  TERMINAL_STATES,
} from "./resources/runs.ts";
export { type ScheduleCreateParams, Schedules, type ScheduleUpdateParams } from "./resources/schedules.ts";
export { Usage, type UsageGroup, type UsageRetrieveParams } from "./resources/usage.ts";
export {
  type WebhookCreateParams,
  type WebhookDeliveriesListParams,
  Webhooks,
} from "./resources/webhooks.ts";
