import type { AudienceFilter, AudiencePlace } from "../model/audience.ts";
import type { ApiKeyRecord, ApiKeyRole, Principal, Team } from "../model/identity.ts";
import type { RunRecord } from "../model/run.ts";
import type { ThreadBinding } from "../model/thread-binding.ts";
import type { Store } from "../store/store.ts";
import type { Audience, Membership, SteerAction } from "./audience.ts";

/**
 * Who asks: a principal of a team with a role. An API key's caller carries its role on the key; a web
 * session carries it directly. `surface` marks a surface of this very process (the Slack app, the GitHub
 * app, the notifier) acting for its users: it sees the team's runs and asks this rule for each user itself.
 * Only in-process code can set it: no request is ever turned into a viewer with it.
 */
export type Asker = { principal: Pick<Principal, "id"> } & (
  | { role: ApiKeyRole }
  | { key: Pick<ApiKeyRecord, "role"> }
) & { surface?: true };

/** An asker in a team: what lists and counts are scoped by. */
export type Viewer = Asker & { team: Pick<Team, "id"> };

export function roleOf(viewer: Asker): ApiKeyRole {
  return "role" in viewer ? viewer.role : viewer.key.role;
}

/** Why a viewer in a run's audience may not steer it, in words for them. */
export interface SteerRefusal {
  reason: string;
}

/** How long a viewer's list filter is reused: the dashboard, its rows and its feed ask in bursts. */
const FILTER_TTL_MS = 5_000;
const FILTER_CACHE_MAX = 1_000;
/** Membership checks of one filter run at most this many at once (each may be a platform API call). */
const CHECK_CONCURRENCY = 8;

/**
 * The one access rule for runs (docs/architecture.md). A run's audience is derived from the threads it is
 * bound to — a Slack channel's current members, a GitHub repository's collaborators at min_permission;
 * with several threads (the Slack thread it was asked in and the pull request it opened), whoever is in
 * the audience of any of them — and a run asked for in no thread (created through the API) has its team as
 * audience, also once the pull request it opened is bound to it (an adopted thread adds to an audience). A viewer sees a run
 * only in its audience, and steers it (follow up, cancel, retry) only where the surface's steering policy
 * lets them. Admins see and steer every run of their team. A run outside the audience does not exist for
 * the viewer: every surface answers it as an unknown id. Each surface registers its Audience here; the
 * run service, the API, the web app and the chat verbs all ask this one object.
 *
 * A membership the platform cannot confirm (its API failed) counts as not a member: fail closed.
 */
export class RunAccess {
  private readonly store: Pick<Store, "listThreadBindings" | "listBoundPlaces">;
  private readonly audiences = new Map<string, Audience>();
  private readonly filters = new Map<string, { at: number; filter: Promise<AudienceFilter> }>();
  private readonly now: () => number;

  constructor(
    store: Pick<Store, "listThreadBindings" | "listBoundPlaces">,
    opts: { now?: () => number } = {},
  ) {
    this.store = store;
    this.now = opts.now ?? Date.now;
  }

  /** A surface's audience of its threads (one per platform). */
  register(audience: Audience): void {
    this.audiences.set(audience.platform, audience);
  }

  /** Whether the viewer may see `run` (of their team: the store already scoped it): in any thread's audience. */
  async sees(viewer: Asker, run: Pick<RunRecord, "id">): Promise<boolean> {
    if (roleOf(viewer) === "admin" || viewer.surface) return true;
    const threads = await this.store.listThreadBindings(run.id);
    if (askedNowhere(threads)) return true;
    for (const thread of threads) {
      if ((await this.membership(viewer, thread)).kind === "member") return true;
    }
    return false;
  }

  /** Whether the viewer is in the audience of a thread, as its surface says now. */
  async membership(viewer: Asker, binding: ThreadBinding): Promise<Membership> {
    const audience = this.audiences.get(binding.platform);
    // A surface not served here cannot vouch for anyone.
    if (!audience) return { kind: "unknown", reason: `${binding.platform} is not configured on this server` };
    return audience.includes(viewer.principal.id, audience.place(binding));
  }

  /**
   * Why the viewer, who sees the run, may not do `action` to it; undefined when they may. A `read` role
   * never steers; under a `requester` policy only the run's requester does. Asked from one thread (a chat
   * verb, a comment), that thread's policy decides; asked elsewhere (the API, the web app), any thread whose
   * audience the viewer is in and whose policy lets them.
   */
  async steerRefusal(
    viewer: Asker,
    run: Pick<RunRecord, "id">,
    action: SteerAction,
    from?: ThreadBinding,
  ): Promise<SteerRefusal | undefined> {
    const role = roleOf(viewer);
    if (role === "admin") return undefined;
    if (role === "read") {
      return { reason: "your role (read) can see runs but not follow up on, cancel or retry them" };
    }
    if (viewer.surface) return undefined;
    if (from) return this.threadRefusal(viewer, from, action);
    const threads = await this.store.listThreadBindings(run.id);
    if (askedNowhere(threads)) return undefined; // the API's runs: anyone in the team with a member role
    let refusal: SteerRefusal | undefined;
    for (const thread of threads) {
      if (threads.length > 1 && (await this.membership(viewer, thread)).kind !== "member") continue;
      const here = this.threadRefusal(viewer, thread, action);
      if (!here) return undefined;
      refusal ??= here;
    }
    return refusal ?? { reason: "you are not in the audience of any of this run's threads" };
  }

  /** The steering policy of one thread's surface, for the viewer. */
  private threadRefusal(viewer: Asker, thread: ThreadBinding, action: SteerAction): SteerRefusal | undefined {
    const audience = this.audiences.get(thread.platform);
    if (!audience) return { reason: "this run's thread is on a surface this server does not serve" };
    if (audience.steering(action) === "requester" && audience.requesterOf(thread) !== viewer.principal.id) {
      return { reason: `only ${audience.requesterName(thread)}, who started this run, may do that` };
    }
    return undefined;
  }

  /**
   * Which of the team's runs the viewer sees, for the store's list, counts and usage; undefined for an
   * admin (every run of the team). Reused for FILTER_TTL_MS per viewer.
   */
  async filter(viewer: Viewer): Promise<AudienceFilter | undefined> {
    if (roleOf(viewer) === "admin" || viewer.surface) return undefined;
    const key = `${viewer.team.id}\n${viewer.principal.id}`;
    const cached = this.filters.get(key);
    if (cached && this.now() - cached.at < FILTER_TTL_MS) return cached.filter;
    const filter = this.buildFilter(viewer.team.id, viewer.principal.id);
    this.filters.delete(key);
    if (this.filters.size >= FILTER_CACHE_MAX) this.filters.delete(this.filters.keys().next().value!);
    this.filters.set(key, { at: this.now(), filter });
    filter.catch(() => {
      if (this.filters.get(key)?.filter === filter) this.filters.delete(key);
    });
    return filter;
  }

  private async buildFilter(teamId: string, principalId: string): Promise<AudienceFilter> {
    const candidates = new Map<string, { audience: Audience; place: AudiencePlace }>();
    for (const bound of await this.store.listBoundPlaces(teamId)) {
      const audience = this.audiences.get(bound.platform);
      if (!audience) continue;
      const place = audience.place(bound);
      candidates.set(JSON.stringify([place.platform, place.workspace, place.channel]), { audience, place });
    }
    const places: AudiencePlace[] = [];
    const queue = [...candidates.values()];
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const membership = await next.audience.includes(principalId, next.place);
        if (membership.kind === "member") places.push(next.place);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CHECK_CONCURRENCY, queue.length) }, worker));
    return { unbound: true, places };
  }
}

/** A run asked for in no thread (through the API), whatever it delivered to since: its team is its audience. */
function askedNowhere(threads: readonly ThreadBinding[]): boolean {
  return threads.every((t) => t.adopted);
}
