import type { AttachmentInfo, NewAttachment } from "../model/attachment.ts";
import type { AudienceFilter, BoundPlace } from "../model/audience.ts";
import type { AuditEvent, AuditQuery, NewAuditEvent } from "../model/audit.ts";
import type {
  GitHubApproval,
  GitHubSignIn,
  GitHubSignInApproval,
  GitHubSignInRedemption,
  NewGitHubSignIn,
} from "../model/github-sign-in.ts";
import type {
  AgentIdentity,
  AgentIdentityPatch,
  ApiKeyRecord,
  Caller,
  Principal,
  Team,
} from "../model/identity.ts";
import type { Artifact, FollowupRecord, RunEvent, RunEventType, RunRecord } from "../model/run.ts";
import type { RunState, Trigger } from "../model/run-state.ts";
import type { ScheduleLimits, ScheduleRecord } from "../model/schedule.ts";
import type { ThreadBinding } from "../model/thread-binding.ts";
import type {
  LoginLink,
  LoginLinkRedemption,
  NewKeyWebSession,
  NewLoginLink,
  NewWebSession,
  WebSession,
} from "../model/web-session.ts";
import type { WebhookDelivery, WebhookEndpoint } from "../model/webhook.ts";
import type { StoreActivity } from "./activity.ts";
import type { ExecutorRecords } from "./executor-records.ts";
import type { StoreSignals } from "./signals.ts";
import type {
  ArtifactFile,
  ArtifactHead,
  CardChange,
  CardState,
  ChannelKey,
  ChannelSettings,
  ClaimedWebhookDelivery,
  IdempotencyClaim,
  IdempotencyRecords,
  IdempotentResult,
  InboundDelivery,
  InterruptResult,
  NewApiKey,
  NewArtifactFile,
  NewInboundDelivery,
  NewRunEvent,
  NotifierCursor,
  NotifierState,
  OutboxMessage,
  OutboxRow,
  OutboxState,
  ProgressRange,
  RunListQuery,
  RunPatch,
  RunProgress,
  ScheduleChange,
  ScheduleFire,
  ScheduleFireResult,
  UsageSummary,
  WebhookAttemptResult,
  WebhookDeliveryPage,
} from "./store-types.ts";
import type { UsageReport, UsageReportQuery } from "./usage-report.ts";

// The Store's own record types live in store-types.ts; importers keep reading them from here.
export type { StoreActivity } from "./activity.ts";
export type { EndOptions, ExecutionEnd, NextClaim } from "./executor-records.ts";
export * from "./store-types.ts";

/**
 * Persistence for Dispatch. Every method that changes a run is atomic: the backend applies it as one
 * transaction (or one compare-and-set statement), so callers never see half of a change. Methods are
 * async so that networked backends (PostgreSQL) implement the same interface as the embedded SQLite one.
 */
export interface Store extends IdempotencyRecords, ExecutorRecords {
  readonly kind: string;
  /** Published after a change commits; the executor and event streams wait on these instead of polling. */
  readonly signals: StoreSignals;
  /** Commits and statements since the store opened (counted for tests and benches: bench/README.md). */
  readonly activity: StoreActivity;
  migrate(): Promise<void>;
  ping(): Promise<void>;
  /**
   * Whether an error thrown by this store means a concurrent change won (safe to retry: 409) or the
   * database cannot be reached (503), rather than a bug.
   */
  classifyError(err: unknown): "conflict" | "unavailable" | undefined;
  close(): Promise<void>;

  // Teams, principals, API keys
  ensureTeam(team: Team): Promise<Team>;
  ensurePrincipal(principal: Principal): Promise<Principal>;
  /** The team's user (not deleted) with this id, or else with this email (any case). */
  findUser(teamId: string, idOrEmail: string): Promise<Principal | undefined>;
  insertApiKey(key: NewApiKey): Promise<ApiKeyRecord>;
  findCallerByKeyHash(hash: string): Promise<Caller | undefined>;
  listApiKeys(): Promise<Array<ApiKeyRecord & { principal: Principal }>>;
  revokeApiKey(idOrPrefix: string, at: string): Promise<ApiKeyRecord | undefined>;
  /**
   * A value that changes whenever another process may have revoked an API key, read without waiting: a
   * cache of callers is valid only while it is unchanged (revocations in this process are signalled,
   * `api_key_revoked`). Undefined while revocations made elsewhere cannot reach this process at all;
   * nothing cached may be used then.
   */
  keyRevocationMark(): number | undefined;
  /**
   * Whether keyRevocationMark reflects every revocation another process committed before the call (SQLite:
   * the database's change counter); false where other processes' revocations arrive as notifications just
   * after their commit (PostgreSQL: `api_key_revoked` over LISTEN), which a cache may lag by that long.
   */
  readonly keyRevocationMarkExact: boolean;
  countActiveApiKeys(): Promise<number>;

  // Agent identities: a team's service-account principals that are not deleted
  createIdentity(identity: AgentIdentity): Promise<AgentIdentity>;
  /** Undefined for another team's identity, a user, or a deleted identity. */
  getIdentity(teamId: string, id: string): Promise<AgentIdentity | undefined>;
  /** Oldest first. */
  listIdentities(teamId: string): Promise<AgentIdentity[]>;
  updateIdentity(teamId: string, id: string, patch: AgentIdentityPatch): Promise<AgentIdentity | undefined>;
  /**
   * Marks the identity deleted and revokes all its API keys at once (publishing `api_key_revoked` for
   * each); undefined when the team has no such identity.
   */
  deleteIdentity(teamId: string, id: string, at: string): Promise<{ revokedKeyIds: string[] } | undefined>;

  // Runs
  /**
   * Inserts a QUEUED run with its attachments, or with `idempotency` returns the remembered response of an
   * earlier equal request. `traceparent`: the creating request's span, which its executions link to;
   * `audit`: the creation's audit entry. Both go in with the run (not on a replay): one commit per create.
   * `liveKeyId`: the request's key; PostgreSQL writes only while it is live (else `key_revoked`). */
  createRun(
    run: RunRecord,
    idempotency?: IdempotencyClaim,
    attachments?: readonly NewAttachment[],
    also?: { traceparent?: string; audit?: NewAuditEvent; liveKeyId?: string },
  ): Promise<IdempotentResult<RunRecord> | { kind: "key_revoked" }>;
  getRun(teamId: string, runId: string): Promise<RunRecord | undefined>;
  getRunBySession(sessionId: string): Promise<RunRecord | undefined>;
  /**
   * The team's runs (the latest first, at most URL_MATCHES_MAX) whose trigger URL is `url` (or `url` with an
   * anchor or query after it), or with an artifact whose `data.url` is `url`.
   */
  findRunsByUrl(teamId: string, url: string): Promise<RunRecord[]>;
  listRuns(teamId: string, query: RunListQuery): Promise<{ runs: RunRecord[]; hasMore: boolean }>;
  /** Across teams, or with `teamId` that team's runs only (the web dashboard's counts). */
  countRunsByState(teamId?: string, audience?: AudienceFilter): Promise<Record<RunState, number>>;
  /**
   * The team's runs created at or after `since` (RFC 3339 UTC), summed per UTC day of creation and per
   * requester: runs, tokens and cost (null when none of them recorded a cost). The web dashboard's usage.
   */
  summarizeUsage(teamId: string, since: string, audience?: AudienceFilter): Promise<UsageSummary>;
  /**
   * The team's runs created in [from, to), grouped by the query's keys and summed (GET /api/v1/usage):
   * runs, tokens and cost, with the runs whose cost is not known counted apart.
   */
  reportUsage(teamId: string, query: UsageReportQuery): Promise<UsageReport>;
  /** QUEUED plus INPROGRESS runs across teams (what the executors have to do), counted up to `upTo`. */
  countActiveRuns(upTo: number): Promise<number>;
  /** Those of `runIds` that are in a terminal state reached before `before` (workspace retention). */
  runsFinishedBefore(runIds: string[], before: string): Promise<string[]>;
  /**
   * Applies `trigger` if the run's state allows it (and, with `workerId`, only while that worker holds
   * the lease), sets `patch`, bumps updated_at and appends a `state` event, all at once. Returns the
   * updated run, or undefined when the compare-and-set lost.
   */
  transition(
    runId: string,
    trigger: Trigger,
    patch?: RunPatch,
    opts?: { workerId?: string },
  ): Promise<RunRecord | undefined>;

  /**
   * Cancels the team's run if it is QUEUED or INPROGRESS (a `transition("cancel")` that also honours an
   * idempotency claim). Undefined when the team has no such run; `refused` with the state it is in.
   */
  cancelRun(
    teamId: string,
    runId: string,
    patch: RunPatch,
    idempotency?: IdempotencyClaim,
  ): Promise<IdempotentResult<RunRecord> | { kind: "refused"; state: RunState } | undefined>;

  // Artifacts
  /**
   * Adds an artifact to the run (whatever its state: a patch is kept even for a cancelled run) with an
   * `artifact` event, and stores a FILE artifact's bytes. A PULL_REQUEST artifact with the url of one the
   * run already has replaces it in place (same created_at). Undefined when there is no such run.
   */
  recordArtifact(runId: string, artifact: Artifact, file?: NewArtifactFile): Promise<RunRecord | undefined>;
  /** A FILE artifact of the team's runs by its uid (the artifact as on the run, and its stored size). */
  getArtifactFile(teamId: string, uid: string): Promise<ArtifactFile | undefined>;
  readArtifactContent(teamId: string, uid: string): Promise<Uint8Array | undefined>;
  /**
   * The first `maxBytes` (at most ARTIFACT_HEAD_BYTES) of a FILE artifact of the team's runs, and its
   * whole size: what a page shows of a patch, read without reading the rest of it.
   */
  readArtifactHead(teamId: string, uid: string, maxBytes: number): Promise<ArtifactHead | undefined>;

  // Attachments: images sent with a create or a follow-up, their bytes stored once per SHA-256
  /** The team's run's attachments, oldest first (a create's before its follow-ups'), without bytes. */
  listAttachments(teamId: string, runId: string): Promise<AttachmentInfo[]>;
  getAttachment(teamId: string, attachmentId: string): Promise<AttachmentInfo | undefined>;
  readAttachmentContent(teamId: string, attachmentId: string): Promise<Uint8Array | undefined>;

  // Follow-ups
  /**
   * Records a follow-up (with its attachments) and routes it by the run's state in the same transaction
   * (docs/api.md); the `followup` event names the attachments.
   */
  addFollowup(
    teamId: string,
    runId: string,
    followup: { id: string; message: string; mode: string; attachments?: readonly NewAttachment[] },
    idempotency?: IdempotencyClaim,
  ): Promise<IdempotentResult<{ followup: FollowupRecord; run: RunRecord }> | undefined>;
  /**
   * Marks every undelivered follow-up of the run delivered to `execution` and returns them, oldest first.
   * With `workerId`, only while that worker holds the run (a worker that lost it takes none).
   */
  takePendingFollowups(runId: string, execution: number, workerId?: string): Promise<FollowupRecord[]>;
  /** The follow-ups delivered to the run's `execution`, oldest first: what a resumed execution was given. */
  listDeliveredFollowups(runId: string, execution: number): Promise<FollowupRecord[]>;
  /** The messages of follow-ups that were added to these runs' prompts before they started, oldest first. */
  listQueuedPrompts(runIds: readonly string[]): Promise<Map<string, string[]>>;
  /**
   * Asks the executor to stop the agent's turn under way (`interrupts` grows, a `log` event says who):
   * only an INPROGRESS run whose agent has started; any other is refused with its state.
   */
  interruptRun(teamId: string, runId: string, by: string): Promise<InterruptResult>;

  // Transcript
  /**
   * Appends an event (and so does every method that appends one, such as `transition`). `data` over
   * EVENT_DATA_MAX_BYTES is stored cut by `capEventData`: long strings keep their beginning and end, and
   * the event carries `truncated: true` and `original_bytes`. Returns the event as stored.
   */
  appendEvent(runId: string, type: RunEventType, data: Record<string, unknown>): Promise<RunEvent>;
  /**
   * Appends events of the execution `workerId` runs, in order and in one transaction: only while that
   * worker holds the run (lease fencing: a worker that lost the run writes nothing to it). Undefined when
   * it does not.
   */
  appendWorkerEvents(
    runId: string,
    workerId: string,
    events: readonly NewRunEvent[],
  ): Promise<RunEvent[] | undefined>;
  listEvents(runId: string, after: number, limit: number): Promise<RunEvent[]>;

  // Progress (stall detection, model/stall.ts): when a run last had a transcript event (RunRecord.lastEventAt)
  /**
   * Runs in progress whose latest event is after `after` and at or before `before` (each bound optional),
   * oldest progress first, at most `limit`, past `cursor`: read through an index of the runs in progress by
   * progress, never a scan of every run. What the notifier's stall check asks.
   */
  listRunsByProgress(range: ProgressRange): Promise<RunProgress[]>;
  /** The time of the latest event of each of these runs (absent: no such run). */
  getRunProgress(runIds: string[]): Promise<Map<string, string>>;

  // Integrations
  /**
   * Records an inbound delivery key; true the first time, false for a duplicate. With `windowMs`, a key
   * older than the window counts as new again (a command retyped a minute later is a new request).
   */
  claimInbound(key: string, source: string, windowMs?: number): Promise<boolean>;
  /**
   * Records a verified delivery durably, in one transaction with its dedupe keys (as `claimInbound`):
   * true when it was stored for handling, false (nothing stored) when any key was seen before.
   */
  acceptInbound(delivery: NewInboundDelivery): Promise<boolean>;
  /**
   * Claims up to `limit` deliveries of `source` for `owner` with a lease, oldest first: those not done, not
   * leased (or whose lease expired: their owner died) and with fewer than `maxAttempts` attempts so far.
   */
  claimInboundDeliveries(
    owner: string,
    opts: { source: string; limit: number; leaseMs: number; maxAttempts: number },
  ): Promise<InboundDelivery[]>;
  /** Marks a delivery handled and drops its payload (its dedupe keys stay); false when `owner` no longer holds it. */
  finishInboundDelivery(id: number, owner: string): Promise<boolean>;
  /** Hands a delivery back after a failed attempt; it is due again at `retryAt`. */
  releaseInboundDelivery(id: number, owner: string, retryAt: string): Promise<void>;
  /** Binds a thread to a run (its first binding is its origin); binding the same thread again changes nothing. */
  bindThread(binding: ThreadBinding): Promise<void>;
  /** The run's origin thread, or with `threadKey` that one of its threads. */
  getThreadBinding(runId: string, threadKey?: string): Promise<ThreadBinding | undefined>;
  /** Every thread of the run, its origin first. */
  listThreadBindings(runId: string): Promise<ThreadBinding[]>;
  /** Someone asked the run something from this thread at `at` (its next final reply goes there too). */
  markThreadAsked(runId: string, threadKey: string, at: string): Promise<void>;
  /** The thread stops following the run (`why`: "merged", "closed"); true the first time. */
  endThread(runId: string, threadKey: string, why: string): Promise<boolean>;
  /** Every place (platform, workspace, channel) a run of the team is bound to, once each. */
  listBoundPlaces(teamId: string): Promise<BoundPlace[]>;
  /** The binding of the latest run started in a thread (Slack) or on an issue (GitHub). */
  findLatestBinding(
    where: Pick<ThreadBinding, "platform" | "workspace" | "channel"> & { thread: string | null },
  ): Promise<ThreadBinding | undefined>;
  /** The bindings of a Slack channel or a GitHub issue (every thread of it), newest first. */
  listChannelBindings(
    where: Pick<ThreadBinding, "platform" | "workspace" | "channel">,
    limit: number,
  ): Promise<ThreadBinding[]>;
  /** Sets the thread of a binding that had none (a slash command's status card became its root). */
  setBindingThread(runId: string, threadKey: string, thread: string): Promise<void>;

  // Channel settings (chat integrations): a channel's default repository (docs/delivery.md) and agent
  getChannelSettings(where: ChannelKey): Promise<ChannelSettings | undefined>;
  /** Sets (or with null clears) the channel's default repository and base; returns the settings now. */
  setChannelRepository(
    where: ChannelKey,
    repository: { repository: string; base?: string } | null,
    by: string,
    at: string,
  ): Promise<ChannelSettings>;
  /** Sets (or with null clears) the channel's default agent (a harness registry key); returns the settings now. */
  setChannelAgent(where: ChannelKey, agent: string | null, by: string, at: string): Promise<ChannelSettings>;

  // Schedules (docs/api.md): a team's cron-driven agents and their firings
  /**
   * Inserts the schedule, or with `idempotency` returns the remembered response of an earlier equal
   * request; `name_taken` when the team has a schedule of that name already; `team_limit` or
   * `creator_limit` when the team, or the schedule's creator in it, has as many as `limits` allow.
   */
  createSchedule(
    schedule: ScheduleRecord,
    limits: ScheduleLimits,
    idempotency?: IdempotencyClaim,
  ): Promise<IdempotentResult<ScheduleRecord> | "name_taken" | "team_limit" | "creator_limit">;
  /** Undefined for another team's schedule or none. */
  getSchedule(teamId: string, id: string): Promise<ScheduleRecord | undefined>;
  /** The team's schedules sorted by name (then id); with `reportTo`, only those reporting to that channel. */
  listSchedules(teamId: string, opts?: { reportTo?: ChannelKey }): Promise<ScheduleRecord[]>;
  /**
   * Replaces the user's fields (PUT, pause, resume), bumps `revision`, and moves `activeSince` to
   * `change.updatedAt` when the schedule is re-enabled or its cron or time zone changes (so that nothing
   * missed while paused or under the old cron fires). With `change.takeOver`, the editor becomes the
   * schedule's owner (`createdBy`) if someone else was — refused with `creator_limit` when the editor
   * owns `takeOver.perCreator` schedules of the team already. Undefined when the team has no such
   * schedule; `name_taken` when another schedule of the team has the new name.
   */
  updateSchedule(
    teamId: string,
    id: string,
    change: ScheduleChange,
  ): Promise<ScheduleRecord | "name_taken" | "creator_limit" | undefined>;
  /** Deletes the schedule and its firing records (its runs stay); false when the team has no such schedule. */
  deleteSchedule(teamId: string, id: string): Promise<boolean>;
  /** Every enabled schedule of every team: what the scheduler watches. */
  listEnabledSchedules(): Promise<ScheduleRecord[]>;
  /**
   * One firing, atomically: claims (schedule, fire time) and inserts its run (QUEUED, with a thread
   * binding when the schedule reports somewhere), records last_ran and clears last_spawn_error — or
   * changes nothing. `already_fired` when this or a later fire time made a run already (another scheduler,
   * or before a restart); `stale` when the schedule is gone, paused or changed since `fire.revision`;
   * `skipped` when the run of the schedule's latest firing is still QUEUED: the fire time is used up
   * without a run, and last_spawn_error says why.
   */
  fireSchedule(fire: ScheduleFire, run: RunRecord): Promise<ScheduleFireResult>;
  /** Records why a firing could not create its run (shown as last_spawn_error); false when the schedule is gone. */
  recordScheduleError(scheduleId: string, error: string): Promise<boolean>;

  /** Drops idempotency records older than the retention window. */
  pruneIdempotencyKeys(olderThan: string): Promise<number>;
  /** Drops inbound delivery keys and deliveries older than the retention window. */
  pruneInbox(olderThan: string): Promise<number>;

  // Notifier: read position, status cards, outbox (docs/architecture.md)
  getNotifierCursor(name: string): Promise<NotifierCursor | undefined>;
  setNotifierCursor(name: string, cursor: NotifierCursor): Promise<void>;
  /** The threads of each of these runs (origin first) and their cards, in one read (runs without either are absent). */
  loadNotifierState(runIds: string[]): Promise<Map<string, NotifierState>>;
  /** The card of one thread of a run; without `threadKey`, its origin's. */
  getCardState(runId: string, threadKey?: string): Promise<CardState | undefined>;
  /**
   * Records what a run's card now shows and enqueues its messages, atomically and only if the card is still
   * at `expectedVersion` (0: no card yet); false when another notifier got there first. A new card message
   * supersedes the card's pending (unclaimed) one and is due no sooner than `editIntervalMs` after the
   * previous card message. Messages whose dedupe key exists already are skipped.
   */
  recordCardChange(change: CardChange): Promise<boolean>;
  /**
   * Claims due outbox rows for `owner` with a lease: pending rows (and rows whose lease expired) that are
   * first in their stream, skipping `excludeTargets`. A thread message waits until its thread's card exists.
   */
  claimOutbox(
    owner: string,
    opts: { limit: number; leaseMs: number; excludeTargets?: string[] },
  ): Promise<OutboxRow[]>;
  /** Counts an attempt and renews the lease; the attempt number, or undefined when `owner` lost the row. */
  beginOutboxAttempt(id: number, owner: string, leaseMs: number): Promise<number | undefined>;
  /**
   * Marks the row sent; with `cardRef`, stores the card's message in the row's thread's card state, and with
   * `thread`, makes it the thread of that binding when it has none (a Slack slash command's card is the root
   * of its thread; a GitHub binding's thread stays null, the issue is its thread).
   */
  completeOutbox(id: number, owner: string, result?: { cardRef?: string; thread?: string }): Promise<boolean>;
  /** Back to pending, due at `notBefore` (also used to hand a row back on shutdown). */
  retryOutbox(id: number, owner: string, notBefore: string, error: string | null): Promise<boolean>;
  deadLetterOutbox(id: number, owner: string, error: string): Promise<boolean>;
  /**
   * Enqueues messages that belong to no card change (GitHub: the 👀 reaction on a triggering comment, a
   * refusal reply), due now; `runId` groups them (a run id, or a pseudo id such as "github:o/r#1").
   * Messages whose dedupe key exists already are skipped.
   */
  enqueueOutbox(runId: string, messages: OutboxMessage[]): Promise<void>;
  countOutboxByState(): Promise<Record<OutboxState, number>>;
  listOutbox(runId: string): Promise<OutboxRow[]>;
  /** Drops sent and superseded rows older than `olderThan`. */
  pruneOutbox(olderThan: string): Promise<number>;

  // Webhooks (docs/api.md): a team's endpoints, and each run event's delivery to each of them. Every change
  // a webhook reports appends a transcript event; the store writes the event's deliveries (model/webhook.ts
  // webhookEventOf) in the transaction that appends it, for every endpoint of the run's team that takes it.
  createWebhookEndpoint(endpoint: WebhookEndpoint): Promise<void>;
  /** The team's endpoints, oldest first. */
  listWebhookEndpoints(teamId: string): Promise<WebhookEndpoint[]>;
  getWebhookEndpoint(teamId: string, id: string): Promise<WebhookEndpoint | undefined>;
  /** Deletes the endpoint with its deliveries (none is sent after); false when the team has no such endpoint. */
  deleteWebhookEndpoint(teamId: string, id: string): Promise<boolean>;
  /** The endpoint's deliveries, newest first; undefined when the team has no such endpoint. */
  listWebhookDeliveries(
    teamId: string,
    endpointId: string,
    page: WebhookDeliveryPage,
  ): Promise<{ deliveries: WebhookDelivery[]; hasMore: boolean } | undefined>;
  getWebhookDelivery(teamId: string, endpointId: string, id: number): Promise<WebhookDelivery | undefined>;
  /**
   * Sends a delivery again, afresh: pending, due at `at`, no attempts counted (its event and webhook-id
   * unchanged). `sending` while an attempt is under way (nothing changes); undefined when there is no such
   * delivery of the team's endpoint.
   */
  redeliverWebhook(
    teamId: string,
    endpointId: string,
    id: number,
    at: string,
  ): Promise<WebhookDelivery | "sending" | undefined>;
  /**
   * Claims up to `limit` due deliveries for `owner` with a lease, counting an attempt on each: pending ones
   * (and those whose lease expired: their sender died) that are first among the unfinished deliveries of
   * their run to their endpoint, so that each endpoint gets a run's events in order.
   */
  claimWebhookDeliveries(
    owner: string,
    opts: { limit: number; leaseMs: number },
  ): Promise<ClaimedWebhookDelivery[]>;
  /** Records how the attempt went; false when `owner` no longer holds the delivery (nothing changes). */
  finishWebhookAttempt(id: number, owner: string, result: WebhookAttemptResult): Promise<boolean>;
  /** Hands a claimed delivery back unattempted (shutting down): pending, due now, the attempt uncounted. */
  releaseWebhookDelivery(id: number, owner: string): Promise<void>;
  /** Drops deliveries that succeeded or failed before `olderThan`, and events left with no delivery. */
  pruneWebhookDeliveries(olderThan: string): Promise<number>;

  // The audit log (docs/api.md): who did what; entries are only appended, and pruned after the retention
  appendAuditEvent(event: NewAuditEvent): Promise<void>;
  /** The team's entries matching `query`, newest first. */
  listAuditEvents(teamId: string, query: AuditQuery): Promise<{ events: AuditEvent[]; hasMore: boolean }>;
  /** Drops entries from before `olderThan`. */
  pruneAuditEvents(olderThan: string): Promise<number>;

  /** The span of the request that created the run (createRun's `traceparent`), which its executions link to. */
  getRunTrace(runId: string): Promise<string | undefined>;

  // Web sign-in (docs/surfaces.md): one-time login links and browser sessions, stored only as hashes
  createLoginLink(link: NewLoginLink): Promise<void>;
  /** The link whose token hashes to `tokenHash`, in whatever state it is; reading it changes nothing. */
  findLoginLink(tokenHash: string): Promise<LoginLink | undefined>;
  /**
   * Marks the link used and opens `session` for its principal, atomically: of concurrent redemptions of one
   * link exactly one signs in. Refused (nothing changes) when the link is unknown, used, or expired at
   * `session.createdAt`.
   */
  redeemLoginLink(tokenHash: string, session: NewWebSession): Promise<LoginLinkRedemption>;
  /** A session opened with an API key (the admin sign-in form); it ends when that key is revoked. */
  createKeyWebSession(session: NewKeyWebSession): Promise<WebSession>;
  /** The session if live at `at`: not revoked, not expired, its principal (and key) still valid. */
  findWebSession(idHash: string, at: string): Promise<WebSession | undefined>;
  /** False when there was no such session or it was revoked already. */
  revokeWebSession(idHash: string, at: string): Promise<boolean>;
  /**
   * Drops links and GitHub sign-ins that expired, and sessions that expired or were revoked, before
   * `olderThan`.
   */
  pruneWebSignIns(olderThan: string): Promise<number>;

  // GitHub sign-in: a browser's pending sign-in, approved by a comment, redeemed by that browser
  /** False (nothing stored) when the browser hash or the code is taken already: draw another code. */
  createGitHubSignIn(signIn: NewGitHubSignIn): Promise<boolean>;
  /** The sign-in of the browser whose cookie hashes to `browserHash`, in whatever state it is. */
  findGitHubSignIn(browserHash: string): Promise<GitHubSignIn | undefined>;
  /**
   * Approves the sign-in of `code` for `approval.principalId`. Refused (nothing changes) when the code is
   * unknown, expired at `approval.at`, used, or approved for another principal; approving again for the
   * same principal is approved (a redelivered comment).
   */
  approveGitHubSignIn(code: string, approval: GitHubSignInApproval): Promise<GitHubApproval>;
  /**
   * Marks the browser's approved sign-in used and opens `session` for its principal, atomically: of
   * concurrent redemptions exactly one signs in. Refused when unknown, not approved yet, expired at
   * `session.createdAt`, or used.
   */
  redeemGitHubSignIn(browserHash: string, session: NewWebSession): Promise<GitHubSignInRedemption>;
}
