import type {
  ApproveRunRequest,
  BudgetRequest,
  BudgetResponse,
  CreateRunRequest,
  CreateRunResponse,
  FollowupRequest,
  FollowupResponse,
  ListAttachmentsResponse,
  ListRunEventsQuery,
  ListRunsQuery,
  ListRunsResponse,
  RunEventsResponse,
  RunItem,
  RunState,
} from "../api-types.ts";
import { APIPromise, parseJSON, type RequestOptions, type Transport } from "../core.ts";
import { DispatchError } from "../errors.ts";
import { RunEventStream } from "../event-stream.ts";
import { RunsPage, RunsPagePromise } from "../pagination.ts";

export type RunCreateParams = CreateRunRequest;
export type RunFollowupParams = FollowupRequest;
export type RunListParams = ListRunsQuery;
export type RunEventsListParams = ListRunEventsQuery;
export type RunApproveParams = ApproveRunRequest;
export interface RunEventsStreamParams {
  /** Start after this event `seq` (0 or absent: from the beginning of the transcript). */
  after?: number;
  /**
   * End after the `state` event that made the run SUCCEEDED, FAILED, ERROR or CANCELLED when nothing
   * came after it (a follow-up that restarted the run keeps the stream going). Default true; false
   * follows the transcript until you `break` or abort.
   */
  untilTerminal?: boolean;
}

/** Per-request options of the typed calls: `timeout`, `maxRetries`, `headers`, `signal`, `idempotencyKey`. */
export type RunRequestOptions = Omit<RequestOptions, "query" | "body">;

export const TERMINAL_STATES: readonly RunState[] = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"];

/** Whether a run in this state has finished (a follow-up can still start it again). */
export function isTerminalState(state: string): boolean {
  return (TERMINAL_STATES as readonly string[]).includes(state);
}

/** /agent/runs and the routes under it. */
export class Runs {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * POST /agent/runs. Retries reuse one Idempotency-Key, so a create whose response was lost makes
   * one run; pass `idempotencyKey` to make a create safe to repeat across processes.
   */
  create(body: RunCreateParams, options?: RunRequestOptions): APIPromise<CreateRunResponse> {
    return this.#json("POST", "agent/runs", { ...options, body });
  }

  /** GET /agent/runs: the first page; iterate the result (or the page) for every run across pages. */
  list(query: RunListParams = {}, options?: RunRequestOptions): RunsPagePromise {
    const fetchPage = (params: RunListParams): RunsPagePromise => {
      const sent = this.#transport.send("GET", "agent/runs", { ...options, query: { ...params } });
      return new RunsPagePromise(
        sent,
        async (response) =>
          new RunsPage(await parseJSON<ListRunsResponse>(response), (cursor) =>
            fetchPage({ ...params, cursor }),
          ),
      );
    };
    return fetchPage(query);
  }

  /** GET /agent/runs/{runId}. */
  retrieve(runId: string, options?: RunRequestOptions): APIPromise<RunItem> {
    return this.#json("GET", runPath(runId), options);
  }

  /** POST /agent/runs/{runId}/followups: where it went depends on the run's state (docs/api.md). */
  followup(
    runId: string,
    body: RunFollowupParams,
    options?: RunRequestOptions,
  ): APIPromise<FollowupResponse> {
    return this.#json("POST", `${runPath(runId)}/followups`, { ...options, body });
  }

  /**
   * GET /agent/runs/{runId}/handoff/attachments: the run's image attachments (create and follow-ups),
   * each with a signed `download_url` that works without an API key until `expires_at`.
   */
  listHandoffAttachments(runId: string, options?: RunRequestOptions): APIPromise<ListAttachmentsResponse> {
    return this.#json("GET", `${runPath(runId)}/handoff/attachments`, options);
  }

  /** POST /agent/runs/{runId}/cancel: resolves with the run id once the run is CANCELLED. */
  cancel(runId: string, options?: RunRequestOptions): APIPromise<string> {
    return this.#json("POST", `${runPath(runId)}/cancel`, options);
  }

  /**
   * GET /agent/runs/{runId}/events as a live stream: an async iterator over the transcript that
   * resumes after dropped connections. See RunEventStream.
   */
  events(runId: string, query: RunEventsStreamParams = {}, options?: RunRequestOptions): RunEventStream {
    return new RunEventStream(this.#transport, runPath(runId), query, options);
  }

  /** GET /agent/runs/{runId}/events as one JSON page: events after `after`, and `next_after`. */
  listEvents(
    runId: string,
    query: RunEventsListParams = {},
    options?: RunRequestOptions,
  ): APIPromise<RunEventsResponse> {
    return this.#json("GET", `${runPath(runId)}/events`, { ...options, query: { ...query } });
  }

  /**
   * POST /agent/runs/{runId}/approve (a Dispatch extension): answers a run whose plan waits for approval
   * (BLOCKED, `status_message.reason` awaiting_approval). `approve` carries the plan out in the same run
   * (`message`: an optional note); `revise` has it planned again with `message` as the changes. Any other
   * run is a ConflictError; cancel with `cancel`.
   */
  approve(runId: string, body: RunApproveParams, options?: RunRequestOptions): APIPromise<FollowupResponse> {
    return this.#json("POST", `${runPath(runId)}/approve`, { ...options, body });
  }

  /**
   * POST /agent/runs/{runId}/budget (a Dispatch extension): a run waiting for budget (BLOCKED,
   * awaiting_budget) is extended by `amount_usd` and continues, or stops there delivering what it has.
   */
  budget(runId: string, body: BudgetRequest, options?: RunRequestOptions): APIPromise<BudgetResponse> {
    return this.#json("POST", `${runPath(runId)}/budget`, { ...options, body });
  }

  #json<T>(method: string, path: string, options: RequestOptions = {}): APIPromise<T> {
    return new APIPromise(this.#transport.send(method, path, options), parseJSON<T>);
  }
}

function runPath(runId: string): string {
  if (typeof runId !== "string" || runId === "") throw new DispatchError("runId must be a non-empty string");
  return `agent/runs/${encodeURIComponent(runId)}`;
}
