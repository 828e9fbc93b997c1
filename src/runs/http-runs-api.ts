import { APIError, Dispatch } from "@agent-dispatch/client";
import { isRunErrorCode, RunError, type RunErrorCode } from "../model/errors.ts";
import type { Creator, FollowupOutcome } from "../model/run.ts";
import type { BudgetRequest } from "./budget-answer.ts";
import type { PlanAnswer } from "./plan-approval.ts";
import type { RunItem } from "./run-item.ts";
import type {
  RunEventsPage,
  RunsApi,
  RunsApiCallOptions,
  RunsApiCreate,
  RunsApiFollowupOptions,
  RunsApiListQuery,
} from "./runs-api.ts";

/**
 * RunsApi over HTTP (remote mode, DISPATCH_RUN_SERVICE_URL): the bot fronts another Dispatch through
 * the TypeScript client, with its retries, timeouts and one idempotency key per logical call. The key
 * must be an admin key of the remote service for runs to carry the Slack or GitHub user as creator
 * (`on_behalf_of`, a Dispatch extension); an Oz-compatible service ignores that field.
 */
export class HttpRunsApi implements RunsApi {
  private readonly client: Dispatch;

  constructor(opts: { baseUrl: string; apiKey: string; fetch?: typeof fetch }) {
    this.client = new Dispatch({
      baseURL: opts.baseUrl,
      apiKey: opts.apiKey,
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
    });
  }

  create(input: RunsApiCreate, opts: RunsApiCallOptions = {}) {
    return asRunError(() => this.createOnce(input, opts));
  }

  private async createOnce(input: RunsApiCreate, opts: RunsApiCallOptions) {
    const { creator, source, trigger_url, ...body } = input;
    const behalf = {
      ...(creator ? { creator } : {}),
      ...(source ? { source } : {}),
      ...(trigger_url ? { trigger_url } : {}),
    };
    const created = await this.client.runs.create(
      { ...body, ...(Object.keys(behalf).length ? { on_behalf_of: behalf } : {}) },
      opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {},
    );
    return { run_id: created.run_id, state: created.state, at_capacity: created.at_capacity };
  }

  get(runId: string): Promise<RunItem> {
    return asRunError(async () => (await this.client.runs.retrieve(runId)) as unknown as RunItem);
  }

  list(query: RunsApiListQuery) {
    return asRunError(() => this.listOnce(query));
  }

  private async listOnce(query: RunsApiListQuery) {
    const page = await this.client.runs.list({
      ...(query.limit !== undefined ? { limit: query.limit } : {}),
      ...(query.cursor ? { cursor: query.cursor } : {}),
      ...(query.sort_by ? { sort_by: query.sort_by } : {}),
      ...(query.sort_order ? { sort_order: query.sort_order } : {}),
      ...(query.updated_after ? { updated_after: query.updated_after } : {}),
      ...(query.state ? { state: query.state as never } : {}),
      ...(query.source ? { source: query.source } : {}),
    });
    return {
      runs: page.runs as unknown as RunItem[],
      ...(page.page_info.next_cursor ? { next_cursor: page.page_info.next_cursor } : {}),
    };
  }

  followup(runId: string, message: string, opts: RunsApiFollowupOptions = {}) {
    return asRunError(async () =>
      this.client.runs.followup(
        runId,
        { message, ...(opts.attachments?.length ? { attachments: opts.attachments } : {}) },
        opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {},
      ),
    );
  }

  /** `by` travels as `on_behalf_of` (a Dispatch extension), so the run says who cancelled it. */
  cancel(runId: string, opts: RunsApiCallOptions & { by?: Creator } = {}): Promise<void> {
    return asRunError(async () => {
      await this.client.post(`agent/runs/${encodeURIComponent(runId)}/cancel`, {
        ...(opts.by ? { body: { on_behalf_of: { creator: opts.by } } } : {}),
        ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}),
      });
    });
  }

  events(runId: string, after: number, limit: number): Promise<RunEventsPage> {
    return asRunError(
      async () => (await this.client.runs.listEvents(runId, { after, limit })) as unknown as RunEventsPage,
    );
  }

  approve(
    runId: string,
    answer: PlanAnswer,
    opts: RunsApiCallOptions = {},
  ): Promise<{ followup_id: string; outcome: FollowupOutcome }> {
    return asRunError(async () =>
      this.client.runs.approve(runId, answer, {
        ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}),
      }),
    );
  }

  /** `by` travels as `on_behalf_of`, so the person's own limits apply rather than the admin key's. */
  budget(
    runId: string,
    answer: BudgetRequest,
    opts: RunsApiCallOptions & { by?: Creator } = {},
  ): Promise<{ run_id: string; state: string }> {
    return asRunError(async () =>
      this.client.runs.budget(
        runId,
        { ...answer, ...(opts.by ? { on_behalf_of: { creator: opts.by } } : {}) },
        opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {},
      ),
    );
  }
}

/** The client's errors as the domain's: the problem's error_code when it has one, else by status. */
async function asRunError<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof APIError)) throw err;
    const code: RunErrorCode = isRunErrorCode(err.code)
      ? err.code
      : err.status === 404
        ? "resource_not_found"
        : err.status !== undefined && err.status < 500
          ? "invalid_request"
          : "resource_unavailable";
    const retryAfter = Number(err.headers?.get("retry-after"));
    throw new RunError(code, err.problem?.detail ?? undefined, {
      ...(Number.isInteger(retryAfter) ? { retryAfterSeconds: retryAfter } : {}),
    });
  }
}
