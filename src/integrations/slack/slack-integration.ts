import { App, LogLevel, SocketModeReceiver } from "@slack/bolt";
import { WebClient } from "@slack/web-api";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { RunAccess } from "../../access/run-access.ts";
import type { SlackConfig } from "../../config.ts";
import type { SlackSettings } from "../../config-file.ts";
import type { RepositoryParsing } from "../../model/repository.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { Store } from "../../store/store.ts";
import { InboxQueue, type InboxStore } from "../inbox-queue.ts";
import { SlackAgentProgress } from "./agent-progress.ts";
import { AssistantPane } from "./assistant.ts";
import { boltLogger } from "./bolt-logger.ts";
import { BudgetAnswers } from "./budget-answers.ts";
import { ChannelMembers } from "./channel-members.ts";
import type { ChannelSchedules } from "./channel-schedules.ts";
import { Listeners } from "./listeners.ts";
import { PlanAnswers } from "./plan-answers.ts";
import { FastifySlackReceiver } from "./receiver.ts";
import { Responder } from "./responder.ts";
import { ScheduleVerbs } from "./schedule-verbs.ts";
import { SlackAudience } from "./slack-audience.ts";
import { SlackFiles } from "./slack-files.ts";
import { UserDirectory } from "./user-directory.ts";
import { type StatusRenderer, Verbs } from "./verbs.ts";
import type { WebLogin } from "./web-login.ts";
import { WorkQueue } from "./work-queue.ts";

export type SlackStore = Pick<
  Store,
  | "claimInbound"
  | "bindThread"
  | "findLatestBinding"
  | "getThreadBinding"
  | "listChannelBindings"
  | "getCardState"
  | "getChannelSettings"
  | "setChannelRepository"
  | "setChannelAgent"
  | "listEvents"
  | "signals"
  | "appendAuditEvent"
> &
  InboxStore;

/** Deliveries handled at once. */
const WORK_CONCURRENCY = 8;

export interface SlackIntegrationDeps {
  config: SlackConfig;
  settings: SlackSettings;
  runs: RunsApi;
  store: SlackStore;
  log: Logger;
  renderStatus?: StatusRenderer;
  /** Schedules made from Slack; absent in remote mode, where the schedule verbs say they cannot act. */
  schedules?: ChannelSchedules;
  /** The lease on a delivery being handled, and how often the inbox is polled for ones nobody holds. */
  inbox: { leaseMs: number; pollMs: number };
  /** How repositories in commands are read: the server's GitHub URL and whether file:// is allowed. */
  repositories?: RepositoryParsing;
  /** Issues web sign-in links for `login`; absent, `login` says the web app is not served here. */
  webLogin?: WebLogin;
  /** The one access rule, which this integration's audience is registered with (app.ts). */
  access: RunAccess;
  /**
   * Whether runs' progress is shown while they work (assistant thread status, streamed steps): where the
   * runs and their transcripts are in this process's store, not a remote Dispatch's.
   */
  agentProgress?: boolean;
}

/**
 * The Slack side of Dispatch on @slack/bolt: slash command, mentions, thread follow-ups and the Cancel
 * button. Listeners acknowledge first and then act through RunsApi; thread bindings tell the notifier
 * where to report. HTTP (POST /slack/events on the service's server) or Socket Mode (SLACK_APP_TOKEN).
 */
export class SlackIntegration {
  /** `socket` when SLACK_APP_TOKEN is set (bolt's SocketModeReceiver), else POST /slack/events. */
  readonly mode: "http" | "socket";
  private readonly app: App;
  private readonly receiver: FastifySlackReceiver | undefined;
  private readonly socketMode: SocketModeReceiver | undefined;
  /** Deliveries stored by the HTTP receiver, handed to the listeners (HTTP mode). */
  private readonly inbox: InboxQueue | undefined;
  private readonly work: WorkQueue;
  /** Who is in the audience of this integration's threads: the channel's current members. */
  readonly audience: SlackAudience;
  private readonly progress: SlackAgentProgress | undefined;

  constructor(deps: SlackIntegrationDeps) {
    const { config, settings, runs, store, log } = deps;
    const slackLog = boltLogger(log.child({ component: "slack" }));
    const clientOptions = {
      slackApiUrl: config.apiUrl,
      timeout: 10_000,
      // Bounded: an ephemeral answer that cannot be sent within seconds is no longer useful.
      retryConfig: { retries: 3, factor: 2, minTimeout: 200, maxTimeout: 2_000, randomize: true },
      logger: slackLog,
    };
    const client = new WebClient(config.botToken, clientOptions);
    this.mode = config.appToken ? "socket" : "http";
    if (config.appToken) {
      this.socketMode = new SocketModeReceiver({
        appToken: config.appToken,
        // Socket Mode opens its connection through slack.com (apps.connections.open); SLACK_API_URL
        // applies to the Web API calls.
        logger: slackLog,
      });
    } else {
      const inbox: InboxQueue = new InboxQueue({
        source: "slack",
        store,
        handle: (delivery): Promise<void> => receiver.process(delivery),
        leaseMs: deps.inbox.leaseMs,
        pollMs: deps.inbox.pollMs,
        concurrency: WORK_CONCURRENCY,
        log: log.child({ component: "slack-inbox" }),
      });
      const receiver: FastifySlackReceiver = new FastifySlackReceiver({
        signingSecret: config.signingSecret!,
        store,
        queue: inbox,
        log: log.child({ component: "slack-receiver" }),
      });
      this.inbox = inbox;
      this.receiver = receiver;
    }
    this.app = new App({
      receiver: this.socketMode ?? this.receiver!,
      // One workspace, one bot token: no auth.test round trip before each event.
      authorize: async () => ({ botToken: config.botToken }),
      clientOptions,
      logger: slackLog,
      logLevel: LogLevel.WARN,
    });
    this.work = new WorkQueue(log.child({ component: "slack-work-queue" }));
    const responder = new Responder(client, log.child({ component: "slack-responder" }));
    const members = new ChannelMembers(client, log.child({ component: "slack-members" }), {
      cacheMs: settings.membership_cache_seconds * 1000,
    });
    this.audience = new SlackAudience(members, settings);
    const verbs = new Verbs({
      command: config.command,
      settings,
      runs,
      store,
      responder,
      access: deps.access,
      ...(deps.renderStatus ? { renderStatus: deps.renderStatus } : {}),
    });
    const scheduleVerbs = new ScheduleVerbs({
      command: config.command,
      settings,
      schedules: deps.schedules,
      store,
      responder,
      members,
    });
    new Listeners({
      command: config.command,
      settings,
      store,
      verbs,
      planAnswers: new PlanAnswers({ runs, store, responder, access: deps.access }),
      budgetAnswers: new BudgetAnswers({ runs, store, responder, access: deps.access }),
      scheduleVerbs,
      responder,
      users: new UserDirectory(client, log.child({ component: "slack-users" })),
      work: this.work,
      files: new SlackFiles({
        botToken: config.botToken,
        apiUrl: config.apiUrl,
        client,
        log: log.child({ component: "slack-files" }),
      }),
      log: log.child({ component: "slack-listeners" }),
      ...(deps.repositories ? { repositories: deps.repositories } : {}),
      ...(deps.webLogin ? { webLogin: deps.webLogin } : {}),
    }).register(this.app);
    new AssistantPane({ store, runs, log: log.child({ component: "slack-assistant" }) }).register(this.app);
    this.progress = deps.agentProgress
      ? new SlackAgentProgress({
          client,
          runs,
          store,
          log: log.child({ component: "slack-progress" }),
          pollMs: deps.inbox.pollMs,
        })
      : undefined;
  }

  /** Mounts POST /slack/events (HTTP mode); call before the server listens. */
  register(server: FastifyInstance): void {
    this.receiver?.register(server);
  }

  /** Starts handling stored deliveries (those an earlier process acknowledged too), or connects. */
  async start(): Promise<void> {
    this.inbox?.start();
    if (this.socketMode) await this.app.start();
    this.progress?.start();
  }

  async stop(): Promise<void> {
    await this.progress?.stop();
    if (this.socketMode) await this.app.stop();
    await this.inbox?.stop();
    await this.work.drain();
  }

  /** Resolves when every piece of work started so far is done (tests, shutdown). */
  async idle(): Promise<void> {
    await this.inbox?.idle();
    await this.work.idle();
  }
}
