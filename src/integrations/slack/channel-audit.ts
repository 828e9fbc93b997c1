import type { AuditAction, NewAuditEvent } from "../../model/audit.ts";
import { DEFAULT_TEAM } from "../../model/identity.ts";
import type { Actor } from "./access.ts";
import { slackPrincipalId } from "./slack-audience.ts";

/**
 * The audit entry of a channel setting changed from Slack (`/agent repo`, `/agent agent`): the Slack user
 * who typed it, in the team the Slack app acts in.
 */
export function channelSettingAudit(
  actor: Actor,
  action: Extract<AuditAction, "channel.repository_set" | "channel.agent_set">,
  details: Record<string, unknown>,
): NewAuditEvent {
  return {
    teamId: DEFAULT_TEAM.id,
    at: new Date().toISOString(),
    actor: slackPrincipalId(actor.team, actor.user),
    actorName: null,
    action,
    target: `slack:${actor.team}:${actor.channel}`,
    details,
  };
}
