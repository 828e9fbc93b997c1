import type { SlackSettings } from "../../config-file.ts";
import { stateWord } from "../../model/run-wording.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import type { RunItem } from "../../runs/run-item.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { Store } from "../../store/store.ts";
import { type Command, createBody } from "../grammar.ts";
import { describeError, runErrorCode } from "../run-errors.ts";
import { type Actor, boundInWorkspace, mayActOnRun } from "./access.ts";
import { followupText, helpText, listText, statusText } from "./messages.ts";
import type { Responder } from "./responder.ts";
import type { SlackUser } from "./user-directory.ts";

const LIST_LIMIT = 10;

/** Renders a run for `status` (the notifier's status card when it provides one). */
export type StatusRenderer = (
  run: RunItem,
  binding: ThreadBinding | undefined,
) => { text: string; blocks?: unknown[] };

export interface VerbsDeps {
  /** The slash command, as help and hints spell it. */
  command: string;
  settings: SlackSettings;
  runs: RunsApi;
  store: Pick<Store, "bindThread" | "getThreadBinding">;
  responder: Responder;
  renderStatus?: StatusRenderer;
}

/**
 * What each parsed command does, whichever surface it came from (slash command, mention, button): acts
 * through RunsApi and answers the actor ephemerally, in `thread` when one is given.
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
    await this.deps.responder.ephemeral(
      actor,
      listText(await this.recentRuns(), "Recent runs from Slack"),
      thread,
    );
  }

  /** `status` without a run: the actor's own recent runs. */
  async listOwn(actor: Actor, user: SlackUser): Promise<void> {
    const mine = (await this.recentRuns(100)).filter((r) => r.creator?.uid === user.creator.uid);
    await this.deps.responder.ephemeral(actor, listText(mine.slice(0, LIST_LIMIT), "Your recent runs"));
  }

  async startRun(
    actor: Actor,
    user: SlackUser,
    command: Command & { verb: "run" },
    where: { thread: string | null; triggerRef: string | null; permalinkOf?: string; idempotencyKey: string },
  ): Promise<void> {
    const { runs, store, responder } = this.deps;
    // A slash command has no message of its own (its status card, posted later, becomes the thread):
    // the run links to the channel it was typed in.
    const triggerUrl = where.permalinkOf
      ? await responder.permalink(actor.channel, where.permalinkOf)
      : `https://slack.com/app_redirect?team=${encodeURIComponent(actor.team)}&channel=${encodeURIComponent(actor.channel)}`;
    let created: { run_id: string };
    try {
      created = await runs.create(
        {
          ...createBody(command.prompt, command.options),
          creator: user.creator,
          source: "SLACK",
          ...(triggerUrl ? { trigger_url: triggerUrl } : {}),
        },
        { idempotencyKey: where.idempotencyKey },
      );
    } catch (err) {
      return responder.ephemeral(
        actor,
        `Could not start the run: ${describeError(err)}`,
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

  /** `known`: the thread's binding when the follow-up was typed in the run's thread. */
  async followup(
    actor: Actor,
    runId: string,
    message: string,
    idempotencyKey: string,
    known?: ThreadBinding,
  ): Promise<void> {
    const { settings, runs, store, responder } = this.deps;
    const thread = known?.thread ?? undefined;
    const binding = known ?? (await store.getThreadBinding(runId));
    const refused = mayActOnRun(settings, settings.followup, actor, binding);
    if (refused) return responder.ephemeral(actor, refused, thread);
    if (message === "")
      return responder.ephemeral(actor, "The follow-up is empty: say what the agent should do.", thread);
    try {
      const { outcome } = await runs.followup(runId, message, { idempotencyKey });
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
    const { settings, runs, store, responder } = this.deps;
    const binding = await store.getThreadBinding(runId);
    const refused = mayActOnRun(settings, settings.cancel, actor, binding);
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

  async status(actor: Actor, runId: string, thread?: string): Promise<void> {
    const { runs, store, responder, renderStatus } = this.deps;
    const binding = await store.getThreadBinding(runId);
    if (!boundInWorkspace(binding, actor.team)) {
      return responder.ephemeral(actor, `No run \`${runId}\` was started from this workspace.`, thread);
    }
    let run: RunItem;
    try {
      run = await runs.get(runId);
    } catch (err) {
      return responder.ephemeral(actor, `Could not read the run: ${describeError(err)}`, thread);
    }
    const rendered = renderStatus?.(run, binding) ?? { text: statusText(run) };
    await responder.ephemeral(actor, rendered.text, thread, rendered.blocks);
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
}
