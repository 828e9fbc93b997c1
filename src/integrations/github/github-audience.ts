import type { Audience, Membership, SteeringPolicy } from "../../access/audience.ts";
import type { AudiencePlace } from "../../model/audience.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import type { CollaboratorPermissions } from "./collaborator-permissions.ts";

/** The principal id of a GitHub user, as their runs and their web sign-in name them. */
export function githubPrincipalId(login: string): string {
  return `github:${login}`;
}

/** The GitHub login a principal id names, if it names a GitHub user. */
export function githubLoginOf(principalId: string): string | undefined {
  return principalId.startsWith("github:") ? principalId.slice("github:".length) : undefined;
}

/**
 * The audience of a GitHub issue or pull request: the repository's collaborators at `min_permission`, as
 * the collaborator-permission endpoint says (cached for `permission_cache_seconds`). Every issue of a
 * repository has the same audience, so the place is the repository. Anyone in it may steer a run, as
 * anyone with that permission may by commenting.
 */
export class GitHubAudience implements Audience {
  readonly platform = "github" as const;
  private readonly permissions: Pick<CollaboratorPermissions, "check">;

  constructor(permissions: Pick<CollaboratorPermissions, "check">) {
    this.permissions = permissions;
  }

  place(binding: Pick<ThreadBinding, "workspace">): AudiencePlace {
    return { platform: this.platform, workspace: binding.workspace, channel: null };
  }

  async includes(principalId: string, place: AudiencePlace): Promise<Membership> {
    if (!principalId.startsWith("github:")) return { kind: "not_member" };
    const verdict = await this.permissions.check(place.workspace, principalId.slice("github:".length));
    if (verdict === "unknown")
      return { kind: "unknown", reason: "GitHub did not answer the permission check" };
    return verdict === "allowed" ? { kind: "member" } : { kind: "not_member" };
  }

  steering(): SteeringPolicy {
    return "anyone";
  }

  requesterOf(binding: ThreadBinding): string {
    return githubPrincipalId(binding.requester);
  }

  requesterName(binding: ThreadBinding): string {
    return `@${binding.requester}`;
  }
}
