import type { Audience, Membership, SteerAction, SteeringPolicy } from "../../access/audience.ts";
import type { SlackSettings } from "../../config-file.ts";
import type { AudiencePlace } from "../../model/audience.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import type { ChannelMembership } from "./channel-members.ts";

/** The principal id of a Slack user, as their runs and their web sign-in name them. */
export function slackPrincipalId(workspace: string, user: string): string {
  return `slack:${workspace}:${user}`;
}

/**
 * The audience of a Slack thread: the current members of its channel, as conversations.members says
 * (cached briefly by ChannelMembers). Steering follows dispatch.config.yaml's `slack.followup` and
 * `slack.cancel` (`channel`: anyone in the channel; `requester`: only who started the run); a retry
 * starts the same request again, so it follows `followup`.
 */
export class SlackAudience implements Audience {
  readonly platform = "slack" as const;
  private readonly members: ChannelMembership;
  private readonly settings: Pick<SlackSettings, "followup" | "cancel">;

  constructor(members: ChannelMembership, settings: Pick<SlackSettings, "followup" | "cancel">) {
    this.members = members;
    this.settings = settings;
  }

  place(binding: Pick<ThreadBinding, "workspace" | "channel">): AudiencePlace {
    return { platform: this.platform, workspace: binding.workspace, channel: binding.channel };
  }

  async includes(principalId: string, place: AudiencePlace): Promise<Membership> {
    const prefix = `slack:${place.workspace}:`;
    // Another workspace's user, or no Slack user at all, is never in this channel.
    if (!principalId.startsWith(prefix) || place.channel === null) return { kind: "not_member" };
    return this.members.check(place.channel, principalId.slice(prefix.length));
  }

  steering(action: SteerAction): SteeringPolicy {
    const policy = action === "cancel" ? this.settings.cancel : this.settings.followup;
    return policy === "requester" ? "requester" : "anyone";
  }

  requesterOf(binding: ThreadBinding): string {
    return slackPrincipalId(binding.workspace, binding.requester);
  }

  requesterName(binding: ThreadBinding): string {
    return `the Slack user ${binding.requester}`;
  }
}
