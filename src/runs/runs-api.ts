import type { ApiKeyRole, Caller } from "../model/identity.ts";
import type { Creator, FollowupOutcome, RunEvent } from "../model/run.ts";
import type { AttachmentInput } from "./attachments.ts";
import type { BudgetRequest, RunBudgets } from "./budget-answer.ts";
import { answerPlan, type PlanAnswer } from "./plan-approval.ts";
import { type RunItem, toRunItem } from "./run-item.ts";
import type { ListInput, RunService } from "./run-service.ts";

/**
 * What the integrations (Slack, GitHub, Linear) and the notifier use to reach runs: the operations of the
 * HTTP API they need (create, get, list, follow up, cancel, a page of the transcript, and the answer to a
 * plan that waits for approval or a run that waits for budget), in its wire shapes. The in-process implementation calls the run service directly; an HTTP
 * one (the TypeScript client) lets the bot front a remote Dispatch. Integrations never touch the store.
 */
export interface RunsApi {
  create(
    input: RunsApiCreate,
    opts?: RunsApiCreateOptions,
  ): Promise<{ run_id: string; state: string; at_capacity: boolean }>;
  get(runId: string): Promise<RunItem>;
  list(query: RunsApiListQuery): Promise<{ runs: RunItem[]; next_cursor?: string }>;
  followup(
    runId: string,
    message: string,
    opts?: RunsApiFollowupOptions,
  ): Promise<{ followup_id: string; outcome: FollowupOutcome }>;
  cancel(runId: string, opts?: RunsApiCallOptions & { by?: Creator }): Promise<void>;
  /** The run's transcript after seq `after` (GET /agent/runs/{id}/events): a surface reports its steps from it. */
  events(runId: string, after: number, limit: number): Promise<RunEventsPage>;
  /**
   * Approves the plan the run waits on, or asks for changes to it (POST /agent/runs/{id}/approve): a
   * follow-up of the run; `conflict` when no plan waits.
   */
  approve(
    runId: string,
    answer: PlanAnswer,
    opts?: RunsApiCallOptions,
  ): Promise<{ followup_id: string; outcome: FollowupOutcome }>;
  /**
   * Extends the budget the run waits for, or stops it there (POST /agent/runs/{id}/budget), as `by` (the
   * person on the surface, whose own monthly limits then apply): `not_authorized` when that is beyond
   * what they may allow, `conflict` when the run does not wait for budget.
   */
  budget(
    runId: string,
    answer: BudgetRequest,
    opts?: RunsApiCallOptions & { by?: Creator },
  ): Promise<{ run_id: string; state: string }>;
}

/** One page of a run's transcript, as GET /agent/runs/{id}/events answers it. */
export interface RunEventsPage {
  events: RunEvent[];
  next_after: number;
}

export interface RunsApiCreate {
  prompt?: string;
  /** `plan`: the run plans and waits for its plan to be approved (docs/api.md); normal when absent. */
  mode?: "plan";
  title?: string;
  config?: Record<string, unknown>;
  skill?: string;
  metadata?: Record<string, string>;
  /** On whose behalf (a Slack or GitHub user); the API key's principal when absent. */
  creator?: Creator;
  /** `SLACK`, `GITHUB_WEBHOOK`, …; `API` when absent. */
  source?: string;
  /** Where the run was started: a Slack thread permalink, a GitHub comment URL. */
  trigger_url?: string;
  /** Images shared with the request (Slack files, GitHub comment images), as the API takes them. */
  attachments?: AttachmentInput[];
}

export interface RunsApiCallOptions {
  /** Makes a retried call (a redelivered webhook, a retyped command) land once. */
  idempotencyKey?: string;
}

export interface RunsApiCreateOptions extends RunsApiCallOptions {
  /** The run this create starts again (a card's Retry): the audit log says so (remote mode: a create). */
  retryOf?: string;
}

export interface RunsApiFollowupOptions extends RunsApiCallOptions {
  /** Images shared with the follow-up. */
  attachments?: AttachmentInput[];
}

export interface RunsApiListQuery {
  limit?: number;
  cursor?: string;
  sort_by?: "updated_at" | "created_at" | "title";
  sort_order?: "asc" | "desc";
  updated_after?: string;
  state?: string[];
  source?: string;
}

/** RunsApi over the run service of this process, acting as `caller` (the integration's service account). */
export class InProcessRunsApi implements RunsApi {
  private readonly service: RunService;
  private readonly caller: Caller & { surface: true };
  private readonly publicUrl: () => string;
  private readonly budgets: Pick<RunBudgets, "answer">;

  constructor(
    service: RunService,
    caller: Caller & { surface: true },
    publicUrl: () => string,
    budgets: Pick<RunBudgets, "answer">,
  ) {
    this.service = service;
    this.caller = caller;
    this.publicUrl = publicUrl;
    this.budgets = budgets;
  }

  async create(input: RunsApiCreate, opts: RunsApiCreateOptions = {}) {
    const { creator, source, trigger_url, ...body } = input;
    const created = await this.service.create(
      {
        caller: this.caller,
        ...(creator ? { creator } : {}),
        ...(source ? { source } : {}),
        ...(trigger_url ? { triggerUrl: trigger_url } : {}),
        ...(opts.idempotencyKey
          ? { idempotencyKey: opts.idempotencyKey, rawBody: idempotentBody(input) }
          : {}),
        ...(opts.retryOf ? { retryOf: opts.retryOf } : {}),
      },
      body,
    );
    return { run_id: created.run_id, state: created.state, at_capacity: created.at_capacity };
  }

  async get(runId: string): Promise<RunItem> {
    return toRunItem(await this.service.get(this.caller, runId), this.publicUrl());
  }

  async list(query: RunsApiListQuery) {
    const states = query.state?.filter((s) => s !== "") as ListInput["states"];
    const page = await this.service.list(this.caller, {
      limit: query.limit ?? 100,
      sortBy: query.sort_by ?? "updated_at",
      sortOrder: query.sort_order ?? "desc",
      ...(query.cursor ? { cursor: query.cursor } : {}),
      ...(query.updated_after ? { updatedAfter: query.updated_after } : {}),
      ...(states ? { states } : {}),
      ...(query.source ? { source: query.source } : {}),
    });
    const publicUrl = this.publicUrl();
    return {
      runs: page.runs.map((r) => toRunItem(r, publicUrl)),
      ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}),
    };
  }

  async followup(runId: string, message: string, opts: RunsApiFollowupOptions = {}) {
    return this.service.followup(
      {
        caller: this.caller,
        ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey, rawBody: { runId, message } } : {}),
      },
      runId,
      { message, ...(opts.attachments?.length ? { attachments: opts.attachments } : {}) },
    );
  }

  async cancel(runId: string, opts: RunsApiCallOptions & { by?: Creator } = {}): Promise<void> {
    await this.service.cancel(
      {
        caller: this.caller,
        ...(opts.by ? { creator: opts.by } : {}),
        ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}),
      },
      runId,
    );
  }

  async events(runId: string, after: number, limit: number): Promise<RunEventsPage> {
    const events = await this.service.events(this.caller, runId, after, limit);
    return { events, next_after: events.at(-1)?.seq ?? after };
  }

  approve(runId: string, answer: PlanAnswer, opts: RunsApiCallOptions = {}) {
    return answerPlan(
      this.service,
      {
        caller: this.caller,
        ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey, rawBody: { runId, answer } } : {}),
      },
      runId,
      answer,
    );
  }

  async budget(runId: string, answer: BudgetRequest, opts: RunsApiCallOptions & { by?: Creator } = {}) {
    const { run_id, state } = await this.budgets.answer(
      {
        caller: this.caller,
        ...(opts.by ? { creator: opts.by } : {}),
        ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey, rawBody: { runId, answer } } : {}),
      },
      runId,
      answer,
    );
    return { run_id, state };
  }
}

/**
 * What of a create's attachments its idempotency key covers: their names. A redelivery downloads the files
 * again; whatever it gets, the key already says it is the same request, and hashing megabytes of base64
 * per call would buy nothing.
 */
function idempotentBody(input: RunsApiCreate): unknown {
  if (!input.attachments) return input;
  return { ...input, attachments: input.attachments.map((a) => a.file_name) };
}

/**
 * The RunsApi of a part of this process (the Slack app, the GitHub app, the notifier) acting as its own
 * service account in the default team. No API key is involved: the record below only names the caller.
 */
export async function inProcessRunsApiFor(
  runService: RunService,
  budgets: Pick<RunBudgets, "answer">,
  publicUrl: () => string,
  who: { id: string; displayName: string; role: ApiKeyRole },
): Promise<InProcessRunsApi> {
  const { principal, team } = await runService.ensureServiceAccount(who);
  // A surface of this process: it sees its team's runs and asks RunAccess for each of its users itself.
  const caller: Caller & { surface: true } = {
    surface: true,
    key: {
      id: `in-process-${who.id}`,
      principalId: principal.id,
      name: `${who.displayName} (in process)`,
      role: who.role,
      prefix: "",
      createdAt: new Date(0).toISOString(),
      revokedAt: null,
    },
    principal,
    team,
  };
  return new InProcessRunsApi(runService, caller, publicUrl, budgets);
}
