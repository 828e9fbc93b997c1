import type { Logger } from "pino";
import type { Audience, Membership, SteerAction, SteeringPolicy } from "../../access/audience.ts";
import type { JiraSettings } from "../../config-file.ts";
import type { AudiencePlace } from "../../model/audience.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import type { JiraApi } from "./jira-api.ts";
import { patiently } from "./jira-errors.ts";

/** How many (person, project) answers are remembered at most. */
const CACHE_MAX = 5_000;

/** The principal id of a Jira user (account id on Cloud, username on Data Center), as runs name them. */
export function jiraPrincipalId(userId: string): string {
  return `jira:${userId}`;
}

/**
 * The audience of a Jira issue (docs/surfaces.md): the people who may browse its project, as Jira's
 * user/permission/search answers for each person (cached `permission_cache_seconds`). Every issue of a
 * project has the same audience, so the place is the project (a binding's workspace). A project outside
 * `jira.allowed_projects` has no audience; an answer Jira cannot give just now counts as unknown (outside,
 * for the access rule). Steering follows `jira.followup` and `jira.cancel`.
 */
export class JiraAudience implements Audience {
  readonly platform = "jira" as const;
  private readonly api: Pick<JiraApi, "canBrowse">;
  private readonly settings: JiraSettings;
  private readonly log: Logger;
  private readonly cache = new Map<string, { at: number; allowed: Promise<boolean> }>();
  private readonly now: () => number;

  constructor(deps: {
    api: Pick<JiraApi, "canBrowse">;
    settings: JiraSettings;
    log: Logger;
    now?: () => number;
  }) {
    this.api = deps.api;
    this.settings = deps.settings;
    this.log = deps.log;
    this.now = deps.now ?? Date.now;
  }

  /** Whether Dispatch answers in the project at all (settings `jira.allowed_projects`). */
  projectAllowed(projectKey: string): boolean {
    return this.settings.allowed_projects?.includes(projectKey) ?? true;
  }

  place(binding: Pick<ThreadBinding, "workspace">): AudiencePlace {
    return { platform: this.platform, workspace: binding.workspace, channel: null };
  }

  async includes(principalId: string, place: AudiencePlace): Promise<Membership> {
    if (!principalId.startsWith("jira:") || !this.projectAllowed(place.workspace)) {
      return { kind: "not_member" };
    }
    const userId = principalId.slice("jira:".length);
    try {
      return (await this.canBrowse(userId, place.workspace)) ? { kind: "member" } : { kind: "not_member" };
    } catch (err) {
      this.log.warn({ err, project: place.workspace }, "could not check a Jira user's browse permission");
      return { kind: "unknown", reason: "Jira did not answer the permission check" };
    }
  }

  steering(action: SteerAction): SteeringPolicy {
    return action === "cancel" ? this.settings.cancel : this.settings.followup;
  }

  requesterOf(binding: ThreadBinding): string {
    return jiraPrincipalId(binding.requester);
  }

  requesterName(binding: ThreadBinding): string {
    return `Jira user ${binding.requester}`;
  }

  private canBrowse(userId: string, projectKey: string): Promise<boolean> {
    const key = `${projectKey}\n${userId}`;
    const cached = this.cache.get(key);
    if (cached && this.now() - cached.at < this.settings.permission_cache_seconds * 1000) {
      return cached.allowed;
    }
    // The promise is cached, so a burst of checks for one person makes one call; a failure is not kept.
    const allowed = patiently(() => this.api.canBrowse(userId, projectKey));
    this.cache.delete(key);
    if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, { at: this.now(), allowed });
    allowed.catch(() => {
      if (this.cache.get(key)?.allowed === allowed) this.cache.delete(key);
    });
    return allowed;
  }
}
