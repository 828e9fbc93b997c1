import type { SteerAction } from "../../access/audience.ts";
import type { RunAccess } from "../../access/run-access.ts";
import type { SlackSettings } from "../../config-file.ts";
import { type ThreadBinding, threadKey } from "../../model/thread-binding.ts";
import { slackPrincipalId } from "./slack-audience.ts";

/** Who is asking, and where. */
export interface Actor {
  team: string;
  channel: string;
  user: string;
  /** The user's own workspace when Slack says it (Slack Connect), else undefined. */
  userTeam?: string | undefined;
  /** From users.info: a person from another organisation. */
  stranger?: boolean | undefined;
}

/**
 * The allowlists of dispatch.config.yaml and the Slack Connect rule. Returns why the actor is refused,
 * in words for them, or undefined when they may act here.
 */
export function refusal(settings: SlackSettings, actor: Actor): string | undefined {
  if (settings.allowed_workspaces && !settings.allowed_workspaces.includes(actor.team)) {
    return "Dispatch is not enabled for this workspace.";
  }
  if (settings.allowed_channels && !settings.allowed_channels.includes(actor.channel)) {
    return "Dispatch is not enabled in this channel; ask an admin to add it to the allowed channels.";
  }
  if (settings.allowed_users && !settings.allowed_users.includes(actor.user)) {
    return "You are not on Dispatch's list of allowed users; ask an admin to add you.";
  }
  if (!settings.allow_external_users && isExternal(actor)) {
    return "Dispatch does not take requests from people outside this workspace (Slack Connect).";
  }
  return undefined;
}

export function isExternal(actor: Actor): boolean {
  return actor.stranger === true || (actor.userTeam !== undefined && actor.userTeam !== actor.team);
}

/**
 * The run's binding when the run has a thread in the channel (and workspace) the actor is in; undefined
 * otherwise. Every Slack verb reaches runs through this: a run of another channel, private or not, answers
 * as if it did not exist.
 */
export function boundHere(binding: ThreadBinding | undefined, actor: Actor): ThreadBinding | undefined {
  return binding?.platform === "slack" &&
    binding.workspace === actor.team &&
    binding.channel === actor.channel
    ? binding
    : undefined;
}

/** The thread key of a run's binding in the actor's channel (model/thread-binding.ts threadKey). */
export function channelThreadKey(actor: Actor): string {
  return threadKey({ platform: "slack", workspace: actor.team, channel: actor.channel });
}

/** The one answer for a run id that is unknown or belongs to another channel: it reveals neither. */
export function notHereText(runId: string): string {
  return `There is no run \`${runId}\` in this channel; \`list\` shows the runs started here.`;
}

/**
 * Whether the actor may cancel, follow up or retry a run bound to this channel, as the one access rule
 * (RunAccess) says for the actor's Slack principal: a member of the run's channel now, as Slack says
 * (where a request came from is not proof of that), and the requester alone under the `requester` policy.
 */
export async function mayActOnRun(
  access: RunAccess,
  action: SteerAction,
  actor: Actor,
  binding: ThreadBinding,
): Promise<string | undefined> {
  const asker = { principal: { id: slackPrincipalId(actor.team, actor.user) }, role: "member" as const };
  const membership = await access.membership(asker, binding);
  switch (membership.kind) {
    case "not_member":
      return `Only members of <#${binding.channel}> may act on its runs; join the channel first.`;
    case "unknown":
      return `Could not check that you are a member of <#${binding.channel}> (Slack said: ${membership.reason}). Try again; if it persists, an admin needs to give the Dispatch app the channels:read, groups:read, im:read and mpim:read scopes.`;
  }
  return (await access.steerRefusal(asker, { id: binding.runId }, action, binding))
    ? `Only <@${binding.requester}>, who started this run, may do that.`
    : undefined;
}
