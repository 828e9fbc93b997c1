import type { StoreActivity } from "../activity.ts";
import type { StoreSignals } from "../signals.ts";
import { StatementStore, type Statements } from "../statements.ts";
import type { Store } from "../store.ts";
import * as apiKeys from "./api-keys.ts";
import * as artifacts from "./artifacts.ts";
import * as attachments from "./attachments.ts";
import * as audit from "./audit.ts";
import * as channelSettings from "./channel-settings.ts";
import * as checkpoints from "./checkpoints.ts";
import { classifyError, Database, migrate, ping } from "./database.ts";
import * as events from "./events.ts";
import * as followups from "./followups.ts";
import * as githubSignIns from "./github-sign-ins.ts";
import * as idempotency from "./idempotency.ts";
import * as identities from "./identities.ts";
import * as inbound from "./inbound.ts";
import * as interrupts from "./interrupts.ts";
import * as leases from "./leases.ts";
import * as outbox from "./outbox.ts";
import * as progress from "./progress.ts";
import * as runTraces from "./run-traces.ts";
import * as runs from "./runs.ts";
import * as schedules from "./schedules.ts";
import * as usageSummary from "./usage.ts";
import * as usageReport from "./usage-report.ts";
import * as webSessions from "./web-sessions.ts";
import * as webhooks from "./webhooks.ts";

const statements: Statements<Database> = {
  ensureTeam: apiKeys.ensureTeam,
  ensurePrincipal: apiKeys.ensurePrincipal,
  findUser: apiKeys.findUser,
  insertApiKey: apiKeys.insertApiKey,
  findCallerByKeyHash: apiKeys.findCallerByKeyHash,
  listApiKeys: apiKeys.listApiKeys,
  revokeApiKey: apiKeys.revokeApiKey,
  countActiveApiKeys: apiKeys.countActiveApiKeys,
  createIdentity: identities.createIdentity,
  getIdentity: identities.getIdentity,
  listIdentities: identities.listIdentities,
  updateIdentity: identities.updateIdentity,
  deleteIdentity: identities.deleteIdentity,
  createRun: runs.createRun,
  getRun: runs.getRun,
  getRunBySession: runs.getRunBySession,
  findRunsByUrl: runs.findRunsByUrl,
  listRuns: runs.listRuns,
  countRunsByState: runs.countRunsByState,
  summarizeUsage: usageSummary.summarizeUsage,
  reportUsage: usageReport.reportUsage,
  countActiveRuns: runs.countActiveRuns,
  runsFinishedBefore: runs.runsFinishedBefore,
  transition: runs.transition,
  cancelRun: runs.cancelRun,
  claimNextRun: leases.claimNextRun,
  renewLease: leases.renewLease,
  startAgent: leases.startAgent,
  finishExecution: leases.finishExecution,
  recordUsage: leases.recordUsage,
  recordAgentConfig: artifacts.recordAgentConfig,
  recordBudget: artifacts.recordBudget,
  saveCheckpoint: checkpoints.saveCheckpoint,
  holdsRun: checkpoints.holdsRun,
  loadCheckpoint: checkpoints.loadCheckpoint,
  deleteCheckpoint: checkpoints.deleteCheckpoint,
  pruneCheckpoints: checkpoints.pruneCheckpoints,
  recordArtifact: artifacts.recordArtifact,
  getArtifactFile: artifacts.getArtifactFile,
  readArtifactContent: artifacts.readArtifactContent,
  readArtifactHead: artifacts.readArtifactHead,
  recordSkill: leases.recordSkill,
  handBackRun: leases.handBackRun,
  recoverExpiredLeases: leases.recoverExpiredLeases,
  cancelUnansweredRuns: leases.cancelUnansweredRuns,
  listAttachments: attachments.listAttachments,
  getAttachment: attachments.getAttachment,
  readAttachmentContent: attachments.readAttachmentContent,
  addFollowup: followups.addFollowup,
  takePendingFollowups: followups.takePendingFollowups,
  listDeliveredFollowups: followups.listDeliveredFollowups,
  listQueuedPrompts: followups.listQueuedPrompts,
  interruptRun: interrupts.interruptRun,
  appendEvent: events.appendEvent,
  appendWorkerEvents: events.appendWorkerEvents,
  listEvents: events.listEvents,
  listRunsByProgress: progress.listRunsByProgress,
  getRunProgress: progress.getRunProgress,
  claimInbound: inbound.claimInbound,
  acceptInbound: inbound.acceptInbound,
  claimInboundDeliveries: inbound.claimInboundDeliveries,
  finishInboundDelivery: inbound.finishInboundDelivery,
  releaseInboundDelivery: inbound.releaseInboundDelivery,
  bindThread: inbound.bindThread,
  getThreadBinding: inbound.getThreadBinding,
  listThreadBindings: inbound.listThreadBindings,
  markThreadAsked: inbound.markThreadAsked,
  endThread: inbound.endThread,
  listBoundPlaces: inbound.listBoundPlaces,
  findLatestBinding: inbound.findLatestBinding,
  listChannelBindings: inbound.listChannelBindings,
  setBindingThread: inbound.setBindingThread,
  getChannelSettings: channelSettings.getChannelSettings,
  setChannelRepository: channelSettings.setChannelRepository,
  setChannelAgent: channelSettings.setChannelAgent,
  createSchedule: schedules.createSchedule,
  getSchedule: schedules.getSchedule,
  listSchedules: schedules.listSchedules,
  updateSchedule: schedules.updateSchedule,
  deleteSchedule: schedules.deleteSchedule,
  listEnabledSchedules: schedules.listEnabledSchedules,
  fireSchedule: schedules.fireSchedule,
  recordScheduleError: schedules.recordScheduleError,
  pruneInbox: inbound.pruneInbox,
  pruneIdempotencyKeys: idempotency.pruneIdempotencyKeys,
  recallIdempotency: idempotency.recallIdempotency,
  rememberIdempotency: idempotency.rememberIdempotency,
  getNotifierCursor: outbox.getNotifierCursor,
  setNotifierCursor: outbox.setNotifierCursor,
  loadNotifierState: outbox.loadNotifierState,
  getCardState: outbox.getCardState,
  recordCardChange: outbox.recordCardChange,
  claimOutbox: outbox.claimOutbox,
  beginOutboxAttempt: outbox.beginOutboxAttempt,
  completeOutbox: outbox.completeOutbox,
  retryOutbox: outbox.retryOutbox,
  deadLetterOutbox: outbox.deadLetterOutbox,
  enqueueOutbox: outbox.enqueueOutbox,
  countOutboxByState: outbox.countOutboxByState,
  listOutbox: outbox.listOutbox,
  pruneOutbox: outbox.pruneOutbox,
  appendAuditEvent: audit.appendAuditEvent,
  listAuditEvents: audit.listAuditEvents,
  pruneAuditEvents: audit.pruneAuditEvents,
  getRunTrace: runTraces.getRunTrace,
  createWebhookEndpoint: webhooks.createWebhookEndpoint,
  listWebhookEndpoints: webhooks.listWebhookEndpoints,
  getWebhookEndpoint: webhooks.getWebhookEndpoint,
  deleteWebhookEndpoint: webhooks.deleteWebhookEndpoint,
  listWebhookDeliveries: webhooks.listWebhookDeliveries,
  getWebhookDelivery: webhooks.getWebhookDelivery,
  redeliverWebhook: webhooks.redeliverWebhook,
  claimWebhookDeliveries: webhooks.claimWebhookDeliveries,
  finishWebhookAttempt: webhooks.finishWebhookAttempt,
  releaseWebhookDelivery: webhooks.releaseWebhookDelivery,
  pruneWebhookDeliveries: webhooks.pruneWebhookDeliveries,
  createLoginLink: webSessions.createLoginLink,
  findLoginLink: webSessions.findLoginLink,
  redeemLoginLink: webSessions.redeemLoginLink,
  createKeyWebSession: webSessions.createKeyWebSession,
  findWebSession: webSessions.findWebSession,
  revokeWebSession: webSessions.revokeWebSession,
  pruneWebSignIns: webSessions.pruneWebSignIns,
  createGitHubSignIn: githubSignIns.createGitHubSignIn,
  findGitHubSignIn: githubSignIns.findGitHubSignIn,
  approveGitHubSignIn: githubSignIns.approveGitHubSignIn,
  redeemGitHubSignIn: githubSignIns.redeemGitHubSignIn,
};

/**
 * The embedded backend: SQLite through node:sqlite in WAL mode. node:sqlite is synchronous, so each
 * method body runs to completion without interleaving inside this process; BEGIN IMMEDIATE plus a busy
 * timeout serialises writers across processes (the admin CLI next to a running server).
 *
 * The statements live in one module per family (runs, leases, follow-ups, events, idempotency, API keys,
 * identities, inbound, outbox, channel settings, artifacts, attachments, schedules, web sign-in), each
 * function taking the Database first; the table above binds them (src/store/statements.ts), and this
 * class adds only what is SQLite's own.
 */
export class SqliteStore extends StatementStore(statements) implements Store {
  readonly kind = "sqlite";
  readonly signals: StoreSignals;
  readonly activity: StoreActivity;
  private readonly db: Database;

  constructor(path: string, opts: { busyTimeoutMs?: number } = {}) {
    const db = new Database(path, opts);
    super(db);
    this.db = db;
    this.signals = db.signals;
    this.activity = db.activity;
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
    await this.db.close();
  }

  /** Another process's commit (`dispatch keys revoke`, a replica on the same file) changes it at once. */
  keyRevocationMark(): number {
    return this.db.dataVersion();
  }

  readonly keyRevocationMarkExact = true;
}
