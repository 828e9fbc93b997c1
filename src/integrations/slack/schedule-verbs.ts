import type { SlackSettings } from "../../config-file.ts";
import type { RepositorySpec } from "../../model/repository.ts";
import type { ScheduleRecord } from "../../model/schedule.ts";
import type { ScheduleSpec } from "../../schedules/schedule-service.ts";
import type { Store } from "../../store/store.ts";
import { type Command, createBody } from "../grammar.ts";
import { describeError, runErrorCode } from "../run-errors.ts";
import type { Actor } from "./access.ts";
import type { ChannelMembership } from "./channel-members.ts";
import type { ChannelSchedules } from "./channel-schedules.ts";
import type { Responder } from "./responder.ts";
import {
  noScheduleHereText,
  remoteSchedulesText,
  scheduledText,
  schedulesText,
} from "./schedule-messages.ts";
import { escapeMrkdwn } from "./status-card.ts";
import type { SlackUser } from "./user-directory.ts";

/** A name made from a prompt gets -2, -3, … while the team has one like it; this many tries at most. */
const NAME_TRIES = 20;
const NAME_WORDS = 4;
const NAME_MAX = 40;

export interface ScheduleVerbsDeps {
  command: string;
  settings: SlackSettings;
  /** Undefined when the bot fronts a remote Dispatch: every schedule verb then says why it cannot act. */
  schedules: ChannelSchedules | undefined;
  store: Pick<Store, "getChannelSettings">;
  responder: Responder;
  members: ChannelMembership;
}

/**
 * `schedule`, `schedules` and `unschedule`: schedules made in a channel, whose runs post their status cards
 * there. Like the run verbs, each sees only the schedules of the channel it was typed in and answers
 * ephemerally; the listeners have applied the allowlists already.
 */
export class ScheduleVerbs {
  private readonly deps: ScheduleVerbsDeps;

  constructor(deps: ScheduleVerbsDeps) {
    this.deps = deps;
  }

  async schedule(
    actor: Actor,
    user: SlackUser,
    command: Command & { verb: "schedule" },
    idempotencyKey: string,
    thread?: string,
  ): Promise<void> {
    const { schedules, responder } = this.deps;
    const say = (text: string) => responder.ephemeral(actor, text, thread);
    if (!schedules) return say(remoteSchedulesText(this.deps.command));
    const { run } = command;
    // A scheduled run is titled with its schedule's name: a title option would be dropped without a word.
    if (run.options.title) {
      return say(
        "A scheduled run is titled with the schedule's name: use `name:<name>` instead of `title=`.",
      );
    }
    // As for a run started here: `in owner/repo` beats the channel's default repository (read now).
    const repository = run.repository ?? (await this.channelRepository(actor));
    const body = createBody(run.prompt, run.options, repository);
    const agentConfig = {
      ...(body.config ?? {}),
      ...(body.skill ? { skill_spec: body.skill } : {}),
    } as ScheduleSpec["agentConfig"];
    const reportTo = {
      platform: "slack" as const,
      workspace: actor.team,
      channel: actor.channel,
      thread: null,
      requester: actor.user,
    };
    // The key covers what was typed, not the name tried: a retry of the same delivery finds its schedule.
    const request = { ...reportTo, cron: command.cron, name: command.name ?? null, run };
    const names = command.name ? [command.name] : candidateNames(run.prompt || run.options.skill || "");
    for (const [i, name] of names.entries()) {
      try {
        const created = await schedules.create(
          user.creator,
          { name, cronSchedule: command.cron, prompt: run.prompt, agentConfig },
          reportTo,
          { key: idempotencyKey, request },
        );
        return say(scheduledText(this.deps.command, created, schedules.nextRun(created)));
      } catch (err) {
        const taken = runErrorCode(err) === "conflict";
        if (taken && !command.name && i < names.length - 1) continue;
        const hint = taken && command.name ? " Choose another `name:`." : "";
        return say(`Could not schedule it: ${describeError(err)}${hint}`);
      }
    }
  }

  async list(actor: Actor, thread?: string): Promise<void> {
    const { schedules, responder, command } = this.deps;
    if (!schedules) return responder.ephemeral(actor, remoteSchedulesText(command), thread);
    let found: ScheduleRecord[];
    try {
      found = await schedules.list({ platform: "slack", workspace: actor.team, channel: actor.channel });
    } catch (err) {
      return responder.ephemeral(actor, `Could not list the schedules: ${describeError(err)}`, thread);
    }
    const rows = found.map((schedule) => ({ schedule, nextRun: schedules.nextRun(schedule) }));
    await responder.ephemeral(actor, schedulesText(command, rows), thread);
  }

  /**
   * Deletes a schedule of this channel. Who may: as for cancelling a run here (`settings.cancel`), the
   * person who made it, or any member of the channel.
   */
  async unschedule(actor: Actor, name: string, thread?: string): Promise<void> {
    const { schedules, responder, command, settings } = this.deps;
    const say = (text: string) => responder.ephemeral(actor, text, thread);
    if (!schedules) return say(remoteSchedulesText(command));
    const schedule = await schedules.findByName(name);
    const here = schedule?.reportTo;
    if (
      !schedule ||
      here?.platform !== "slack" ||
      here.workspace !== actor.team ||
      here.channel !== actor.channel
    ) {
      return say(noScheduleHereText(command, name));
    }
    const refused = await this.mayDelete(settings.cancel, actor, here.requester);
    if (refused) return say(refused);
    try {
      await schedules.delete(schedule.id);
    } catch (err) {
      if (runErrorCode(err) === "resource_not_found") return say(noScheduleHereText(command, name));
      return say(`Could not delete the schedule: ${describeError(err)}`);
    }
    await say(`Deleted the schedule *${escapeMrkdwn(schedule.name)}*; the runs it already started are kept.`);
  }

  private async mayDelete(
    policy: "channel" | "requester",
    actor: Actor,
    requester: string,
  ): Promise<string | undefined> {
    if (policy === "requester") {
      return requester === actor.user
        ? undefined
        : `Only <@${requester}>, who made this schedule, may delete it.`;
    }
    const membership = await this.deps.members.check(actor.channel, actor.user);
    switch (membership.kind) {
      case "member":
        return undefined;
      case "not_member":
        return `Only members of <#${actor.channel}> may delete its schedules; join the channel first.`;
      case "unknown":
        return `Could not check that you are a member of <#${actor.channel}> (Slack said: ${membership.reason}). Try again.`;
    }
  }

  private async channelRepository(actor: Actor): Promise<RepositorySpec | undefined> {
    const settings = await this.deps.store.getChannelSettings({
      platform: "slack",
      workspace: actor.team,
      channel: actor.channel,
    });
    if (!settings?.repository) return undefined;
    return { repository: settings.repository, ...(settings.baseBranch ? { base: settings.baseBranch } : {}) };
  }
}

/**
 * Names for a schedule named after its prompt: its first words as a slug ("Summarise yesterday's PRs" →
 * summarise-yesterdays-prs), then the same with -2, -3, … for when the team has that name already.
 */
export function candidateNames(prompt: string): string[] {
  const words = prompt
    .toLowerCase()
    .replace(/['’]/g, "")
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== "")
    .slice(0, NAME_WORDS);
  const base = words.join("-").slice(0, NAME_MAX).replace(/-+$/, "") || "schedule";
  return [base, ...Array.from({ length: NAME_TRIES - 1 }, (_, i) => `${base}-${i + 2}`)];
}
