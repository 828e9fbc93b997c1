import type { SteerAction } from "../access/audience.ts";
import type { RunAccess, Viewer } from "../access/run-access.ts";
import type { AudienceFilter } from "../model/audience.ts";
import { RunError } from "../model/errors.ts";
import { issueArtifactOf } from "../model/external-reference.ts";
import type { Caller } from "../model/identity.ts";
import type { AgentConfig, Creator, FollowupOutcome, RunEvent, RunRecord } from "../model/run.ts";
import { isRunMode, type RunMode } from "../model/run-mode.ts";
import type { RunState } from "../model/run-state.ts";
import type {
  IdempotencyClaim,
  RunListQuery,
  ScheduleFire,
  ScheduleFireResult,
  Store,
} from "../store/store.ts";
import { activeTraceparent } from "../telemetry/spans.ts";
import { replayedAnswer } from "./answer-idempotency.ts";
import { type AttachmentInput, decodeAttachments } from "./attachments.ts";
import { keyReused, requestClaim } from "./idempotency-claim.ts";
import { decodeCursor, encodeCursor } from "./list-cursor.ts";
import { RandomIds } from "./random-ids.ts";
import { creatorOf, RunAudit } from "./run-audit.ts";
import { checkCostLimit, resolveConfig, resolveCreateTime } from "./run-config.ts";
import { findByExternalReference } from "./run-lookup.ts";
import { type RepositoryDelivery, resolveRepository } from "./run-repository.ts";
import { deriveTitle, skillNameOf } from "./run-title.ts";
import { ensureServiceAccount } from "./service-accounts.ts";

export interface CreateRunInput {
  prompt?: string | null;
  title?: string | null;
  config?: Record<string, unknown> | null;
  skill?: string | null;
  metadata?: Record<string, string> | null;
  attachments?: readonly AttachmentInput[] | null;
  /** Oz's: false asks for a personal run, which Dispatch does not have (every run is its team's). */
  team?: boolean | null;
  /** Oz's: accepted; every Dispatch run takes follow-ups while it runs. */
  interactive?: boolean | null;
  /** Continue that run (a run is its own conversation): the prompt becomes a follow-up to it. */
  conversation_id?: string | null;
  /** The run that spawned this one: must be a run of the same team. */
  parent_run_id?: string | null;
  mode?: string | null;
}

/** Who asks, and on whose behalf: integrations create runs for a Slack or GitHub user. */
export interface RequestContext {
  /** An API key's caller, a signed-in web session, or a surface of this process acting for its users. */
  caller: Viewer & Pick<Caller, "principal" | "team">;
  creator?: Creator;
  source?: string;
  triggerUrl?: string;
  idempotencyKey?: string;
  /** The request as parsed JSON; equal bodies under one idempotency key are one request. */
  rawBody?: unknown;
  /** The run this create starts again ("Retry"): audited as a retry of it. */
  retryOf?: string;
  /** The API key of the request, which the store checks is live where it writes the run (Store.createRun). */
  liveKeyId?: string;
}

export interface CreateRunResult {
  run_id: string;
  task_id: string;
  /** QUEUED for a new run; with conversation_id, the continued run's state after the follow-up. */
  state: RunState;
  at_capacity: boolean;
}

export interface ListInput extends Omit<RunListQuery, "after"> {
  cursor?: string;
}

export interface RunServiceOptions {
  /** Who may see and steer which run (docs/surfaces.md): every read and action asks it. */
  access: RunAccess;
  defaultModel?: string;
  /** Executor slots across the deployment; `at_capacity` says a new run will wait for one. */
  capacity: number;
  /**
   * Why this process, whose worker would execute its runs, cannot start any (no sandbox): new runs and
   * follow-ups are refused with resource_unavailable instead of waiting QUEUED for nothing.
   */
  runsRefused?: string;
  /** `url` MCP servers runs may name (`mcp.allowed_urls`); any other is refused at create, all when absent. */
  mcpAllowedUrls?: readonly string[];
  /** Configured environment ids: any other `environment_id` is refused at create. Unchecked when absent. */
  environmentIds?: readonly string[];
  /**
   * Delivery (docs/delivery.md): where owner/repo lives, which other remotes runs may name (file://, hosts of
   * git.allowed_hosts) and whether pull requests can be opened (GitHub credentials are configured). Runs
   * may not name a repository without it.
   */
  delivery?: RepositoryDelivery;
  /**
   * Why the harness (registry key) cannot run this config on this server, or undefined when it can
   * (HarnessRegistry.refusal). Refused at create with operation_not_supported; unchecked when absent.
   */
  harnessRefusal?: (key: string, config: AgentConfig) => string | undefined;
  /**
   * Cost limits (run-cost.ts): DISPATCH_MAX_COST_USD, and the model a config would call that has no price.
   * A run with a limit whose model has none is refused at create: its calls could not be counted.
   * Unchecked when absent.
   */
  cost?: { defaultMaxCostUsd?: number; unpricedModel(config: AgentConfig): string | undefined };
  /** Resolves `skill_spec` at create where it can be (local sources): an unknown skill is refused. */
  skills?: {
    resolveNow(
      spec: string,
    ): Promise<
      | { kind: "found"; skill: { name: string; description?: string; body: string; fullPath: string } }
      | { kind: "not_found"; message: string }
      | { kind: "deferred" }
    >;
  };
}

/** Run, follow-up and session ids: one generator for the process, so ids keep their creation order. */
const ids = new RandomIds();

/**
 * The run lifecycle behind every surface (HTTP API, Slack, GitHub, CLI). It validates nothing about
 * HTTP; it decides titles, defaults, idempotency and routing, and leaves atomicity to the store.
 */
export class RunService {
  private readonly store: Store;
  private readonly options: RunServiceOptions;
  private readonly audit: RunAudit;
  /** This event-loop turn's answer of atCapacity, shared by the creates of the turn. */
  private capacityThisTurn: Promise<boolean> | undefined;

  constructor(store: Store, options: RunServiceOptions) {
    this.store = store;
    this.options = options;
    this.audit = new RunAudit(store);
  }

  /** The run `create` inserts, validated and resolved but not stored (attachments apart). */
  private async build(ctx: RequestContext, input: CreateRunInput): Promise<RunRecord> {
    const now = new Date().toISOString();
    const agentConfig = resolveConfig(this.options, input);
    const mode = this.requestedMode(input.mode);
    const harnessKey = agentConfig.harness?.type ?? "scripted";
    const refusal = this.options.harnessRefusal?.(harnessKey, agentConfig);
    if (refusal) throw new RunError("operation_not_supported", refusal);
    checkCostLimit(this.options, agentConfig);
    const parentRunId = input.parent_run_id ?? undefined;
    const parent = parentRunId !== undefined ? await this.visible(ctx.caller, parentRunId) : undefined;
    if (parentRunId !== undefined && !parent) {
      throw new RunError("invalid_request", `parent_run_id: no run ${parentRunId} in this team`);
    }
    const agentSkill = await resolveCreateTime(this.options, agentConfig, input);
    const skillName =
      agentSkill?.name ?? (agentConfig.skill_spec ? skillNameOf(agentConfig.skill_spec) : undefined);
    const prompt = input.prompt ?? "";
    const id = ids.uuidv7();
    const title = input.title ?? deriveTitle(prompt, skillName);
    resolveRepository(agentConfig, id, title, this.options.delivery, { parent, triggerUrl: ctx.triggerUrl });
    const run: RunRecord = {
      id,
      teamId: ctx.caller.team.id,
      title,
      prompt,
      state: "QUEUED",
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
      runTimeMs: 0,
      executionStartedAt: null,
      execution: 1,
      sessionId: ids.token(24),
      triggerUrl: ctx.triggerUrl ?? null,
      source: ctx.source ?? "API",
      creator: ctx.creator ?? creatorOf(ctx.caller),
      agentConfig,
      agentSkill,
      statusMessage: null,
      artifacts: [issueArtifactOf(ctx.triggerUrl, now)].filter((a) => a !== undefined),
      requestUsage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
      metadata: input.metadata ?? {},
      workerId: null,
      leaseExpiresAt: null,
      agentStarted: false,
      requeueCount: 0,
      ...(parent ? { parentRunId: parent.id, rootRunId: parent.rootRunId ?? parent.id } : {}),
      ...(mode !== "normal" ? { mode } : {}),
    };
    return run;
  }

  async create(ctx: RequestContext, input: CreateRunInput): Promise<CreateRunResult> {
    if (input.team === false) {
      throw new RunError(
        "operation_not_supported",
        "team: Dispatch runs are always owned by the API key's team; send team: true or leave it out",
      );
    }
    if (input.conversation_id != null) return this.continueConversation(ctx, input, input.conversation_id);
    const attachments = await decodeAttachments(input.attachments);
    const run = await this.build(ctx, input);
    this.refuseWithoutExecutor();
    const atCapacity = await this.atCapacity();
    const respond = (created: unknown) => {
      const r = created as RunRecord;
      return { run_id: r.id, task_id: r.id, state: "QUEUED" as const, at_capacity: atCapacity };
    };
    const claim = this.idempotency(ctx, "create", respond);
    const details = { source: run.source, ...(ctx.retryOf ? { retry_of: ctx.retryOf } : {}) };
    const result = await this.store.createRun(run, claim, attachments, {
      // Its executions' traces link to the request creating it (docs/runtime.md, "Traces").
      traceparent: activeTraceparent(),
      // Stored with the run, in its transaction: a replayed create records nothing again.
      audit: this.audit.entry(ctx, ctx.retryOf ? "run.retried" : "run.created", run.id, details),
      ...(ctx.liveKeyId ? { liveKeyId: ctx.liveKeyId } : {}),
    });
    if (result.kind === "key_revoked") {
      throw new RunError("authentication_required", "unknown or revoked API key");
    }
    return this.unwrap(result, () => respond(run)) as ReturnType<typeof respond>;
  }

  /**
   * A create with `conversation_id` (Oz: "continue an existing conversation"). A Dispatch run is its own
   * conversation, so this is a follow-up to that run, routed by its state like any follow-up, and the
   * answer names that run. What only a new run can have (config, skill, title, metadata, a parent) is
   * refused rather than silently dropped.
   */
  private async continueConversation(
    ctx: RequestContext,
    input: CreateRunInput,
    runId: string,
  ): Promise<CreateRunResult> {
    for (const field of ["config", "skill", "title", "metadata", "parent_run_id"] as const) {
      if (input[field] != null) {
        throw new RunError(
          "invalid_request",
          `${field}: a create with conversation_id continues run ${runId}, which keeps its own; leave ${field} out`,
        );
      }
    }
    if (!input.prompt?.trim()) {
      throw new RunError(
        "invalid_request",
        "prompt: the message that continues the conversation is required",
      );
    }
    const mode = this.requestedMode(input.mode);
    const target = await this.visible(ctx.caller, runId);
    if (!target) {
      throw new RunError("invalid_request", `conversation_id: no run ${runId} in this team to continue`);
    }
    await this.mustSteer(ctx.caller, target, "followup");
    const attachments = await decodeAttachments(input.attachments);
    this.refuseWithoutExecutor();
    const atCapacity = await this.atCapacity();
    const respond = (value: unknown) => {
      const { run } = value as { run: RunRecord };
      return { run_id: run.id, task_id: run.id, state: run.state, at_capacity: atCapacity };
    };
    const result = await this.store.addFollowup(
      ctx.caller.team.id,
      runId,
      { id: ids.uuidv7(), message: input.prompt, mode, attachments },
      this.idempotency(ctx, "create", respond),
    );
    if (!result) {
      throw new RunError("invalid_request", `conversation_id: no run ${runId} in this team to continue`);
    }
    if (result.kind === "created") await this.audit.record(ctx, "run.followed_up", runId);
    return this.unwrap(result, () =>
      result.kind === "created" ? respond(result.value) : undefined,
    ) as CreateRunResult;
  }

  /** Refuses work this server cannot start (RunServiceOptions.runsRefused). */
  private refuseWithoutExecutor(): void {
    if (this.options.runsRefused) throw new RunError("resource_unavailable", this.options.runsRefused);
  }

  /**
   * Whether the active runs fill the executor slots (`at_capacity`). Without slots every run waits, so
   * nothing is counted. Otherwise the count is read once per event-loop turn: the creates of one turn
   * would all read the same number anyway, since their inserts commit together after the turn.
   */
  private atCapacity(): Promise<boolean> {
    const capacity = this.options.capacity;
    if (capacity <= 0) return Promise.resolve(true);
    if (!this.capacityThisTurn) {
      this.capacityThisTurn = this.store.countActiveRuns(capacity).then((n) => n >= capacity);
      setImmediate(() => {
        this.capacityThisTurn = undefined;
      });
    }
    return this.capacityThisTurn;
  }

  /** A request's `mode` as Dispatch runs it; `orchestrate` (Oz's child-run orchestration) is refused. */
  private requestedMode(mode: string | null | undefined): RunMode {
    if (mode === undefined || mode === null) return "normal";
    if (isRunMode(mode)) return mode;
    throw new RunError(
      "operation_not_supported",
      `mode: "${mode}" is not supported by Dispatch; use normal or plan`,
    );
  }

  /**
   * The run of one firing of a schedule: validated and resolved as `create` does (a config that became
   * invalid throws the same RunError), then inserted by the store in one transaction with the claim of
   * (schedule, fire time). Not `fired` when that slot fired already or the schedule changed meanwhile.
   */
  async createScheduled(
    ctx: RequestContext,
    input: CreateRunInput,
    fire: ScheduleFire & { scheduleName: string; cronSchedule: string },
  ): Promise<ScheduleFireResult> {
    const run = await this.build(ctx, input);
    run.schedule = {
      scheduleId: fire.scheduleId,
      scheduleName: fire.scheduleName,
      cronSchedule: fire.cronSchedule,
      fireTime: fire.fireTime,
    };
    return this.store.fireSchedule(
      { scheduleId: fire.scheduleId, revision: fire.revision, fireTime: fire.fireTime, at: fire.at },
      run,
    );
  }

  /** The run if it is the viewer's team's and the viewer is in its audience; else undefined. */
  private async visible(viewer: Viewer, runId: string): Promise<RunRecord | undefined> {
    const run = await this.store.getRun(viewer.team.id, runId);
    return run && (await this.options.access.sees(viewer, run)) ? run : undefined;
  }

  /** Refuses (403, in the access rule's words) a viewer who sees the run but may not do `action` to it. */
  private async mustSteer(viewer: Viewer, run: RunRecord, action: SteerAction): Promise<void> {
    const refusal = await this.options.access.steerRefusal(viewer, run, action);
    if (refusal) throw new RunError("not_authorized", `run ${run.id}: ${refusal.reason}`);
  }

  /** A run of the viewer's team in their audience (RunAccess); any other is "no run", as an unknown id. */
  async get(viewer: Viewer, runId: string): Promise<RunRecord> {
    const run = await this.visible(viewer, runId);
    if (!run) throw notFound(runId);
    return run;
  }

  /** A run the viewer may do `action` to: 404 outside their audience, 403 when the steering policy says no. */
  async getToSteer(viewer: Viewer, runId: string, action: SteerAction): Promise<RunRecord> {
    const run = await this.get(viewer, runId);
    await this.mustSteer(viewer, run, action);
    return run;
  }

  /** The viewer's audience among the team's runs, for counts and usage (undefined: all of them). */
  audienceOf(viewer: Viewer): Promise<AudienceFilter | undefined> {
    return this.options.access.filter(viewer);
  }

  async list(viewer: Viewer, input: ListInput): Promise<{ runs: RunRecord[]; nextCursor?: string }> {
    const { cursor, ...query } = input;
    const after = cursor ? decodeCursor(cursor, query.sortBy, query.sortOrder) : undefined;
    // As in Oz, the ancestor must be a run the caller can see; its descendants are what is listed.
    if (query.ancestorRunId !== undefined && !(await this.visible(viewer, query.ancestorRunId))) {
      throw new RunError("invalid_request", `ancestor_run_id: no run ${query.ancestorRunId} in this team`);
    }
    const audience = await this.options.access.filter(viewer);
    const { runs, hasMore } = await this.store.listRuns(viewer.team.id, {
      ...query,
      ...(after ? { after } : {}),
      ...(audience ? { audience } : {}),
    });
    const last = runs.at(-1);
    return {
      runs,
      ...(hasMore && last ? { nextCursor: encodeCursor(query.sortBy, query.sortOrder, last) } : {}),
    };
  }

  /**
   * For runs the viewer was given (by `get` or `list`): the follow-ups added to each one's prompt before it
   * started, oldest first (RunItem.submitted_prompt).
   */
  queuedPrompts(runs: readonly RunRecord[]): Promise<Map<string, string[]>> {
    return runs.length ? this.store.listQueuedPrompts(runs.map((r) => r.id)) : Promise.resolve(new Map());
  }

  /** A retried answer's first response (answer-idempotency.ts), looked up before its run's state is checked. */
  replayedAnswer(ctx: RequestContext, endpoint: string): Promise<{ response: unknown } | undefined> {
    return replayedAnswer(this.store, ctx, endpoint);
  }

  async followup(
    ctx: RequestContext,
    runId: string,
    input: { message: string; mode?: string | null; attachments?: readonly AttachmentInput[] | null },
  ): Promise<{ followup_id: string; outcome: FollowupOutcome }> {
    await this.getToSteer(ctx.caller, runId, "followup");
    const attachments = await decodeAttachments(input.attachments);
    this.refuseWithoutExecutor();
    const respond = (value: unknown) => {
      const { followup } = value as { followup: { id: string; outcome: FollowupOutcome } };
      return { followup_id: followup.id, outcome: followup.outcome };
    };
    const result = await this.store.addFollowup(
      ctx.caller.team.id,
      runId,
      { id: ids.uuidv7(), message: input.message, mode: this.requestedMode(input.mode), attachments },
      this.idempotency(ctx, `followup:${runId}`, respond),
    );
    if (!result) throw notFound(runId);
    if (result.kind === "created") await this.audit.record(ctx, "run.followed_up", runId);
    return this.unwrap(result, () =>
      result.kind === "created" ? respond(result.value) : undefined,
    ) as ReturnType<typeof respond>;
  }

  /**
   * Cancels a QUEUED or INPROGRESS run; the executor sees the change and stops its processes. With an
   * Idempotency-Key a retried cancel whose first response was lost gets that response again, not a 400.
   */
  async cancel(ctx: RequestContext, runId: string): Promise<string> {
    await this.getToSteer(ctx.caller, runId, "cancel");
    const who = ctx.creator?.display_name ?? ctx.caller.principal.displayName;
    const respond = (value: unknown) => (value as RunRecord).id;
    const result = await this.store.cancelRun(
      ctx.caller.team.id,
      runId,
      {
        statusMessage: { message: `Cancelled by ${who}`, error_code: "cancelled", retryable: false },
        eventData: { cancelled_by: who },
      },
      this.idempotency(ctx, `cancel:${runId}`, respond),
    );
    if (!result) throw notFound(runId);
    if (result.kind === "refused") {
      throw new RunError(
        "invalid_request",
        `run ${runId} is already ${result.state} and cannot be cancelled`,
      );
    }
    if (result.kind === "created") await this.audit.record(ctx, "run.cancelled", runId);
    return this.unwrap(result, () =>
      result.kind === "created" ? respond(result.value) : undefined,
    ) as string;
  }

  /**
   * Stops the agent's turn under way; the run, its sandbox and its workspace stay, and a follow-up starts
   * the next turn (docs/api.md). Only a run whose agent is running can be interrupted.
   */
  async interrupt(ctx: RequestContext, runId: string): Promise<RunRecord> {
    await this.getToSteer(ctx.caller, runId, "cancel");
    const who = ctx.creator?.display_name ?? ctx.caller.principal.displayName;
    const result = await this.store.interruptRun(ctx.caller.team.id, runId, who);
    if (!result) throw notFound(runId);
    if (result.kind === "refused") {
      throw new RunError(
        "invalid_request",
        result.state === "INPROGRESS"
          ? `run ${runId} is getting ready and its agent has not started: there is no turn to interrupt yet; cancel the run, or send a follow-up (the agent gets it when it starts)`
          : `run ${runId} is ${result.state}: only a run in progress can be interrupted`,
      );
    }
    return result.run;
  }

  /** The run (one the viewer sees) and its whole transcript, oldest first. */
  async history(viewer: Viewer, runId: string): Promise<{ run: RunRecord; events: RunEvent[] }> {
    const run = await this.get(viewer, runId);
    const events: RunEvent[] = [];
    for (;;) {
      const page = await this.store.listEvents(run.id, events.at(-1)?.seq ?? 0, HISTORY_PAGE);
      events.push(...page);
      if (page.length < HISTORY_PAGE) return { run, events };
    }
  }

  /**
   * Whom a run is for when the request names a user (`on_behalf_of` as a user id or email, the Warp
   * Platform API's form, docs/api.md): only an admin key or an agent identity's key may name one, and only
   * a user of its team.
   */
  async onBehalfOf(caller: Caller, who: string): Promise<Creator> {
    const isAgent =
      caller.principal.type === "service_account" &&
      (await this.store.getIdentity(caller.team.id, caller.principal.id)) !== undefined;
    if (caller.key.role !== "admin" && !isAgent) {
      throw new RunError(
        "not_authorized",
        "on_behalf_of: only an admin key or an agent identity's key may create a run for someone else; leave it out",
      );
    }
    const user = await this.store.findUser(caller.team.id, who);
    if (!user) {
      throw new RunError(
        "invalid_request",
        `on_behalf_of: no user "${who}" in this team; give a member's user id or email`,
      );
    }
    return creatorOf({ principal: user });
  }

  /** The run behind a URL outside Dispatch (a pull request, an issue, a Slack message): run-lookup.ts. */
  findByExternalReference(viewer: Viewer, url: string): Promise<RunRecord> {
    return findByExternalReference(url, {
      store: this.store,
      teamId: viewer.team.id,
      sees: (run) => this.options.access.sees(viewer, run),
    });
  }

  /** The run's transcript after seq `after`, at most `limit` events; the run must be one the viewer sees. */
  async events(viewer: Viewer, runId: string, after: number, limit: number): Promise<RunEvent[]> {
    const run = await this.get(viewer, runId);
    return this.store.listEvents(run.id, after, limit);
  }

  /**
   * The transcript of a run the asker was already allowed to see (by its team or its session id): an
   * event stream reads it again at every append.
   */
  transcript(runId: string, after: number, limit: number): Promise<RunEvent[]> {
    return this.store.listEvents(runId, after, limit);
  }

  /** Calls `listener` with the run's id whenever an event is appended to a transcript; returns the unsubscribe. */
  onEventAppended(listener: (runId: string) => void): () => void {
    this.store.signals.on("event_appended", listener);
    return () => this.store.signals.off("event_appended", listener);
  }

  /** The run behind a session link: the unguessable session id is the capability to view it, whoever asks. */
  findBySession(sessionId: string): Promise<RunRecord | undefined> {
    return this.store.getRunBySession(sessionId);
  }

  /** Resolves when the store answers; rejects when it cannot be reached. */
  ping(): Promise<void> {
    return this.store.ping();
  }

  /**
   * Tells the store's faults from bugs: a concurrent change that won (`conflict`), a database that cannot
   * be reached (`unavailable`), or neither.
   */
  classifyError(err: unknown): "conflict" | "unavailable" | undefined {
    return this.store.classifyError(err);
  }

  /** A service account of this process (an integration, the notifier) in the default team. */
  ensureServiceAccount(who: {
    id: string;
    displayName: string;
  }): Promise<Pick<Caller, "principal" | "team">> {
    return ensureServiceAccount(this.store, who);
  }

  private idempotency(
    ctx: RequestContext,
    endpoint: string,
    respond: (value: unknown) => unknown,
  ): IdempotencyClaim | undefined {
    return requestClaim(ctx, endpoint, respond);
  }

  private unwrap(
    result:
      | { kind: "created"; response: unknown }
      | { kind: "replayed"; response: unknown }
      | { kind: "key_reused" },
    fresh: () => unknown,
  ): unknown {
    if (result.kind === "key_reused") throw keyReused();
    return result.response ?? fresh();
  }
}

/** Events read at a time when a whole transcript is read. */
const HISTORY_PAGE = 1000;

function notFound(runId: string): RunError {
  return new RunError("resource_not_found", `no run ${runId}`);
}
