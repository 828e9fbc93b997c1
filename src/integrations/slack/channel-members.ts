import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import type { Membership } from "../../access/audience.ts";

const MEMBERS_CACHE_MAX = 500;
const PAGE_SIZE = 1000;

export interface ChannelMembership {
  check(channel: string, user: string): Promise<Membership>;
}

/**
 * Channel members from conversations.members (scopes channels:read, groups:read, im:read, mpim:read for
 * public, private, direct and group-direct conversations), cached briefly per channel (slack.membership_cache_seconds).
 */
export class ChannelMembers implements ChannelMembership {
  private readonly client: WebClient;
  private readonly log: Logger;
  private readonly channels = new Map<string, { members: Set<string>; at: number }>();
  /** slack.membership_cache_seconds in ms: spares a burst of reads and follow-ups the calls. */
  private readonly cacheMs: number;

  constructor(client: WebClient, log: Logger, opts: { cacheMs: number }) {
    this.client = client;
    this.log = log;
    this.cacheMs = opts.cacheMs;
  }

  async check(channel: string, user: string): Promise<Membership> {
    let members: Set<string>;
    try {
      members = await this.members(channel);
    } catch (err) {
      const reason = (err as { data?: { error?: string } }).data?.error ?? (err as Error).message;
      this.log.warn({ err, channel }, "conversations.members failed");
      return { kind: "unknown", reason };
    }
    return members.has(user) ? { kind: "member" } : { kind: "not_member" };
  }

  private async members(channel: string): Promise<Set<string>> {
    const cached = this.channels.get(channel);
    if (cached && Date.now() - cached.at < this.cacheMs) return cached.members;
    const members = new Set<string>();
    let cursor: string | undefined;
    do {
      const res = await this.client.conversations.members({
        channel,
        limit: PAGE_SIZE,
        ...(cursor ? { cursor } : {}),
      });
      for (const id of res.members ?? []) members.add(id);
      cursor = res.response_metadata?.next_cursor || undefined;
    } while (cursor);
    this.channels.delete(channel);
    if (this.channels.size >= MEMBERS_CACHE_MAX) this.channels.delete(this.channels.keys().next().value!);
    this.channels.set(channel, { members, at: Date.now() });
    return members;
  }
}
