import type { Logger } from "pino";
import type { Audience, Membership, SteerAction, SteeringPolicy } from "../../access/audience.ts";
import type { LinearSettings } from "../../config-file.ts";
import type { AudiencePlace } from "../../model/audience.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import type { LinearApi } from "./linear-api.ts";

/** How many teams' member lists (and sessions' teams) are remembered at most. */
const CACHE_MAX = 1_000;

/** The principal id of a Linear user, as their runs and the access rule name them. */
export function linearPrincipalId(userId: string): string {
  return `linear:${userId}`;
}

/**
 * The audience of a Linear agent session (docs/surfaces.md): the members of the team its issue belongs
 * to, as Linear's GraphQL API lists them (cached `membership_cache_seconds`). Each session is its own
 * place (its binding's channel), whose team is asked once and remembered; a team whose members Linear
 * cannot list just now counts as unknown (outside, for the access rule). Steering follows `linear.followup`
 * and `linear.cancel`.
 */
export class LinearAudience implements Audience {
  readonly platform = "linear" as const;
  private readonly api: Pick<LinearApi, "teamMembers" | "sessionTeam">;
  private readonly settings: LinearSettings;
  private readonly log: Logger;
  private readonly members = new Map<string, { at: number; ids: Promise<Set<string>> }>();
  private readonly sessionTeams = new Map<string, string>();
  private readonly now: () => number;

  constructor(deps: {
    api: Pick<LinearApi, "teamMembers" | "sessionTeam">;
    settings: LinearSettings;
    log: Logger;
    now?: () => number;
  }) {
    this.api = deps.api;
    this.settings = deps.settings;
    this.log = deps.log;
    this.now = deps.now ?? Date.now;
  }

  place(binding: Pick<ThreadBinding, "workspace" | "channel">): AudiencePlace {
    return { platform: this.platform, workspace: binding.workspace, channel: binding.channel };
  }

  /** A session started here: its team is known from the webhook, no need to ask Linear later. */
  rememberSession(sessionId: string, teamId: string): void {
    remember(this.sessionTeams, sessionId, teamId);
  }

  async includes(principalId: string, place: AudiencePlace): Promise<Membership> {
    if (!principalId.startsWith("linear:") || !place.channel) return { kind: "not_member" };
    try {
      let team = this.sessionTeams.get(place.channel);
      if (!team) {
        team = await this.api.sessionTeam(place.channel);
        if (!team) return { kind: "not_member" };
        remember(this.sessionTeams, place.channel, team);
      }
      return (await this.teamMembers(team)).has(principalId.slice("linear:".length))
        ? { kind: "member" }
        : { kind: "not_member" };
    } catch (err) {
      this.log.warn({ err, session: place.channel }, "could not read a Linear team's members");
      return { kind: "unknown", reason: "Linear did not answer the team membership check" };
    }
  }

  /** Whether the user is a member of the team now. */
  async isTeamMember(userId: string, teamId: string): Promise<Membership> {
    try {
      return (await this.teamMembers(teamId)).has(userId) ? { kind: "member" } : { kind: "not_member" };
    } catch (err) {
      this.log.warn({ err, team: teamId }, "could not read a Linear team's members");
      return { kind: "unknown", reason: "Linear did not answer the team membership check" };
    }
  }

  steering(action: SteerAction): SteeringPolicy {
    return action === "cancel" ? this.settings.cancel : this.settings.followup;
  }

  requesterOf(binding: ThreadBinding): string {
    return linearPrincipalId(binding.requester);
  }

  requesterName(binding: ThreadBinding): string {
    return `Linear user ${binding.requester}`;
  }

  private teamMembers(teamId: string): Promise<Set<string>> {
    const cached = this.members.get(teamId);
    if (cached && this.now() - cached.at < this.settings.membership_cache_seconds * 1000) return cached.ids;
    const ids = this.api.teamMembers(teamId);
    remember(this.members, teamId, { at: this.now(), ids });
    // A failed read is not remembered: the next check asks again.
    ids.catch(() => {
      if (this.members.get(teamId)?.ids === ids) this.members.delete(teamId);
    });
    return ids;
  }
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  if (map.size >= CACHE_MAX) map.delete(map.keys().next().value!);
  map.set(key, value);
}
