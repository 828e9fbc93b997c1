import type { App } from "@slack/bolt";
import type { Logger } from "pino";
import type { SlackSettings } from "../../config-file.ts";
import type { RepositoryParsing } from "../../model/repository.ts";
import type { PlanAnswer } from "../../runs/plan-approval.ts";
import type { Store } from "../../store/store.ts";
import { type Command, GrammarError, parseCommand } from "../grammar.ts";
import { type Actor, refusal } from "./access.ts";
import type { BudgetAnswers } from "./budget-answers.ts";
import { claimDelivery, idempotencyKeyFor } from "./inbound.ts";
import { grammarErrorText, plainText } from "./messages.ts";
import type { PlanAnswers } from "./plan-answers.ts";
import { CLAIMED } from "./receiver.ts";
import type { Responder } from "./responder.ts";
import type { ScheduleVerbs } from "./schedule-verbs.ts";
import type { SlackFiles } from "./slack-files.ts";
import { ACTION_CANCEL, ACTION_OPEN_SESSION, ACTION_RETRY } from "./status-card.ts";
import type { UserDirectory } from "./user-directory.ts";
import type { SharedFiles, Verbs } from "./verbs.ts";
import {
  ACTION_APPROVE,
  ACTION_EXTEND_BUDGET,
  ACTION_REVISE,
  ACTION_STOP_BUDGET,
  REVISE_BLOCK,
  REVISE_INPUT,
  REVISE_VIEW,
  reviseOrigin,
} from "./waiting-card.ts";
import { loginText, type WebLogin } from "./web-login.ts";
import type { WorkQueue } from "./work-queue.ts";

// biome-ignore lint/suspicious/noExplicitAny: Slack payloads are read field by field, defensively
type Payload = Record<string, any>;

/** Words that, at the start of a mention in a run's thread, are a verb rather than a follow-up. */
const THREAD_VERBS = [
  "cancel",
  "status",
  "help",
  "list",
  "new",
  "repo",
  "agent",
  "schedule",
  "schedules",
  "unschedule",
  "plan",
  "approve",
  "revise",
];

export interface ListenersDeps {
  /** The slash command, as configured (`/agent`). */
  command: string;
  settings: SlackSettings;
  store: Pick<Store, "claimInbound" | "findLatestBinding">;
  verbs: Verbs;
  /** `approve`, `revise`, and the card's Approve and Request changes buttons. */
  planAnswers: PlanAnswers;
  /** The card's Extend by $X and Stop here buttons. */
  budgetAnswers: BudgetAnswers;
  /** `schedule`, `schedules`, `unschedule`. */
  scheduleVerbs: ScheduleVerbs;
  responder: Responder;
  users: UserDirectory;
  work: WorkQueue;
  /** Downloads the files shared with a mention as the run's attachments. */
  files: Pick<SlackFiles, "collect">;
  log: Logger;
  /** How `in owner/repo` and `repo owner/repo` are read (the server's GitHub URL, file remotes). */
  repositories?: RepositoryParsing;
  /** Issues web sign-in links (`login`); absent where this Dispatch serves no web app (remote mode). */
  webLogin?: WebLogin;
}

/**
 * Bolt's listeners: the slash command, mentions and the status card's buttons. Each acknowledges first,
 * then reads the payload into an actor and a command, checks the allowlists and hands the command to a
 * verb; over HTTP the delivery was acknowledged when it was stored, and this is the inbox queue's work.
 */
export class Listeners {
  private readonly deps: ListenersDeps;

  constructor(deps: ListenersDeps) {
    this.deps = deps;
  }

  register(app: App): void {
    const { command: slashCommand, store, log } = this.deps;
    app.use(async ({ body, context, next }) => {
      // Socket Mode deliveries skip the HTTP receiver, which claims before acknowledging.
      if (!context[CLAIMED] && !(await claimDelivery(store, body as Payload))) return;
      await next();
    });
    app.command(slashCommand, async ({ ack, command }) => {
      await ack();
      await this.onCommand(command as unknown as Payload);
    });
    app.event("app_mention", async ({ event, body }) => {
      await this.onMention(event as unknown as Payload, body as Payload);
    });
    // A person's own message in a DM with the app (the assistant pane's threads) is read like a mention:
    // it starts a run bound to its thread, or follows up on the thread's run.
    app.event("message", async ({ event, body }) => {
      const e = event as unknown as Payload;
      if (e.channel_type !== "im" || e.subtype || e.bot_id) return;
      await this.onMention(e, body as Payload);
    });
    app.action(ACTION_CANCEL, async ({ ack, body }) => {
      await ack();
      await this.onCancelButton(body as Payload);
    });
    app.action(ACTION_RETRY, async ({ ack, body }) => {
      await ack();
      await this.onRetryButton(body as Payload);
    });
    app.action(ACTION_APPROVE, async ({ ack, body }) => {
      await ack();
      await this.onPlanButton(body as Payload, "approve");
    });
    app.action(ACTION_REVISE, async ({ ack, body }) => {
      await ack();
      await this.onPlanButton(body as Payload, "revise");
    });
    app.action(ACTION_EXTEND_BUDGET, async ({ ack, body }) => {
      await ack();
      await this.onBudgetButton(body as Payload, "extend");
    });
    app.action(ACTION_STOP_BUDGET, async ({ ack, body }) => {
      await ack();
      await this.onBudgetButton(body as Payload, "stop");
    });
    app.view(REVISE_VIEW, async ({ ack, body }) => {
      await ack();
      await this.onReviseSubmitted(body as Payload);
    });
    // A link button still sends an action; acknowledge it so Slack shows no error.
    app.action(ACTION_OPEN_SESSION, async ({ ack }) => {
      await ack();
    });
    app.error(async (err) => {
      log.error({ err }, "Slack listener failed");
    });
  }

  private async onCommand(payload: Payload): Promise<void> {
    const { command: slashCommand, settings, verbs, responder, users } = this.deps;
    const actor: Actor = { team: payload.team_id, channel: payload.channel_id, user: payload.user_id };
    const say = (text: string) => responder.ephemeral(actor, text);
    let command: Command;
    try {
      command = parseCommand(plainText(String(payload.text ?? "")), "slash", this.grammar());
    } catch (err) {
      if (err instanceof GrammarError) return say(grammarErrorText(err.message, slashCommand));
      throw err;
    }
    if (command.verb === "help") return verbs.help(actor);
    const user = await users.lookUp(actor);
    const refused = refusal(settings, { ...actor, userTeam: user.userTeam, stranger: user.stranger });
    if (refused) return say(refused);

    switch (command.verb) {
      case "list":
        return verbs.list(actor);
      case "status":
        if (!command.runId) return verbs.listOwn(actor);
        return verbs.status(actor, command.runId);
      case "cancel":
        if (!command.runId) return say(`Which run? \`${slashCommand} cancel <run>\``);
        return verbs.cancel(actor, user, command.runId, idempotencyKeyFor(payload, "cancel"));
      case "followup":
        return verbs.followup(actor, command.runId, command.message, idempotencyKeyFor(payload, "followup"));
      case "repo":
        return verbs.repo(actor, command.repository);
      case "agent":
        return verbs.agent(actor, command.agent);
      case "schedule":
        return this.deps.scheduleVerbs.schedule(actor, user, command, idempotencyKeyFor(payload, "schedule"));
      case "schedules":
        return this.deps.scheduleVerbs.list(actor);
      case "unschedule":
        return this.deps.scheduleVerbs.unschedule(actor, command.name);
      case "login":
        return say(await loginText(this.deps.webLogin, user, slashCommand));
      case "approve":
      case "revise":
        if (!command.runId) {
          return say(
            `Which run? \`${slashCommand} ${command.verb} <run> …\`, or use the buttons on its status card.`,
          );
        }
        return this.deps.planAnswers.answer(
          actor,
          command.runId,
          planAnswerOf(command),
          idempotencyKeyFor(payload, command.verb),
        );
      case "run":
        return verbs.startRun(actor, user, command, {
          thread: null,
          triggerRef: null,
          idempotencyKey: idempotencyKeyFor(payload, "create"),
        });
    }
  }

  private async onMention(event: Payload, body: Payload): Promise<void> {
    const { command: slashCommand, settings, store, verbs, responder, users, work } = this.deps;
    if (!event.user || event.bot_id) return;
    // Downloaded only by the verb that uses them (a run or a follow-up), after every check has passed.
    const files: SharedFiles | undefined = event.files?.length
      ? () => this.deps.files.collect(event.files)
      : undefined;
    const team = String(body.team_id ?? event.team);
    const threadTs: string | undefined = event.thread_ts;
    const actor: Actor = { team, channel: event.channel, user: event.user, userTeam: event.user_team };
    const replyThread = threadTs ?? event.ts;
    const reply = (text: string) => responder.ephemeral(actor, text, replyThread);
    if (refusal(settings, actor)) return reply(refusal(settings, actor)!);
    // Received: the notifier later adds the outcome reaction.
    work.track(responder.react(event.channel, event.ts, "eyes"));
    const user = await users.lookUp(actor);
    const refused = refusal(settings, {
      ...actor,
      stranger: user.stranger,
      userTeam: actor.userTeam ?? user.userTeam,
    });
    if (refused) return reply(refused);

    const botUser: string | undefined = body.authorizations?.[0]?.user_id;
    const text = plainText(stripBotMention(String(event.text ?? ""), botUser));
    const binding = threadTs
      ? await store.findLatestBinding({
          platform: "slack",
          workspace: team,
          channel: actor.channel,
          thread: threadTs,
        })
      : undefined;
    const verb = (text.trim().split(/\s+/)[0] ?? "").toLowerCase();

    // In a run's thread, anything that is not a verb is a follow-up to the thread's latest run.
    if (binding && !THREAD_VERBS.includes(verb)) {
      return verbs.followup(
        actor,
        binding.runId,
        text.trim(),
        idempotencyKeyFor(body, "followup"),
        binding,
        files,
      );
    }
    let command: Command;
    try {
      command = parseCommand(text, "mention", this.grammar());
    } catch (err) {
      if (err instanceof GrammarError) return reply(grammarErrorText(err.message, slashCommand));
      throw err;
    }
    switch (command.verb) {
      case "help":
        return verbs.help(actor, replyThread);
      case "list":
        return verbs.list(actor, replyThread);
      case "status":
      case "cancel": {
        const runId = command.runId ?? binding?.runId;
        if (!runId)
          return reply(`Mention me with \`${command.verb}\` inside a run's thread, or name the run.`);
        if (command.verb === "status") return verbs.status(actor, runId, threadTs);
        return verbs.cancel(actor, user, runId, idempotencyKeyFor(body, "cancel"), threadTs);
      }
      case "run":
        if (binding && !command.forceNew) {
          return verbs.followup(
            actor,
            binding.runId,
            text.trim(),
            idempotencyKeyFor(body, "followup"),
            binding,
            files,
          );
        }
        return verbs.startRun(actor, user, command, {
          thread: threadTs ?? event.ts,
          triggerRef: event.ts,
          permalinkOf: event.ts,
          idempotencyKey: idempotencyKeyFor(body, "create"),
          ...(files ? { files } : {}),
        });
      case "approve":
      case "revise": {
        const runId = command.runId ?? binding?.runId;
        if (!runId)
          return reply(`Mention me with \`${command.verb}\` inside the thread of the run whose plan waits.`);
        const key = idempotencyKeyFor(body, command.verb);
        return this.deps.planAnswers.answer(actor, runId, planAnswerOf(command), key, threadTs);
      }
      case "repo":
        return verbs.repo(actor, command.repository, replyThread);
      case "agent":
        return verbs.agent(actor, command.agent, replyThread);
      case "schedule": {
        const key = idempotencyKeyFor(body, "schedule");
        return this.deps.scheduleVerbs.schedule(actor, user, command, key, replyThread);
      }
      case "schedules":
        return this.deps.scheduleVerbs.list(actor, replyThread);
      case "unschedule":
        return this.deps.scheduleVerbs.unschedule(actor, command.name, replyThread);
      case "followup":
      case "login":
        // Not produced on the mention surface.
        return;
    }
  }

  private grammar() {
    return this.deps.repositories ? { repositories: this.deps.repositories } : {};
  }

  private async onCancelButton(body: Payload): Promise<void> {
    const { settings, verbs, responder, users } = this.deps;
    const clicked = cardButton(body);
    if (!clicked) return;
    const { runId, actor, cardTs, threadTs } = clicked;
    const early = refusal(settings, actor);
    if (early) return responder.ephemeral(actor, early, threadTs);
    const user = await users.lookUp(actor);
    const key = idempotencyKeyFor(body, "cancel");
    await verbs.cancelFromCard(actor, user, runId, cardTs, key, threadTs);
  }

  /** Retry on a stalled run's card: whoever may start a run here may start it again (verbs.retryFromCard). */
  private async onRetryButton(body: Payload): Promise<void> {
    const { settings, verbs, responder, users } = this.deps;
    const clicked = cardButton(body);
    if (!clicked) return;
    const { runId, actor, cardTs, threadTs } = clicked;
    const early = refusal(settings, actor);
    if (early) return responder.ephemeral(actor, early, threadTs);
    const user = await users.lookUp(actor);
    // The same check as a new request's: a stranger (Slack Connect) may not start runs.
    const refused = refusal(settings, { ...actor, userTeam: user.userTeam, stranger: user.stranger });
    if (refused) return responder.ephemeral(actor, refused, threadTs);
    const key = idempotencyKeyFor(body, "retry");
    await verbs.retryFromCard(actor, user, runId, cardTs, key, threadTs);
  }

  /** Approve, or Request changes (which opens the modal), on a card whose plan waits for approval. */
  private async onPlanButton(body: Payload, which: "approve" | "revise"): Promise<void> {
    const { settings, responder, planAnswers } = this.deps;
    const clicked = cardButton(body);
    if (!clicked) return;
    const { runId, actor, cardTs, threadTs } = clicked;
    const early = refusal(settings, actor);
    if (early) return responder.ephemeral(actor, early, threadTs);
    if (which === "revise") return planAnswers.openRevise(actor, runId, cardTs, body.trigger_id, threadTs);
    await planAnswers.approveFromCard(actor, runId, cardTs, idempotencyKeyFor(body, "approve"), threadTs);
  }

  /** Extend by $X or Stop here, on a card whose run waits for budget: the clicker answers as themself. */
  private async onBudgetButton(body: Payload, action: "extend" | "stop"): Promise<void> {
    const { settings, responder, users, budgetAnswers } = this.deps;
    const clicked = cardButton(body);
    if (!clicked) return;
    const { runId, actor, cardTs, threadTs } = clicked;
    const early = refusal(settings, actor);
    if (early) return responder.ephemeral(actor, early, threadTs);
    const user = await users.lookUp(actor);
    const key = idempotencyKeyFor(body, action);
    await budgetAnswers.fromCard(actor, user.creator, runId, cardTs, action, key, threadTs);
  }

  /** The Request changes modal, submitted: the card it came from is in its private_metadata. */
  private async onReviseSubmitted(body: Payload): Promise<void> {
    const { settings, responder, planAnswers } = this.deps;
    const origin = reviseOrigin(body.view?.private_metadata);
    if (!origin || !body.user?.id) return;
    const actor: Actor = {
      team: body.team?.id ?? body.user.team_id,
      channel: origin.channel,
      user: body.user.id,
      userTeam: body.user.team_id,
    };
    const early = refusal(settings, actor);
    if (early) return responder.ephemeral(actor, early, origin.threadTs);
    const changes = String(body.view?.state?.values?.[REVISE_BLOCK]?.[REVISE_INPUT]?.value ?? "");
    await planAnswers.reviseFromModal(actor, origin, changes, idempotencyKeyFor(body, "revise"));
  }
}

/** What `approve [note]` or `revise <changes>` says to the plan. */
function planAnswerOf(command: Command & { verb: "approve" | "revise" }): PlanAnswer {
  if (command.verb === "revise") return { action: "revise", message: command.changes };
  return { action: "approve", ...(command.note ? { message: command.note } : {}) };
}

/** A status card's button click: the run it names (the button's value), who clicked where, and the card. */
function cardButton(
  body: Payload,
): { runId: string; actor: Actor; cardTs: string | undefined; threadTs: string | undefined } | undefined {
  const action = body.actions?.[0];
  const actor: Actor = {
    team: body.team?.id ?? body.user?.team_id,
    channel: body.channel?.id ?? body.container?.channel_id,
    user: body.user?.id,
    userTeam: body.user?.team_id,
  };
  if (!action?.value || !actor.user || !actor.channel) return undefined;
  const cardTs: string | undefined = body.container?.message_ts ?? body.message?.ts;
  return { runId: String(action.value), actor, cardTs, threadTs: body.message?.thread_ts ?? cardTs };
}

/** `<@UBOT> do this` → `do this`; without the bot's id, the leading mention is the bot's. */
function stripBotMention(text: string, botUserId: string | undefined): string {
  if (botUserId) return text.replaceAll(new RegExp(`<@${botUserId}(?:\\|[^>]*)?>`, "g"), "").trim();
  return text.replace(/^\s*<@[A-Z0-9]+(?:\|[^>]*)?>/, "").trim();
}
