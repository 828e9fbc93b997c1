import type { AudienceFilter } from "../model/audience.ts";
import type { ApiKeyRole } from "../model/identity.ts";
import type { Artifact, RunEvent, RunRecord } from "../model/run.ts";
import type { RunState } from "../model/run-state.ts";
import type { ScheduleFields, ScheduleRecord } from "../model/schedule.ts";
import type { ThreadBinding } from "../model/thread-binding.ts";
import type { WebhookDelivery, WebhookEvent } from "../model/webhook.ts";

/** The records the Store interface takes and returns beyond the model's own (store.ts re-exports them). */

/** A transcript event to append; the store numbers and stamps it. */
export type NewRunEvent = Pick<RunEvent, "type" | "data">;

export interface ProgressRange {
  after?: string;
  before?: string;
  limit: number;
  /** The last entry of the previous page. */
  cursor?: RunProgress;
}

/** A run in progress and the time of its latest transcript event. */
export interface RunProgress {
  runId: string;
  lastEventAt: string;
}

/** A firing of a schedule as the scheduler prepared it. */
export interface ScheduleFire {
  scheduleId: string;
  /** The revision of the schedule the run was prepared from. */
  revision: number;
  /** The cron slot (RFC 3339 UTC). */
  fireTime: string;
  /** When it fired. */
  at: string;
}

/** What an edit of a schedule writes (store.updateSchedule). */
export type ScheduleChange = ScheduleFields &
  Pick<ScheduleRecord, "updatedBy" | "updatedAt"> & {
    /** Set when the edit makes the editor the owner (see updateSchedule); the most one person may own. */
    takeOver?: { perCreator: number };
  };

export type ScheduleFireResult =
  | { kind: "fired"; run: RunRecord }
  | { kind: "skipped"; queuedRunId: string }
  | { kind: "already_fired" }
  | { kind: "stale" };

/** A chat channel: a Slack channel of a workspace (team). */
export type ChannelKey = Pick<ThreadBinding, "platform" | "workspace" | "channel">;

export interface ChannelSettings extends ChannelKey {
  /** The default repository of runs started in the channel (`owner/repo` or a git URL); null when none. */
  repository: string | null;
  /** Its base branch, when the setting named one. */
  baseBranch: string | null;
  /** The default agent of runs started in the channel (a harness registry key: claude, builtin…); null when none. */
  agent: string | null;
  /** Who changed the settings last (a Slack user id). */
  updatedBy: string;
  updatedAt: string;
}

export interface NotifierCursor {
  updatedAt: string;
  runId: string;
}

/** What the notifier reads of a run: its threads (origin first) and the card of each, by thread key. */
export interface NotifierState {
  bindings: ThreadBinding[];
  cards: Map<string, CardState>;
}

/** The status card of one thread of a run (docs/surfaces.md: one card per thread). */
export interface CardState {
  runId: string;
  /** The binding it belongs to (model/thread-binding.ts threadKey). */
  threadKey: string;
  version: number;
  /** What the card shows, without the elapsed time. */
  fingerprint: string;
  /** updated_at of the run version this was computed from. */
  runUpdatedAt: string;
  lastCardAt: string | null;
  /** finished_at of the last terminal state that got its reply. */
  lastFinal: string | null;
  /** The card message, once posted. */
  cardRef: string | null;
}

export const OUTBOX_STATES = ["pending", "sending", "sent", "dead", "superseded"] as const;
export type OutboxState = (typeof OUTBOX_STATES)[number];
export type OutboxKind = "card" | "reply" | "reaction";

export interface OutboxMessage {
  dedupeKey: string;
  kind: OutboxKind;
  /** Rows of a stream go out in order. */
  stream: string;
  /** Rate limits apply per target (e.g. "slack:T1:C1"). */
  target: string;
  /** The thread binding it belongs to (threadKey), where it has one: its replies wait for that thread's card. */
  threadKey?: string;
  payload: Record<string, unknown>;
}

export interface NewInboundDelivery {
  /** The integration that handles it: "slack" | "github". */
  source: string;
  /** What the payload is (GitHub: the event name). */
  kind: string;
  /** The platform's id of the delivery (X-GitHub-Delivery, Slack event id). */
  deliveryId: string;
  /** The verified payload, as JSON. */
  payload: string;
  /** Dedupe keys; one seen before makes the delivery a duplicate. `windowMs` as in `claimInbound`. */
  keys: Array<{ key: string; windowMs?: number }>;
}

export interface InboundDelivery {
  id: number;
  source: string;
  kind: string;
  deliveryId: string;
  payload: string;
  /** Attempts so far, this one included. */
  attempts: number;
  receivedAt: string;
}

export interface OutboxRow extends OutboxMessage {
  id: number;
  threadKey: string;
  runId: string;
  state: OutboxState;
  attempts: number;
  notBefore: string;
  lastError: string | null;
  createdAt: string;
}

export interface CardChange {
  runId: string;
  threadKey: string;
  expectedVersion: number;
  fingerprint: string;
  runUpdatedAt: string;
  lastFinal: string | null;
  /** A new card message to send (post or update, decided at delivery). */
  card?: { stream: string; target: string; payload: Record<string, unknown>; editIntervalMs: number };
  messages: OutboxMessage[];
  now: string;
}

export interface NewApiKey {
  id: string;
  principalId: string;
  name: string;
  role: ApiKeyRole;
  hash: string;
  prefix: string;
  createdAt: string;
}

export interface NewArtifactFile {
  uid: string;
  contentType: string;
  content: Uint8Array;
}

/** How much of each FILE artifact the store keeps apart for readArtifactHead (the migrations say the same). */
export const ARTIFACT_HEAD_BYTES = 256 * 1024;

export interface ArtifactHead {
  head: Uint8Array;
  sizeBytes: number;
}

export interface ArtifactFile {
  uid: string;
  runId: string;
  artifact: Artifact;
  contentType: string;
  sizeBytes: number;
}

export interface RunPatch {
  statusMessage?: RunRecord["statusMessage"];
  requestUsage?: RunRecord["requestUsage"];
  artifacts?: RunRecord["artifacts"];
  /** What the run keeps of its budget (an answer to a run waiting for budget sets it). */
  budget?: RunRecord["budget"];
  /** Extra data carried by the `state` event (e.g. who cancelled). */
  eventData?: Record<string, unknown>;
}

export interface IdempotencyClaim {
  principalId: string;
  key: string;
  /** Hash of the request (endpoint and canonical body); another hash under the same key is a reuse. */
  requestHash: string;
  /** The response to remember, built from the stored result. */
  respond: (result: unknown) => unknown;
  /** Records older than this are forgotten. */
  notBefore: string;
}

/** What an Idempotency-Key already says of a request: its remembered answer, or that the key was reused. */
export type IdempotencyRecall = { kind: "replayed"; response: unknown } | { kind: "key_reused" } | undefined;

/**
 * Idempotency records looked up and written on their own: for answers whose precondition (a run waiting
 * for this answer) no longer holds once they applied, so a retry must be recognised before it is checked.
 */
export interface IdempotencyRecords {
  recallIdempotency(idem: IdempotencyClaim): Promise<IdempotencyRecall>;
  /** Remembers the answer built from `value` (idem.respond) and returns it. */
  rememberIdempotency(idem: IdempotencyClaim, value: unknown): Promise<unknown>;
}

export type IdempotentResult<T> =
  | { kind: "created"; value: T; response: unknown }
  | { kind: "replayed"; response: unknown }
  | { kind: "key_reused" };

/** `agent` orders by `agent_config.name`, runs without one last whichever the order, then by id. */
export type SortBy = "updated_at" | "created_at" | "title" | "agent";
export type SortOrder = "asc" | "desc";

export interface RunListQuery {
  limit: number;
  sortBy: SortBy;
  sortOrder: SortOrder;
  /**
   * Keyset position: the sort value and id of the last run of the previous page. The value is null only
   * under `agent` sorting, for a run without an agent name.
   */
  after?: { value: string | null; id: string };
  states?: RunState[];
  name?: string;
  modelId?: string;
  creator?: string;
  /** One source, or any of several. */
  source?: string | string[];
  environmentId?: string;
  skillSpec?: string;
  /** Every pair must be in the run's metadata, value equal as a string. */
  metadata?: Record<string, string>;
  /** Runs with at least one artifact of this `artifact_type`. */
  artifactType?: string;
  /** Runs fired by this schedule (also after it was deleted). */
  scheduleId?: string;
  /** Runs descending from this run at any depth through `parentRunId` (not the run itself). */
  ancestorRunId?: string;
  /** Who executed the run: always its creator, since a run is never delegated. */
  executor?: string;
  /** Every run executes remotely: `REMOTE` matches all, `LOCAL` none. */
  executionLocation?: "LOCAL" | "REMOTE";
  createdAfter?: string;
  createdBefore?: string;
  updatedAfter?: string;
  /** Substring of the title or prompt, compared after `foldCase` on both sides (Unicode, not ASCII only). */
  q?: string;
  /** With `q`: also the run with this id or this session id (`q` was a run's id or one of its URLs). */
  qRef?: { runId?: string; sessionId?: string };
  /**
   * The Warp Platform API's `task_status`: runs in one of `states`, or, with `orActiveBelow`, with a QUEUED
   * or INPROGRESS run anywhere below them through `parentRunId` (task_status=running).
   */
  taskStatus?: { states: RunState[]; orActiveBelow: boolean };
  /**
   * Only runs among these ids (the web dashboard reads the runs a change signal named, and asks which of
   * them match its filters). An empty list matches nothing.
   */
  ids?: string[];
  /** Only the runs a viewer's audience check allowed (absent: every run of the team). */
  audience?: AudienceFilter;
}

/** What `summarizeUsage` sums; `cost` is the sum of `request_usage.inference_cost` where recorded. */
export interface UsageTotals {
  runs: number;
  tokens: number;
  cost: number | null;
}

export interface UsageSummary {
  /** Days with runs, oldest first; `day` is the UTC date (YYYY-MM-DD). */
  days: Array<UsageTotals & { day: string }>;
  /** Requesters, most runs first (then by uid); `displayName` as on their latest run. */
  people: Array<UsageTotals & { uid: string; displayName: string }>;
}

/** What `interruptRun` did: undefined when the team has no such run. */
export type InterruptResult =
  | { kind: "interrupted"; run: RunRecord }
  | { kind: "refused"; state: RunState; agentStarted: boolean }
  | undefined;
/** A webhook delivery claimed for an attempt: its endpoint's address and secret, and the event it carries. */
export interface ClaimedWebhookDelivery extends WebhookDelivery {
  url: string;
  secret: string;
  event: WebhookEvent;
}

/** How a claimed delivery's attempt ended (store.finishWebhookAttempt). */
export interface WebhookAttemptResult {
  /** `retry`: pending again, due at `nextAttemptAt`; `failed`: no attempt is left. */
  outcome: "succeeded" | "retry" | "failed";
  at: string;
  status: number | null;
  error: string | null;
  responseExcerpt: string | null;
  nextAttemptAt?: string;
}

/** A page of an endpoint's deliveries, newest first: `before` is the last id of the previous page. */
export interface WebhookDeliveryPage {
  limit: number;
  before?: number;
}

/** A checkpoint as the worker holding its run saves it (store.saveCheckpoint). */
export interface NewRunCheckpoint {
  takenAt: string;
  /** Bytes it took: the snapshot plus the git bundle pushed for the hidden ref. */
  sizeBytes: number;
  /** The commit of refs/dispatch/checkpoints/<run> holding the workspace; null when the snapshot does. */
  refSha: string | null;
  /** A gzip'd tar of what the ref does not hold (docs/runtime.md#checkpoints). */
  snapshot: Uint8Array;
}

/** The latest checkpoint of a run. */
export interface RunCheckpoint extends NewRunCheckpoint {
  runId: string;
  /** The run's execution it was taken in. */
  execution: number;
  /** The worker that took it. */
  workerId: string;
}
