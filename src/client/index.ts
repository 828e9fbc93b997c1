/**
 * agent-dispatch/client: the TypeScript client of the Dispatch HTTP API v1 (docs/API.md). No runtime
 * dependencies; runs wherever `fetch` does (Node ≥ 18, Deno, Bun, browsers, edge workers).
 */
export type {
  AgentConfig,
  CancelRunRequest,
  CreateRunRequest,
  CreateRunResponse,
  FollowupRequest,
  FollowupResponse,
  ListRunEventsQuery,
  ListRunsQuery,
  ListRunsResponse,
  MCPServerConfig,
  Problem,
  RunEvent,
  RunEventsResponse,
  RunItem,
  RunState,
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
export {
  isTerminalState,
  type RunCreateParams,
  type RunEventsListParams,
  type RunEventsStreamParams,
  type RunFollowupParams,
  type RunListParams,
  type RunRequestOptions,
  Runs,
  TERMINAL_STATES,
} from "./resources/runs.ts";
