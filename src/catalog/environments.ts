import type { EnvironmentRepoSettings, EnvironmentSettings } from "../config-file.ts";
import type { Caller } from "../model/identity.ts";
import type { RunState } from "../model/run-state.ts";
import { type LatestRunStore, latestRun } from "./latest-run.ts";

export interface EnvironmentInfo {
  uid: string;
  config: {
    name: string;
    description: string | null;
    github_repos: Array<{ owner: string; repo: string }>;
    setup_commands: string[];
  };
  last_updated: string;
  setup_failed: boolean;
  last_task_run_timestamp: string | null;
  last_task_created: {
    id: string;
    title: string;
    state: RunState;
    created_at: string;
    updated_at: string;
    started_at: string | null;
  } | null;
}

/**
 * The configured environments (dispatch.config.yaml `environments:`) as Oz `CloudEnvironment`s. They
 * change only with the configuration, which is read at start-up, so `last_updated` is when this process
 * loaded it; what the team's runs did in each (the latest run, whether its setup failed) is read from
 * the store per request.
 */
export class EnvironmentCatalog {
  private readonly environments: Record<string, EnvironmentSettings>;
  private readonly store: LatestRunStore;
  private readonly loadedAt: string;

  constructor(environments: Record<string, EnvironmentSettings>, store: LatestRunStore, loadedAt: Date) {
    this.environments = environments;
    this.store = store;
    this.loadedAt = loadedAt.toISOString();
  }

  /** By id: every environment was loaded at the same moment, so "last updated first" is this order too. */
  async list(caller: Caller): Promise<EnvironmentInfo[]> {
    const ids = Object.keys(this.environments).sort();
    return Promise.all(ids.map((id) => this.describe(caller, id, this.environments[id]!)));
  }

  /** Environment ids and names, for the skills catalogue. */
  names(): Array<{ uid: string; name: string; repos: Array<{ owner: string; repo: string }> }> {
    return Object.entries(this.environments).map(([uid, env]) => ({
      uid,
      name: uid,
      repos: env.repos.flatMap((r) => ownerRepo(r) ?? []),
    }));
  }

  private async describe(caller: Caller, id: string, env: EnvironmentSettings): Promise<EnvironmentInfo> {
    const latest = await latestRun(this.store, caller.team.id, { environmentId: id });
    return {
      uid: id,
      config: {
        name: id,
        description: env.description ?? null,
        github_repos: env.repos.flatMap((r) => ownerRepo(r) ?? []),
        setup_commands: env.setup,
      },
      last_updated: this.loadedAt,
      setup_failed: latest?.statusMessage?.error_code === "environment_setup_failed",
      last_task_run_timestamp: latest?.startedAt ?? null,
      last_task_created: latest
        ? {
            id: latest.id,
            title: latest.title,
            state: latest.state,
            created_at: latest.createdAt,
            updated_at: latest.updatedAt,
            started_at: latest.startedAt,
          }
        : null,
    };
  }
}

/**
 * owner/repo of a repository URL: the last two path segments (without .git) of https://host/owner/repo,
 * git@host:owner/repo or a local path; undefined when there are not two.
 */
export function ownerRepo(repo: EnvironmentRepoSettings): { owner: string; repo: string } | undefined {
  const path = repo.url
    .replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, "")
    .replace(/^[^/\s]+@[^/\s:]+:/, "")
    .replace(/\.git$/, "")
    .replace(/\/+$/, "");
  const parts = path.split(/[\\/]+/).filter(Boolean);
  if (parts.length < 2) return undefined;
  return { owner: parts.at(-2)!, repo: parts.at(-1)! };
}
