import type { SlackSettings } from "../../config-file.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";

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
 * Whether the actor may cancel or follow up a run bound to a Slack thread. The run must come from this
 * workspace (the bot's service account sees every run of its team; Slack users must not reach runs
 * started elsewhere). `channel` policy: anyone allowed in the run's channel; `requester`: its requester.
 */
export function mayActOnRun(
  settings: SlackSettings,
  policy: "channel" | "requester",
  actor: Actor,
  binding: ThreadBinding | undefined,
): string | undefined {
  if (!boundInWorkspace(binding, actor.team)) return "That run was not started from this Slack workspace.";
  if (policy === "requester" && binding.requester !== actor.user) {
    return `Only <@${binding.requester}>, who started this run, may do that.`;
  }
  if (policy === "channel" && binding.channel !== actor.channel) {
    const there = refusal(settings, { ...actor, channel: binding.channel });
    if (there) return `You may not act on runs in <#${binding.channel}>: ${there}`;
  }
  return undefined;
}

/** The binding is a Slack thread of this workspace (the only runs Slack users may reach). */
export function boundInWorkspace(binding: ThreadBinding | undefined, team: string): binding is ThreadBinding {
  return binding !== undefined && binding.platform === "slack" && binding.workspace === team;
}
