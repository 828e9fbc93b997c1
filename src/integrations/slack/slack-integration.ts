import { App, LogLevel, type Logger as SlackLogger, SocketModeReceiver } from "@slack/bolt";
import { WebClient } from "@slack/web-api";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { SlackConfig } from "../../config.ts";
import type { SlackSettings } from "../../config-file.ts";
import type { Creator } from "../../model/run.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import type { RunItem } from "../../runs/run-item.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { Store } from "../../store/store.ts";
import { type Command, createBody, GrammarError, parseCommand } from "../grammar.ts";
import { describeError, runErrorCode } from "../run-errors.ts";
import { type Actor, boundInWorkspace, mayActOnRun, refusal } from "./access.ts";
import { claimDelivery, idempotencyKeyFor } from "./inbound.ts";
import {
  followupText,
  grammarErrorText,
  helpText,
  listText,
  plainText,
  stateWord,
  statusText,
} from "./messages.ts";
import { CLAIMED, FastifySlackReceiver } from "./receiver.ts";

/** The Cancel button of the status card (rendered by the notifier; handled here). */
export const CANCEL_ACTION_ID = "dispatch_cancel";
export const OPEN_SESSION_ACTION_ID = "dispatch_open_session";

const USER_CACHE_MS = 10 * 60_000;
const USER_CACHE_MAX = 2_000;
const LIST_LIMIT = 10;

export type SlackStore = Pick<
  Store,
  "claimInbound" | "bindThread" | "findLatestBinding" | "getThreadBinding"
>;

/** Renders a run for `status` (the notifier's status card when it provides one). */
export type StatusRenderer = (
  run: RunItem,
  binding: ThreadBinding | undefined,
) => { text: string; blocks?: unknown[] };

export interface SlackAppDeps {
  config: SlackConfig;
  settings: SlackSettings;
  runs: RunsApi;
  store: SlackStore;
  log: Logger;
  renderStatus?: StatusRenderer;
}

// biome-ignore lint/suspicious/noExplicitAny: Slack payloads are read field by field, defensively
type Payload = Record<string, any>;

interface SlackUser {
  creator: Creator;
  userTeam: string | undefined;
  stranger: boolean;
}

/**
 * The Slack side of Dispatch on @slack/bolt: slash command, mentions, thread follow-ups and the Cancel
 * button. Listeners acknowledge first and then act through RunsApi; thread bindings tell the notifier
 * where to report. HTTP (POST /slack/events on the service's server) or Socket Mode (SLACK_APP_TOKEN).
 */
export class SlackIntegration {
  readonly app: App;
  readonly client: WebClient;
  /** `socket` when SLACK_APP_TOKEN is set (bolt's SocketModeReceiver), else POST /slack/events. */
  readonly mode: "http" | "socket";
  private readonly receiver: FastifySlackReceiver | undefined;
  private readonly socketMode: SocketModeReceiver | undefined;
  private readonly deps: SlackAppDeps;
  private readonly users = new Map<string, { user: SlackUser; at: number }>();
  /** Work started after an ack, awaited by stop() so nothing is cut off mid-call. */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(deps: SlackAppDeps) {
    this.deps = deps;
    const { config, log } = deps;
    const clientOptions = {
      slackApiUrl: config.apiUrl,
      timeout: 10_000,
      // Bounded: an ephemeral answer that cannot be sent within seconds is no longer useful.
      retryConfig: { retries: 3, factor: 2, minTimeout: 200, maxTimeout: 2_000, randomize: true },
      logger: slackLogger(log),
    };
    this.client = new WebClient(config.botToken, clientOptions);
    this.mode = config.appToken ? "socket" : "http";
    if (config.appToken) {
      this.socketMode = new SocketModeReceiver({
        appToken: config.appToken,
        // Socket Mode opens its connection through slack.com (apps.connections.open); SLACK_API_URL
        // applies to the Web API calls below.
        logger: slackLogger(log),
      });
    } else {
      this.receiver = new FastifySlackReceiver({
        signingSecret: config.signingSecret!,
        store: deps.store,
        log,
      });
    }
    this.app = new App({
      receiver: this.socketMode ?? this.receiver!,
      // One workspace, one bot token: no auth.test round trip before each event.
      authorize: async () => ({ botToken: config.botToken }),
      clientOptions,
      logger: slackLogger(log),
      logLevel: LogLevel.WARN,
    });
    this.app.use(async ({ body, context, next }) => {
      // Socket Mode deliveries skip the HTTP receiver, which claims before acknowledging.
      if (!context[CLAIMED] && !(await claimDelivery(deps.store, body as Payload))) return;
      await next();
    });
    this.app.command(config.command, async ({ ack, command }) => {
      await ack();
      this.track(this.onCommand(command as unknown as Payload));
    });
    this.app.event("app_mention", async ({ event, body }) => {
      this.track(this.onMention(event as unknown as Payload, body as Payload));
    });
    this.app.action(CANCEL_ACTION_ID, async ({ ack, body }) => {
      await ack();
      this.track(this.onCancelButton(body as Payload));
    });
    // A link button still sends an action; acknowledge it so Slack shows no error.
    this.app.action(OPEN_SESSION_ACTION_ID, async ({ ack }) => {
      await ack();
    });
    this.app.error(async (err) => {
      log.error({ err }, "Slack listener failed");
    });
  }

  /** Mounts POST /slack/events (HTTP mode); call before the server listens. */
  register(server: FastifyInstance): void {
    this.receiver?.register(server);
  }

  async start(): Promise<void> {
    if (this.socketMode) await this.app.start();
  }

  async stop(): Promise<void> {
    if (this.socketMode) await this.app.stop();
    await Promise.allSettled([...this.inFlight]);
  }

  /** Resolves when every piece of work started so far is done (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private track(work: Promise<unknown>): void {
    const p = work.catch((err: unknown) => this.deps.log.error({ err }, "Slack request failed"));
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  // --- slash command -----------------------------------------------------------------------------

  private async onCommand(payload: Payload): Promise<void> {
    const { config, settings } = this.deps;
    const actor: Actor = { team: payload.team_id, channel: payload.channel_id, user: payload.user_id };
    const say = (text: string) => this.ephemeral(actor, text);
    let command: Command;
    try {
      command = parseCommand(plainText(String(payload.text ?? "")), "slash");
    } catch (err) {
      if (err instanceof GrammarError) return say(grammarErrorText(err.message, config.command));
      throw err;
    }
    if (command.verb === "help") return say(helpText(config.command));
    const user = await this.lookUpUser(actor);
    const refused = refusal(settings, { ...actor, userTeam: user.userTeam, stranger: user.stranger });
    if (refused) return say(refused);

    switch (command.verb) {
      case "list":
        return say(listText(await this.recentRuns(), "Recent runs from Slack"));
      case "status":
        if (!command.runId) {
          const mine = (await this.recentRuns(100)).filter((r) => r.creator?.uid === user.creator.uid);
          return say(listText(mine.slice(0, LIST_LIMIT), "Your recent runs"));
        }
        return this.status(actor, command.runId);
      case "cancel":
        if (!command.runId) return say(`Which run? \`${config.command} cancel <run>\``);
        return this.cancel(actor, user, command.runId, idempotencyKeyFor(payload, "cancel"));
      case "followup":
        return this.followup(actor, command.runId, command.message, idempotencyKeyFor(payload, "followup"));
      case "run":
        return this.startRun(actor, user, command, {
          thread: null,
          triggerRef: null,
          idempotencyKey: idempotencyKeyFor(payload, "create"),
        });
    }
  }

  // --- mentions ------------------------------------------------------------------------------------

  private async onMention(event: Payload, body: Payload): Promise<void> {
    const { settings, config } = this.deps;
    if (!event.user || event.bot_id) return;
    const team = String(body.team_id ?? event.team);
    const threadTs: string | undefined = event.thread_ts;
    const actor: Actor = { team, channel: event.channel, user: event.user, userTeam: event.user_team };
    const reply = (text: string) => this.ephemeral(actor, text, threadTs ?? event.ts);
    if (refusal(settings, actor)) return reply(refusal(settings, actor)!);
    // Received: the notifier later adds the outcome reaction.
    this.track(this.react(event.channel, event.ts, "eyes"));
    const user = await this.lookUpUser(actor);
    const refused = refusal(settings, {
      ...actor,
      stranger: user.stranger,
      userTeam: actor.userTeam ?? user.userTeam,
    });
    if (refused) return reply(refused);

    const botUser: string | undefined = body.authorizations?.[0]?.user_id;
    const text = plainText(stripBotMention(String(event.text ?? ""), botUser));
    const binding = threadTs
      ? await this.deps.store.findLatestBinding({
          platform: "slack",
          workspace: team,
          channel: actor.channel,
          thread: threadTs,
        })
      : undefined;
    const verb = (text.trim().split(/\s+/)[0] ?? "").toLowerCase();

    // In a run's thread, anything that is not a verb is a follow-up to the thread's latest run.
    if (binding && !["cancel", "status", "help", "list", "new"].includes(verb)) {
      return this.followup(actor, binding.runId, text.trim(), idempotencyKeyFor(body, "followup"), binding);
    }
    let command: Command;
    try {
      command = parseCommand(text, "mention");
    } catch (err) {
      if (err instanceof GrammarError) return reply(grammarErrorText(err.message, config.command));
      throw err;
    }
    switch (command.verb) {
      case "help":
        return reply(helpText(config.command));
      case "list":
        return reply(listText(await this.recentRuns(), "Recent runs from Slack"));
      case "status":
      case "cancel": {
        const runId = command.runId ?? binding?.runId;
        if (!runId)
          return reply(`Mention me with \`${command.verb}\` inside a run's thread, or name the run.`);
        if (command.verb === "status") return this.status(actor, runId, threadTs);
        return this.cancel(actor, user, runId, idempotencyKeyFor(body, "cancel"), threadTs);
      }
      case "run":
        if (binding && !command.forceNew) {
          return this.followup(
            actor,
            binding.runId,
            text.trim(),
            idempotencyKeyFor(body, "followup"),
            binding,
          );
        }
        return this.startRun(actor, user, command, {
          thread: threadTs ?? event.ts,
          triggerRef: event.ts,
          permalinkOf: event.ts,
          idempotencyKey: idempotencyKeyFor(body, "create"),
        });
      case "followup":
        // Not produced on the mention surface.
        return;
    }
  }

  // --- the Cancel button -----------------------------------------------------------------------

  private async onCancelButton(body: Payload): Promise<void> {
    const action = body.actions?.[0];
    const actor: Actor = {
      team: body.team?.id ?? body.user?.team_id,
      channel: body.channel?.id ?? body.container?.channel_id,
      user: body.user?.id,
      userTeam: body.user?.team_id,
    };
    if (!action?.value || !actor.user || !actor.channel) return;
    const threadTs: string | undefined = body.message?.thread_ts ?? body.container?.message_ts;
    const early = refusal(this.deps.settings, actor);
    if (early) return this.ephemeral(actor, early, threadTs);
    const user = await this.lookUpUser(actor);
    await this.cancel(actor, user, String(action.value), idempotencyKeyFor(body, "cancel"), threadTs);
  }

  // --- actions -------------------------------------------------------------------------------------

  private async startRun(
    actor: Actor,
    user: SlackUser,
    command: Command & { verb: "run" },
    where: { thread: string | null; triggerRef: string | null; permalinkOf?: string; idempotencyKey: string },
  ): Promise<void> {
    // A slash command has no message of its own (its status card, posted later, becomes the thread):
    // the run links to the channel it was typed in.
    const triggerUrl = where.permalinkOf
      ? await this.permalink(actor.channel, where.permalinkOf)
      : `https://slack.com/app_redirect?team=${encodeURIComponent(actor.team)}&channel=${encodeURIComponent(actor.channel)}`;
    let created: { run_id: string };
    try {
      created = await this.deps.runs.create(
        {
          ...createBody(command.prompt, command.options),
          creator: user.creator,
          source: "SLACK",
          ...(triggerUrl ? { trigger_url: triggerUrl } : {}),
        },
        { idempotencyKey: where.idempotencyKey },
      );
    } catch (err) {
      return this.ephemeral(
        actor,
        `Could not start the run: ${describeError(err)}`,
        where.thread ?? undefined,
      );
    }
    await this.deps.store.bindThread({
      runId: created.run_id,
      platform: "slack",
      workspace: actor.team,
      channel: actor.channel,
      thread: where.thread,
      triggerRef: where.triggerRef,
      requester: actor.user,
      createdAt: new Date().toISOString(),
    });
  }

  private async followup(
    actor: Actor,
    runId: string,
    message: string,
    idempotencyKey: string,
    known?: ThreadBinding,
  ): Promise<void> {
    const thread = known?.thread ?? undefined;
    const binding = known ?? (await this.deps.store.getThreadBinding(runId));
    const refused = mayActOnRun(this.deps.settings, this.deps.settings.followup, actor, binding);
    if (refused) return this.ephemeral(actor, refused, thread);
    if (message === "")
      return this.ephemeral(actor, "The follow-up is empty: say what the agent should do.", thread);
    try {
      const { outcome } = await this.deps.runs.followup(runId, message, { idempotencyKey });
      await this.ephemeral(actor, followupText(outcome), thread);
    } catch (err) {
      await this.ephemeral(actor, `Could not send the follow-up: ${describeError(err)}`, thread);
    }
  }

  private async cancel(
    actor: Actor,
    user: SlackUser,
    runId: string,
    idempotencyKey: string,
    thread?: string,
  ): Promise<void> {
    const binding = await this.deps.store.getThreadBinding(runId);
    const refused = mayActOnRun(this.deps.settings, this.deps.settings.cancel, actor, binding);
    if (refused) return this.ephemeral(actor, refused, thread);
    try {
      await this.deps.runs.cancel(runId, { by: user.creator, idempotencyKey });
      // The status card says "Cancelled by …" once the notifier sees the change.
    } catch (err) {
      if (runErrorCode(err) === "invalid_request") {
        const run = await this.deps.runs.get(runId).catch(() => undefined);
        return this.ephemeral(
          actor,
          `That run has already finished (${stateWord(run?.state ?? "finished")}).`,
          thread,
        );
      }
      await this.ephemeral(actor, `Could not cancel the run: ${describeError(err)}`, thread);
    }
  }

  private async status(actor: Actor, runId: string, thread?: string): Promise<void> {
    const binding = await this.deps.store.getThreadBinding(runId);
    if (!boundInWorkspace(binding, actor.team)) {
      return this.ephemeral(actor, `No run \`${runId}\` was started from this workspace.`, thread);
    }
    let run: RunItem;
    try {
      run = await this.deps.runs.get(runId);
    } catch (err) {
      return this.ephemeral(actor, `Could not read the run: ${describeError(err)}`, thread);
    }
    const rendered = this.deps.renderStatus?.(run, binding) ?? { text: statusText(run) };
    await this.ephemeral(actor, rendered.text, thread, rendered.blocks);
  }

  private async recentRuns(limit = LIST_LIMIT): Promise<RunItem[]> {
    const page = await this.deps.runs.list({
      source: "SLACK",
      limit,
      sort_by: "created_at",
      sort_order: "desc",
    });
    return page.runs;
  }

  // --- Slack Web API -------------------------------------------------------------------------------

  private async ephemeral(actor: Actor, text: string, threadTs?: string, blocks?: unknown[]): Promise<void> {
    try {
      await this.client.chat.postEphemeral({
        channel: actor.channel,
        user: actor.user,
        text,
        ...(threadTs ? { thread_ts: threadTs } : {}),
        ...(blocks ? { blocks: blocks as never } : {}),
      });
    } catch (err) {
      this.deps.log.warn({ err, channel: actor.channel }, "could not send an ephemeral Slack message");
    }
  }

  private async react(channel: string, ts: string, name: string): Promise<void> {
    try {
      await this.client.reactions.add({ channel, timestamp: ts, name });
    } catch (err) {
      // already_reacted on a retried delivery is fine; anything else is worth a line in the log.
      if ((err as { data?: { error?: string } }).data?.error !== "already_reacted") {
        this.deps.log.warn({ err, channel }, "could not add a Slack reaction");
      }
    }
  }

  private async permalink(channel: string, ts: string): Promise<string | undefined> {
    try {
      const res = await this.client.chat.getPermalink({ channel, message_ts: ts });
      return res.permalink;
    } catch (err) {
      this.deps.log.warn({ err, channel }, "could not get a Slack permalink");
      return undefined;
    }
  }

  /** The Slack user as a run creator, plus what says whether they are external. Cached for minutes. */
  private async lookUpUser(actor: Actor): Promise<SlackUser> {
    const cacheKey = `${actor.team}:${actor.user}`;
    const cached = this.users.get(cacheKey);
    if (cached && Date.now() - cached.at < USER_CACHE_MS) return cached.user;
    let name = actor.user;
    let userTeam: string | undefined;
    let stranger = false;
    try {
      const res = await this.client.users.info({ user: actor.user });
      const u = res.user as
        | {
            name?: string;
            real_name?: string;
            team_id?: string;
            is_stranger?: boolean;
            profile?: { display_name?: string };
          }
        | undefined;
      name = u?.profile?.display_name || u?.real_name || u?.name || actor.user;
      userTeam = u?.team_id;
      stranger = u?.is_stranger === true;
    } catch (err) {
      // The run still gets a creator; only the display name is poorer. Not cached, so it is retried.
      this.deps.log.warn({ err, user: actor.user }, "users.info failed");
      return { creator: creatorOf(actor, name), userTeam, stranger };
    }
    const user = { creator: creatorOf(actor, name), userTeam, stranger };
    if (this.users.size >= USER_CACHE_MAX) this.users.delete(this.users.keys().next().value!);
    this.users.set(cacheKey, { user, at: Date.now() });
    return user;
  }
}

function creatorOf(actor: Actor, displayName: string): Creator {
  return { type: "user", uid: `slack:${actor.team}:${actor.user}`, display_name: displayName };
}

/** `<@UBOT> do this` → `do this`; without the bot's id, the leading mention is the bot's. */
export function stripBotMention(text: string, botUserId: string | undefined): string {
  if (botUserId) return text.replaceAll(new RegExp(`<@${botUserId}(?:\\|[^>]*)?>`, "g"), "").trim();
  return text.replace(/^\s*<@[A-Z0-9]+(?:\|[^>]*)?>/, "").trim();
}

/** Bolt and the Web API client log through the service's pino logger. */
function slackLogger(log: Logger): SlackLogger {
  const child = log.child({ component: "slack" });
  let level: LogLevel = LogLevel.WARN;
  const fmt = (msg: unknown[]) => msg.map((m) => (typeof m === "string" ? m : JSON.stringify(m))).join(" ");
  return {
    debug: (...msg) => child.debug(fmt(msg)),
    info: (...msg) => child.info(fmt(msg)),
    warn: (...msg) => child.warn(fmt(msg)),
    error: (...msg) => child.error(fmt(msg)),
    setLevel: (l) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => {},
  };
}
