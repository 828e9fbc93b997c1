import type { AttachmentInfo, NewAttachment } from "../../model/attachment.ts";
import type { AudienceFilter, BoundPlace } from "../../model/audience.ts";
import type {
  GitHubApproval,
  GitHubSignIn,
  GitHubSignInApproval,
  GitHubSignInRedemption,
  NewGitHubSignIn,
} from "../../model/github-sign-in.ts";
import type {
  AgentIdentity,
  AgentIdentityPatch,
  ApiKeyRecord,
  Caller,
  Principal,
  Team,
} from "../../model/identity.ts";
import type { Artifact, FollowupRecord, RunEvent, RunEventType, RunRecord } from "../../model/run.ts";
import type { RunState, Trigger } from "../../model/run-state.ts";
import type { ScheduleLimits, ScheduleRecord } from "../../model/schedule.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import type {
  LoginLink,
  LoginLinkRedemption,
  NewKeyWebSession,
  NewLoginLink,
  NewWebSession,
  WebSession,
} from "../../model/web-session.ts";
import type { StoreSignals } from "../signals.ts";
import type {
  ArtifactFile,
  ArtifactHead,
  CardChange,
  CardState,
  ChannelKey,
  ChannelSettings,
  IdempotencyClaim,
  IdempotentResult,
  InboundDelivery,
  NewApiKey,
  NewArtifactFile,
  NewInboundDelivery,
  NotifierCursor,
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
  Store,
  UsageSummary,
} from "../store.ts";
import * as apiKeys from "./api-keys.ts";
import * as artifacts from "./artifacts.ts";
import * as attachments from "./attachments.ts";
import * as channelSettings from "./channel-settings.ts";
import { classifyError, Database, migrate, ping } from "./database.ts";
import * as events from "./events.ts";
import * as followups from "./followups.ts";
import * as githubSignIns from "./github-sign-ins.ts";
import * as idempotency from "./idempotency.ts";
import * as identities from "./identities.ts";
import * as inbound from "./inbound.ts";
import * as leases from "./leases.ts";
import * as outbox from "./outbox.ts";
import * as progress from "./progress.ts";
import * as runs from "./runs.ts";
import * as schedules from "./schedules.ts";
import * as usageSummary from "./usage.ts";
import * as webSessions from "./web-sessions.ts";

/**
 * The embedded backend: SQLite through node:sqlite in WAL mode. node:sqlite is synchronous, so each
 * method body runs to completion without interleaving inside this process; BEGIN IMMEDIATE plus a busy
 * timeout serialises writers across processes (the admin CLI next to a running server).
 *
 * The statements live in one module per family (runs, leases, follow-ups, events, idempotency, API keys, identities,
 * inbound, outbox, channel settings, schedules), each function taking the Database first; this class only delegates to them.
 */
export class SqliteStore implements Store {
  readonly kind = "sqlite";
  readonly signals: StoreSignals;
  private readonly db: Database;

  constructor(path: string, opts: { busyTimeoutMs?: number } = {}) {
    this.db = new Database(path, opts);
    this.signals = this.db.signals;
  }

  async migrate(): Promise<void> {
    migrate(this.db);
  }

  classifyError(err: unknown): "conflict" | "unavailable" | undefined {
    return classifyError(err);
  }

  async ping(): Promise<void> {
    ping(this.db);
  }

  async close(): Promise<void> {
    this.db.close();
  }

  ensureTeam(team: Team): Promise<Team> {
    return apiKeys.ensureTeam(this.db, team);
  }

  ensurePrincipal(p: Principal): Promise<Principal> {
    return apiKeys.ensurePrincipal(this.db, p);
  }

  insertApiKey(k: NewApiKey): Promise<ApiKeyRecord> {
    return apiKeys.insertApiKey(this.db, k);
  }

  findCallerByKeyHash(hash: string): Promise<Caller | undefined> {
    return apiKeys.findCallerByKeyHash(this.db, hash);
  }

  listApiKeys(): Promise<Array<ApiKeyRecord & { principal: Principal }>> {
    return apiKeys.listApiKeys(this.db);
  }

  revokeApiKey(idOrPrefix: string, at: string): Promise<ApiKeyRecord | undefined> {
    return apiKeys.revokeApiKey(this.db, idOrPrefix, at);
  }

  /** Another process's commit (`dispatch keys revoke`, a replica on the same file) changes it at once. */
  keyRevocationMark(): number {
    return this.db.dataVersion();
  }

  readonly keyRevocationMarkExact = true;

  countActiveApiKeys(): Promise<number> {
    return apiKeys.countActiveApiKeys(this.db);
  }

  createIdentity(identity: AgentIdentity): Promise<AgentIdentity> {
    return identities.createIdentity(this.db, identity);
  }

  getIdentity(teamId: string, id: string): Promise<AgentIdentity | undefined> {
    return identities.getIdentity(this.db, teamId, id);
  }

  listIdentities(teamId: string): Promise<AgentIdentity[]> {
    return identities.listIdentities(this.db, teamId);
  }

  updateIdentity(teamId: string, id: string, patch: AgentIdentityPatch): Promise<AgentIdentity | undefined> {
    return identities.updateIdentity(this.db, teamId, id, patch);
  }

  deleteIdentity(teamId: string, id: string, at: string): Promise<{ revokedKeyIds: string[] } | undefined> {
    return identities.deleteIdentity(this.db, teamId, id, at);
  }

  createRun(
    run: RunRecord,
    idem?: IdempotencyClaim,
    attachmentList?: readonly NewAttachment[],
  ): Promise<IdempotentResult<RunRecord>> {
    return runs.createRun(this.db, run, idem, attachmentList);
  }

  getRun(teamId: string, runId: string): Promise<RunRecord | undefined> {
    return runs.getRun(this.db, teamId, runId);
  }

  getRunBySession(sessionId: string): Promise<RunRecord | undefined> {
    return runs.getRunBySession(this.db, sessionId);
  }

  listRuns(teamId: string, q: RunListQuery): Promise<{ runs: RunRecord[]; hasMore: boolean }> {
    return runs.listRuns(this.db, teamId, q);
  }

  countRunsByState(teamId?: string, audience?: AudienceFilter): Promise<Record<RunState, number>> {
    return runs.countRunsByState(this.db, teamId, audience);
  }

  summarizeUsage(teamId: string, since: string, audience?: AudienceFilter): Promise<UsageSummary> {
    return usageSummary.summarizeUsage(this.db, teamId, since, audience);
  }

  countActiveRuns(upTo: number): Promise<number> {
    return runs.countActiveRuns(this.db, upTo);
  }

  runsFinishedBefore(runIds: string[], before: string): Promise<string[]> {
    return runs.runsFinishedBefore(this.db, runIds, before);
  }

  transition(
    runId: string,
    trigger: Trigger,
    patch?: RunPatch,
    opts?: { workerId?: string },
  ): Promise<RunRecord | undefined> {
    return runs.transition(this.db, runId, trigger, patch, opts);
  }

  cancelRun(
    teamId: string,
    runId: string,
    patch: RunPatch,
    idem?: IdempotencyClaim,
  ): Promise<IdempotentResult<RunRecord> | { kind: "refused"; state: RunState } | undefined> {
    return runs.cancelRun(this.db, teamId, runId, patch, idem);
  }

  claimNextRun(workerId: string, leaseMs: number): Promise<RunRecord | undefined> {
    return leases.claimNextRun(this.db, workerId, leaseMs);
  }

  renewLease(runId: string, workerId: string, leaseMs: number): Promise<boolean> {
    return leases.renewLease(this.db, runId, workerId, leaseMs);
  }

  startAgent(runId: string, workerId: string): Promise<FollowupRecord[] | undefined> {
    return leases.startAgent(this.db, runId, workerId);
  }

  finishExecution(
    runId: string,
    workerId: string,
    trigger: "succeed" | "fail" | "error",
    patch: RunPatch,
  ): Promise<{ run?: RunRecord; pending: FollowupRecord[] }> {
    return leases.finishExecution(this.db, runId, workerId, trigger, patch);
  }

  recordUsage(runId: string, usage: RunRecord["requestUsage"]): Promise<void> {
    return leases.recordUsage(this.db, runId, usage);
  }

  recordAgentConfig(
    runId: string,
    workerId: string,
    agentConfig: RunRecord["agentConfig"],
  ): Promise<boolean> {
    return artifacts.recordAgentConfig(this.db, runId, workerId, agentConfig);
  }

  recordArtifact(runId: string, artifact: Artifact, file?: NewArtifactFile): Promise<RunRecord | undefined> {
    return artifacts.recordArtifact(this.db, runId, artifact, file);
  }

  getArtifactFile(teamId: string, uid: string): Promise<ArtifactFile | undefined> {
    return artifacts.getArtifactFile(this.db, teamId, uid);
  }

  readArtifactContent(teamId: string, uid: string): Promise<Uint8Array | undefined> {
    return artifacts.readArtifactContent(this.db, teamId, uid);
  }

  readArtifactHead(teamId: string, uid: string, maxBytes: number): Promise<ArtifactHead | undefined> {
    return artifacts.readArtifactHead(this.db, teamId, uid, maxBytes);
  }

  recordSkill(
    runId: string,
    workerId: string,
    agentConfig: RunRecord["agentConfig"],
    agentSkill: NonNullable<RunRecord["agentSkill"]>,
  ): Promise<boolean> {
    return leases.recordSkill(this.db, runId, workerId, agentConfig, agentSkill);
  }

  abandonRun(
    runId: string,
    workerId: string,
    statusMessage: NonNullable<RunRecord["statusMessage"]>,
  ): Promise<RunRecord | undefined> {
    return leases.abandonRun(this.db, runId, workerId, statusMessage);
  }

  recoverExpiredLeases(): Promise<RunRecord[]> {
    return leases.recoverExpiredLeases(this.db);
  }

  listAttachments(teamId: string, runId: string): Promise<AttachmentInfo[]> {
    return attachments.listAttachments(this.db, teamId, runId);
  }

  getAttachment(teamId: string, attachmentId: string): Promise<AttachmentInfo | undefined> {
    return attachments.getAttachment(this.db, teamId, attachmentId);
  }

  readAttachmentContent(teamId: string, attachmentId: string): Promise<Uint8Array | undefined> {
    return attachments.readAttachmentContent(this.db, teamId, attachmentId);
  }

  addFollowup(
    teamId: string,
    runId: string,
    f: { id: string; message: string; mode: string; attachments?: readonly NewAttachment[] },
    idem?: IdempotencyClaim,
  ): Promise<IdempotentResult<{ followup: FollowupRecord; run: RunRecord }> | undefined> {
    return followups.addFollowup(this.db, teamId, runId, f, idem);
  }

  takePendingFollowups(runId: string, execution: number): Promise<FollowupRecord[]> {
    return followups.takePendingFollowups(this.db, runId, execution);
  }

  appendEvent(runId: string, type: RunEventType, data: Record<string, unknown>): Promise<RunEvent> {
    return events.appendEvent(this.db, runId, type, data);
  }

  listEvents(runId: string, after: number, limit: number): Promise<RunEvent[]> {
    return events.listEvents(this.db, runId, after, limit);
  }

  listRunsByProgress(range: ProgressRange): Promise<RunProgress[]> {
    return progress.listRunsByProgress(this.db, range);
  }

  getRunProgress(runIds: string[]): Promise<Map<string, string>> {
    return progress.getRunProgress(this.db, runIds);
  }

  claimInbound(key: string, source: string, windowMs?: number): Promise<boolean> {
    return inbound.claimInbound(this.db, key, source, windowMs);
  }

  acceptInbound(delivery: NewInboundDelivery): Promise<boolean> {
    return inbound.acceptInbound(this.db, delivery);
  }

  claimInboundDeliveries(
    owner: string,
    opts: { source: string; limit: number; leaseMs: number; maxAttempts: number },
  ): Promise<InboundDelivery[]> {
    return inbound.claimInboundDeliveries(this.db, owner, opts);
  }

  finishInboundDelivery(id: number, owner: string): Promise<boolean> {
    return inbound.finishInboundDelivery(this.db, id, owner);
  }

  releaseInboundDelivery(id: number, owner: string, retryAt: string): Promise<void> {
    return inbound.releaseInboundDelivery(this.db, id, owner, retryAt);
  }

  bindThread(b: ThreadBinding): Promise<void> {
    return inbound.bindThread(this.db, b);
  }

  getThreadBinding(runId: string): Promise<ThreadBinding | undefined> {
    return inbound.getThreadBinding(this.db, runId);
  }

  listBoundPlaces(teamId: string): Promise<BoundPlace[]> {
    return inbound.listBoundPlaces(this.db, teamId);
  }

  findLatestBinding(
    where: Pick<ThreadBinding, "platform" | "workspace" | "channel"> & { thread: string | null },
  ): Promise<ThreadBinding | undefined> {
    return inbound.findLatestBinding(this.db, where);
  }

  listChannelBindings(
    where: Pick<ThreadBinding, "platform" | "workspace" | "channel">,
    limit: number,
  ): Promise<ThreadBinding[]> {
    return inbound.listChannelBindings(this.db, where, limit);
  }

  setBindingThread(runId: string, thread: string): Promise<void> {
    return inbound.setBindingThread(this.db, runId, thread);
  }

  getChannelSettings(where: ChannelKey): Promise<ChannelSettings | undefined> {
    return channelSettings.getChannelSettings(this.db, where);
  }

  setChannelRepository(
    where: ChannelKey,
    repository: { repository: string; base?: string } | null,
    by: string,
    at: string,
  ): Promise<ChannelSettings> {
    return channelSettings.setChannelRepository(this.db, where, repository, by, at);
  }

  setChannelAgent(where: ChannelKey, agent: string | null, by: string, at: string): Promise<ChannelSettings> {
    return channelSettings.setChannelAgent(this.db, where, agent, by, at);
  }

  createSchedule(
    schedule: ScheduleRecord,
    limits: ScheduleLimits,
    idem?: IdempotencyClaim,
  ): Promise<IdempotentResult<ScheduleRecord> | "name_taken" | "team_limit" | "creator_limit"> {
    return schedules.createSchedule(this.db, schedule, limits, idem);
  }

  getSchedule(teamId: string, id: string): Promise<ScheduleRecord | undefined> {
    return schedules.getSchedule(this.db, teamId, id);
  }

  listSchedules(teamId: string, opts?: { reportTo?: ChannelKey }): Promise<ScheduleRecord[]> {
    return schedules.listSchedules(this.db, teamId, opts);
  }

  updateSchedule(
    teamId: string,
    id: string,
    change: ScheduleChange,
  ): Promise<ScheduleRecord | "name_taken" | "creator_limit" | undefined> {
    return schedules.updateSchedule(this.db, teamId, id, change);
  }

  deleteSchedule(teamId: string, id: string): Promise<boolean> {
    return schedules.deleteSchedule(this.db, teamId, id);
  }

  listEnabledSchedules(): Promise<ScheduleRecord[]> {
    return schedules.listEnabledSchedules(this.db);
  }

  fireSchedule(fire: ScheduleFire, run: RunRecord): Promise<ScheduleFireResult> {
    return schedules.fireSchedule(this.db, fire, run);
  }

  recordScheduleError(scheduleId: string, error: string): Promise<boolean> {
    return schedules.recordScheduleError(this.db, scheduleId, error);
  }

  pruneInbox(olderThan: string): Promise<number> {
    return inbound.pruneInbox(this.db, olderThan);
  }

  pruneIdempotencyKeys(olderThan: string): Promise<number> {
    return idempotency.pruneIdempotencyKeys(this.db, olderThan);
  }

  getNotifierCursor(name: string): Promise<NotifierCursor | undefined> {
    return outbox.getNotifierCursor(this.db, name);
  }

  setNotifierCursor(name: string, cursor: NotifierCursor): Promise<void> {
    return outbox.setNotifierCursor(this.db, name, cursor);
  }

  loadNotifierState(runIds: string[]): Promise<Map<string, { binding?: ThreadBinding; card?: CardState }>> {
    return outbox.loadNotifierState(this.db, runIds);
  }

  getCardState(runId: string): Promise<CardState | undefined> {
    return outbox.getCardState(this.db, runId);
  }

  recordCardChange(c: CardChange): Promise<boolean> {
    return outbox.recordCardChange(this.db, c);
  }

  claimOutbox(
    owner: string,
    opts: { limit: number; leaseMs: number; excludeTargets?: string[] },
  ): Promise<OutboxRow[]> {
    return outbox.claimOutbox(this.db, owner, opts);
  }

  beginOutboxAttempt(id: number, owner: string, leaseMs: number): Promise<number | undefined> {
    return outbox.beginOutboxAttempt(this.db, id, owner, leaseMs);
  }

  completeOutbox(id: number, owner: string, result?: { cardRef?: string }): Promise<boolean> {
    return outbox.completeOutbox(this.db, id, owner, result);
  }

  retryOutbox(id: number, owner: string, notBefore: string, error: string | null): Promise<boolean> {
    return outbox.retryOutbox(this.db, id, owner, notBefore, error);
  }

  deadLetterOutbox(id: number, owner: string, error: string): Promise<boolean> {
    return outbox.deadLetterOutbox(this.db, id, owner, error);
  }

  enqueueOutbox(runId: string, messages: OutboxMessage[]): Promise<void> {
    return outbox.enqueueOutbox(this.db, runId, messages);
  }

  countOutboxByState(): Promise<Record<OutboxState, number>> {
    return outbox.countOutboxByState(this.db);
  }

  listOutbox(runId: string): Promise<OutboxRow[]> {
    return outbox.listOutbox(this.db, runId);
  }

  pruneOutbox(olderThan: string): Promise<number> {
    return outbox.pruneOutbox(this.db, olderThan);
  }

  createLoginLink(link: NewLoginLink): Promise<void> {
    return webSessions.createLoginLink(this.db, link);
  }

  findLoginLink(tokenHash: string): Promise<LoginLink | undefined> {
    return webSessions.findLoginLink(this.db, tokenHash);
  }

  redeemLoginLink(tokenHash: string, session: NewWebSession): Promise<LoginLinkRedemption> {
    return webSessions.redeemLoginLink(this.db, tokenHash, session);
  }

  createKeyWebSession(session: NewKeyWebSession): Promise<WebSession> {
    return webSessions.createKeyWebSession(this.db, session);
  }

  findWebSession(idHash: string, at: string): Promise<WebSession | undefined> {
    return webSessions.findWebSession(this.db, idHash, at);
  }

  revokeWebSession(idHash: string, at: string): Promise<boolean> {
    return webSessions.revokeWebSession(this.db, idHash, at);
  }

  pruneWebSignIns(olderThan: string): Promise<number> {
    return webSessions.pruneWebSignIns(this.db, olderThan);
  }

  createGitHubSignIn(signIn: NewGitHubSignIn): Promise<boolean> {
    return githubSignIns.createGitHubSignIn(this.db, signIn);
  }

  findGitHubSignIn(browserHash: string): Promise<GitHubSignIn | undefined> {
    return githubSignIns.findGitHubSignIn(this.db, browserHash);
  }

  approveGitHubSignIn(code: string, approval: GitHubSignInApproval): Promise<GitHubApproval> {
    return githubSignIns.approveGitHubSignIn(this.db, code, approval);
  }

  redeemGitHubSignIn(browserHash: string, session: NewWebSession): Promise<GitHubSignInRedemption> {
    return githubSignIns.redeemGitHubSignIn(this.db, browserHash, session);
  }
}
