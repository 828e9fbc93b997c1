import type { RunAccess } from "../../access/run-access.ts";
import type { SlackSettings } from "../../config-file.ts";
import type { RepositorySpec } from "../../model/repository.ts";
import { stateWord } from "../../model/run-wording.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import { retryInput } from "../../runs/retry.ts";
import type { RunItem } from "../../runs/run-item.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import { withPlan } from "../../runs/waiting-run.ts";
import type { Store } from "../../store/store.ts";
import type { CollectedImages } from "../attachments/collect-images.ts";
import { type Command, createBody, describeRepository } from "../grammar.ts";
import { describeError, refusedAgent, runErrorCode } from "../run-errors.ts";
import { type Actor, boundHere, channelThreadKey, mayActOnRun, notHereText } from "./access.ts";
import { channelAgent, channelAgentHint, channelAgentVerb } from "./channel-agent.ts";
import { channelSettingAudit } from "./channel-audit.ts";
import { channelRepositoryText, followupText, helpText, listText, statusText } from "./messages.ts";
import type { Responder } from "./responder.ts";
import { escapeMrkdwn } from "./status-card.ts";
import type { SlackUser } from "./user-directory.ts";

const LIST_LIMIT = 10;
/** How many of a channel's latest runs `status` looks through for the actor's own. */
const SCAN_LIMIT = 100;

/** Renders a run for `status` (the notifier's status card when it provides one). */
export type StatusRenderer = (
  run: RunItem,
  binding: ThreadBinding | undefined,
) => { text: string; blocks?: unknown[] };

/**
 * The files shared with the message, downloaded when called: only once the request is known to be allowed,
 * right before the run is created or the follow-up sent.
 */
export type SharedFiles = () => Promise<CollectedImages>;

export interface VerbsDeps {
  /** The slash command, as help and hints spell it. */
  command: string;
  settings: SlackSettings;
  runs: RunsApi;
  store: Pick<
    Store,
    | "bindThread"
    | "getThreadBinding"
    | "listChannelBindings"
    | "getCardState"
    | "getChannelSettings"
    | "setChannelRepository"
    | "setChannelAgent"
    | "appendAuditEvent"
  >;
  responder: Responder;
  /** The one access rule: who may follow up, cancel or retry a run of this channel. */
  access: RunAccess;
  renderStatus?: StatusRenderer;
}

/**
 * What each parsed command does, whichever surface it came from (slash command, mention, button): acts
 * through RunsApi and answers the actor ephemerally, in `thread` when one is given. Every verb sees only
 * the runs started in the channel (and workspace) it was typed in.
 */
export class Verbs {
  private readonly deps: VerbsDeps;

  constructor(deps: VerbsDeps) {
    this.deps = deps;
  }

  help(actor: Actor, thread?: string): Promise<void> {
    return this.deps.responder.ephemeral(actor, helpText(this.deps.command), thread);
  }

  async list(actor: Actor, thread?: string): Promise<void> {
    const runs = await this.runsHere(actor, LIST_LIMIT);
    await this.deps.responder.ephemeral(actor, listText(runs, "Recent runs in this channel"), thread);
  }

  /** `status` without a run: the actor's own recent runs in this channel. */
  async listOwn(actor: Actor): Promise<void> {
    const mine = await this.runsHere(actor, LIST_LIMIT, (b) => b.requester === actor.user);
    await this.deps.responder.ephemeral(actor, listText(mine, "Your recent runs in this channel"));
  }

  async startRun(
    actor: Actor,
    user: SlackUser,
    command: Command & { verb: "run" },
    where: {
      thread: string | null;
      triggerRef: string | null;
      permalinkOf?: string;
      idempotencyKey: string;
      files?: SharedFiles;
    },
  ): Promise<void> {
    const { runs, store, responder } = this.deps;
    // A slash command has no message of its own (its status card, posted later, becomes the thread):
    // the run links to the channel it was typed in.
    // docs/delivery.md: `in owner/repo` beats the channel's default repository.
    const fallback = command.repository ? undefined : await this.channelRepository(actor);
    const repository = command.repository ?? fallback;
    // `--agent` (or `harness=`) beats the channel's default agent.
    const fallbackAgent = command.options.harness ? undefined : await channelAgent(store, actor);
    const options = fallbackAgent ? { ...command.options, harness: fallbackAgent } : command.options;
    const triggerUrl = where.permalinkOf
      ? await responder.permalink(actor.channel, where.permalinkOf)
      : `https://slack.com/app_redirect?team=${encodeURIComponent(actor.team)}&channel=${encodeURIComponent(actor.channel)}`;
    const attachments = await this.attachmentsOf(actor, where.files, where.thread ?? undefined);
    let created: { run_id: string };
    try {
      created = await runs.create(
        {
          ...createBody(command.prompt, options, repository, command.mode),
          creator: user.creator,
          source: "SLACK",
          ...(triggerUrl ? { trigger_url: triggerUrl } : {}),
          ...(attachments.length ? { attachments } : {}),
        },
        { idempotencyKey: where.idempotencyKey },
      );
    } catch (err) {
      // A default the server refuses is the channel's setting, not what was typed: say where it came from.
      const hint =
        fallback && runErrorCode(err) === "invalid_request"
          ? `\n(\`${describeRepository(fallback)}\` is this channel's default repository: \`${this.deps.command} repo\` changes it.)`
          : "";
      const agentHint =
        fallbackAgent && refusedAgent(err) ? channelAgentHint(this.deps.command, fallbackAgent) : "";
      return responder.ephemeral(
        actor,
        `Could not start the run: ${describeError(err)}${hint}${agentHint}`,
        where.thread ?? undefined,
      );
    }
    await store.bindThread({
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

  /**
   * `repo`: shows the channel's default repository (`repository` absent), sets it, or clears it (null).
   * Whoever may start runs here may change it; the listeners have checked that already.
   */
  async repo(actor: Actor, repository: RepositorySpec | null | undefined, thread?: string): Promise<void> {
    const { store, responder, command } = this.deps;
    const where = { platform: "slack" as const, workspace: actor.team, channel: actor.channel };
    if (repository === undefined) {
      const settings = await store.getChannelSettings(where);
      const current = settings?.repository
        ? describeRepository({
            repository: settings.repository,
            ...(settings.baseBranch ? { base: settings.baseBranch } : {}),
          })
        : undefined;
      return responder.ephemeral(
        actor,
        channelRepositoryText(
          command,
          current,
          settings ? { by: settings.updatedBy, at: settings.updatedAt } : undefined,
        ),
        thread,
      );
    }
    await store.setChannelRepository(where, repository, actor.user, new Date().toISOString());
    await store.appendAuditEvent(
      channelSettingAudit(actor, "channel.repository_set", {
        repository: repository ? describeRepository(repository) : null,
      }),
    );
    const text = repository
      ? `Runs started in this channel now work in \`${escapeMrkdwn(describeRepository(repository))}\` and open a pull request there, unless the command says \`in owner/repo\`.`
      : `This channel has no default repository any more: runs started here work in an empty workspace unless the command says \`in owner/repo\`.`;
    await responder.ephemeral(actor, text, thread);
  }

  /** `agent`: shows, sets or clears (null) the channel's default agent (channel-agent.ts). */
  async agent(actor: Actor, agent: string | null | undefined, thread?: string): Promise<void> {
    const text = await channelAgentVerb(this.deps.store, actor, this.deps.command, agent);
    await this.deps.responder.ephemeral(actor, text, thread);
  }

  /**
   * Downloads the files shared with the message and says, in the thread, which were not attached and why
   * (never silently: a file left out is named).
   */
  private async attachmentsOf(actor: Actor, files: SharedFiles | undefined, thread: string | undefined) {
    if (!files) return [];
    const { attachments, notes } = await files();
    if (notes.length > 0) await this.deps.responder.ephemeral(actor, notes.join("\n"), thread);
    return attachments;
  }

  /** The channel's default repository, when one is set. */
  private async channelRepository(actor: Actor): Promise<RepositorySpec | undefined> {
    const settings = await this.deps.store.getChannelSettings({
      platform: "slack",
      workspace: actor.team,
      channel: actor.channel,
    });
    if (!settings?.repository) return undefined;
    return { repository: settings.repository, ...(settings.baseBranch ? { base: settings.baseBranch } : {}) };
  }

  /** `known`: the thread's binding when the follow-up was typed in the run's thread. */
  async followup(
    actor: Actor,
    runId: string,
    message: string,
    idempotencyKey: string,
    known?: ThreadBinding,
    files?: SharedFiles,
  ): Promise<void> {
    const { runs, responder, access } = this.deps;
    const thread = known?.thread ?? undefined;
    const binding = boundHere(
      known ?? (await this.deps.store.getThreadBinding(runId, channelThreadKey(actor))),
      actor,
    );
    if (!binding) return responder.ephemeral(actor, notHereText(runId), thread);
    const refused = await mayActOnRun(access, "followup", actor, binding);
    if (refused) return responder.ephemeral(actor, refused, thread);
    if (message === "")
      return responder.ephemeral(actor, "The follow-up is empty: say what the agent should do.", thread);
    const attachments = await this.attachmentsOf(actor, files, thread);
    try {
      const { outcome } = await runs.followup(runId, message, {
        idempotencyKey,
        ...(attachments.length ? { attachments } : {}),
      });
      await responder.ephemeral(actor, followupText(outcome), thread);
    } catch (err) {
      await responder.ephemeral(actor, `Could not send the follow-up: ${describeError(err)}`, thread);
    }
  }

  async cancel(
    actor: Actor,
    user: SlackUser,
    runId: string,
    idempotencyKey: string,
    thread?: string,
  ): Promise<void> {
    const { runs, store, responder, access } = this.deps;
    const binding = boundHere(await store.getThreadBinding(runId, channelThreadKey(actor)), actor);
    if (!binding) return responder.ephemeral(actor, notHereText(runId), thread);
    const refused = await mayActOnRun(access, "cancel", actor, binding);
    if (refused) return responder.ephemeral(actor, refused, thread);
    try {
      await runs.cancel(runId, { by: user.creator, idempotencyKey });
      // The status card says "Cancelled by …" once the notifier sees the change.
    } catch (err) {
      if (runErrorCode(err) === "invalid_request") {
        const run = await runs.get(runId).catch(() => undefined);
        return responder.ephemeral(
          actor,
          `That run has already finished (${stateWord(run?.state ?? "finished")}).`,
          thread,
        );
      }
      await responder.ephemeral(actor, `Could not cancel the run: ${describeError(err)}`, thread);
    }
  }

  /** The Cancel button: it acts only on the run of the status card it is on (`cardTs`). */
  async cancelFromCard(
    actor: Actor,
    user: SlackUser,
    runId: string,
    cardTs: string | undefined,
    idempotencyKey: string,
    thread?: string,
  ): Promise<void> {
    const card = await this.deps.store.getCardState(runId, channelThreadKey(actor));
    if (!cardTs || card?.cardRef !== cardTs) {
      return this.deps.responder.ephemeral(actor, notHereText(runId), thread);
    }
    await this.cancel(actor, user, runId, idempotencyKey, thread);
  }

  /**
   * The Retry button of a stalled run's card (`cardTs`): starts a new run with the same request
   * (prompt, title, config) as the clicking user, bound to the same thread so its own card follows there,
   * then cancels the stalled run if it is still going. The listener checked that the user may start runs
   * here; cancelling someone else's run also needs the channel's cancel policy. The new run is created
   * first: a refused create leaves the stalled run alone.
   */
  async retryFromCard(
    actor: Actor,
    user: SlackUser,
    runId: string,
    cardTs: string | undefined,
    idempotencyKey: string,
    thread?: string,
  ): Promise<void> {
    const { runs, store, responder, access } = this.deps;
    const card = await store.getCardState(runId, channelThreadKey(actor));
    const binding = boundHere(await store.getThreadBinding(runId, channelThreadKey(actor)), actor);
    if (!cardTs || card?.cardRef !== cardTs || !binding) {
      return responder.ephemeral(actor, notHereText(runId), thread);
    }
    let run: RunItem;
    try {
      run = await runs.get(runId);
    } catch (err) {
      return responder.ephemeral(actor, `Could not read the run: ${describeError(err)}`, thread);
    }
    const running = run.state === "QUEUED" || run.state === "INPROGRESS";
    if (running) {
      const refused = await mayActOnRun(access, "cancel", actor, binding);
      if (refused) return responder.ephemeral(actor, refused, thread);
    }
    let created: { run_id: string };
    try {
      created = await runs.create(
        {
          ...retryInput({
            prompt: run.prompt,
            title: run.title,
            config: run.agent_config,
            fromSkill: run.agent_skill !== undefined,
          }),
          creator: user.creator,
          source: "SLACK",
          ...(run.trigger_url ? { trigger_url: run.trigger_url } : {}),
        },
        { idempotencyKey, retryOf: runId },
      );
    } catch (err) {
      return responder.ephemeral(actor, `Could not start the run again: ${describeError(err)}`, thread);
    }
    await store.bindThread({
      runId: created.run_id,
      platform: "slack",
      workspace: actor.team,
      channel: actor.channel,
      // A slash command's run has its card as its thread.
      thread: binding.thread ?? cardTs,
      triggerRef: null,
      requester: actor.user,
      createdAt: new Date().toISOString(),
    });
    if (!running) return;
    try {
      await runs.cancel(runId, { by: user.creator, idempotencyKey: `${idempotencyKey}-cancel` });
    } catch (err) {
      // Finished meanwhile: nothing is left to stop.
      if (runErrorCode(err) === "invalid_request") return;
      await responder.ephemeral(
        actor,
        `Started the run again, but could not cancel the stalled one: ${describeError(err)}`,
        thread,
      );
    }
  }

  async status(actor: Actor, runId: string, thread?: string): Promise<void> {
    const { runs, store, responder, renderStatus } = this.deps;
    const binding = boundHere(await store.getThreadBinding(runId, channelThreadKey(actor)), actor);
    if (!binding) return responder.ephemeral(actor, notHereText(runId), thread);
    let run: RunItem;
    try {
      run = await runs.get(runId);
    } catch (err) {
      return responder.ephemeral(actor, `Could not read the run: ${describeError(err)}`, thread);
    }
    // A plan waiting for approval is shown as its card shows it (unreadable, the card points to the run page).
    run = await withPlan(runs, run, () => {});
    const rendered = renderStatus?.(run, binding) ?? { text: statusText(run) };
    await responder.ephemeral(actor, rendered.text, thread, rendered.blocks);
  }

  /** The newest runs started in the actor's channel (those `keep` accepts), at most `limit`. */
  private async runsHere(
    actor: Actor,
    limit: number,
    keep?: (binding: ThreadBinding) => boolean,
  ): Promise<RunItem[]> {
    const bindings = await this.deps.store.listChannelBindings(
      { platform: "slack", workspace: actor.team, channel: actor.channel },
      keep ? SCAN_LIMIT : limit,
    );
    const wanted = (keep ? bindings.filter(keep) : bindings).slice(0, limit);
    // A run the service no longer has (or cannot read now) is left out rather than failing the list.
    const runs = await Promise.all(wanted.map((b) => this.deps.runs.get(b.runId).catch(() => undefined)));
    return runs.filter((r): r is RunItem => r !== undefined);
  }
}
