import type { Logger } from "pino";
import { type GitHubClients, splitRepo } from "./github-clients.ts";

/** Repository roles from least to most; `role_name` carries triage and maintain, `permission` does not. */
const PERMISSION_LEVELS = ["none", "read", "triage", "write", "maintain", "admin"] as const;
type PermissionLevel = (typeof PERMISSION_LEVELS)[number];

function permissionRank(level: string | undefined): number {
  const i = PERMISSION_LEVELS.indexOf((level ?? "none") as PermissionLevel);
  return i < 0 ? 0 : i;
}

const CACHE_MAX = 5_000;

/** What a commenter may do: act, be refused, or neither when GitHub could not say. */
export type PermissionVerdict = "allowed" | "refused" | "unknown";

/**
 * Whether a commenter may start or steer runs on a repository: their role from the collaborator-permission
 * endpoint (author_association is not a permission check) against the configured minimum. Cached briefly:
 * roles change rarely, mentions come in bursts.
 */
export class CollaboratorPermissions {
  private readonly clients: GitHubClients;
  private readonly minimum: string;
  private readonly ttlMs: number;
  private readonly log: Logger;
  private readonly cache = new Map<string, { level: Promise<string>; at: number }>();

  constructor(opts: { clients: GitHubClients; minimum: string; cacheSeconds: number; log: Logger }) {
    this.clients = opts.clients;
    this.minimum = opts.minimum;
    this.ttlMs = opts.cacheSeconds * 1000;
    this.log = opts.log;
  }

  async check(repo: string, login: string): Promise<PermissionVerdict> {
    try {
      const level = await this.levelOf(repo, login);
      return permissionRank(level) < permissionRank(this.minimum) ? "refused" : "allowed";
    } catch (err) {
      this.log.warn({ err, repo, login }, "GitHub permission check failed");
      return "unknown";
    }
  }

  private levelOf(repo: string, login: string): Promise<string> {
    const key = `${repo.toLowerCase()}:${login.toLowerCase()}`;
    const cached = this.cache.get(key);
    if (cached && Date.now() - cached.at < this.ttlMs) return cached.level;
    // The promise is cached, so concurrent mentions by one person make one call; a failure is not kept.
    const level = this.fetchLevel(repo, login);
    if (this.cache.size >= CACHE_MAX) {
      this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(key, { level, at: Date.now() });
    level.catch(() => {
      if (this.cache.get(key)?.level === level) this.cache.delete(key);
    });
    return level;
  }

  private async fetchLevel(repo: string, login: string): Promise<string> {
    const [owner, name] = splitRepo(repo);
    const octokit = await this.clients.forRepo(repo);
    try {
      const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({
        owner,
        repo: name,
        username: login,
      });
      // role_name says triage and maintain; permission folds them into read and write.
      const role = (data as { role_name?: string }).role_name;
      return role && permissionRank(role) > 0 ? role : data.permission;
    } catch (err) {
      if ((err as { status?: unknown }).status !== 404) throw err;
      return "none"; // no such user, or not visible to the App
    }
  }
}
