import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import type { Creator } from "../../model/run.ts";
import type { Actor } from "./access.ts";
import { slackPrincipalId } from "./slack-audience.ts";

const USER_CACHE_MS = 10 * 60_000;
const USER_CACHE_MAX = 2_000;

/** A Slack user as a run creator, plus what says whether they are external. */
export interface SlackUser {
  creator: Creator;
  userTeam: string | undefined;
  stranger: boolean;
}

/** Who a Slack user is (users.info), cached for minutes. */
export class UserDirectory {
  private readonly client: WebClient;
  private readonly log: Logger;
  private readonly users = new Map<string, { user: SlackUser; at: number }>();

  constructor(client: WebClient, log: Logger) {
    this.client = client;
    this.log = log;
  }

  async lookUp(actor: Actor): Promise<SlackUser> {
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
      this.log.warn({ err, user: actor.user }, "users.info failed");
      return { creator: creatorOf(actor, name), userTeam, stranger };
    }
    const user = { creator: creatorOf(actor, name), userTeam, stranger };
    if (this.users.size >= USER_CACHE_MAX) this.users.delete(this.users.keys().next().value!);
    this.users.set(cacheKey, { user, at: Date.now() });
    return user;
  }
}

function creatorOf(actor: Actor, displayName: string): Creator {
  return { type: "user", uid: slackPrincipalId(actor.team, actor.user), display_name: displayName };
}
