import type { Caller } from "../model/identity.ts";
import type { LocalSkill } from "../workspace/skill-catalog.ts";
import { type LatestRunStore, latestRun } from "./latest-run.ts";

export interface AgentVariant {
  id: string;
  description: string;
  base_prompt: string;
  source: { owner: string; name: string; skill_path: string };
  environments: Array<{ uid: string; name: string }>;
  last_run_timestamp: string | null;
  error?: string;
}

export interface AgentInfo {
  name: string;
  variants: AgentVariant[];
}

export interface EnvironmentRef {
  uid: string;
  name: string;
  repos: Array<{ owner: string; repo: string }>;
}

export type AgentSort = "name" | "last_run";

/**
 * Skills as Oz "agents": one agent per skill name, one variant per SKILL.md of that name. A variant's
 * `id` is a skill_spec that runs accept; a skill of a skills directory (no repository) has an empty
 * owner and name in `source`. Its environments are those that clone its repository, or every
 * environment for a skills-directory skill (the resolver finds it whatever the workspace holds).
 */
export class AgentCatalog {
  private readonly skills: () => Promise<LocalSkill[]>;
  private readonly environments: () => EnvironmentRef[];
  private readonly store: LatestRunStore;

  constructor(deps: {
    skills: () => Promise<LocalSkill[]>;
    environments: () => EnvironmentRef[];
    store: LatestRunStore;
  }) {
    this.skills = deps.skills;
    this.environments = deps.environments;
    this.store = deps.store;
  }

  async list(
    caller: Caller,
    opts: { repo?: string; sortBy?: AgentSort; includeMalformed?: boolean } = {},
  ): Promise<AgentInfo[]> {
    const environments = this.environments();
    const skills = (await this.skills()).filter(
      (s) => (opts.repo === undefined || s.repo === opts.repo) && (opts.includeMalformed || !s.error),
    );
    const byName = new Map<string, AgentVariant[]>();
    for (const skill of skills) {
      const variant = await this.variant(caller, skill, environments);
      byName.set(skill.name, [...(byName.get(skill.name) ?? []), variant]);
    }
    const agents = [...byName].map(([name, variants]) => ({ name, variants }));
    const lastRun = (a: AgentInfo) =>
      a.variants.reduce(
        (max, v) => (v.last_run_timestamp && v.last_run_timestamp > max ? v.last_run_timestamp : max),
        "",
      );
    return agents.sort((a, b) =>
      opts.sortBy === "last_run"
        ? lastRun(b).localeCompare(lastRun(a)) || a.name.localeCompare(b.name)
        : a.name.localeCompare(b.name),
    );
  }

  private async variant(
    caller: Caller,
    skill: LocalSkill,
    environments: EnvironmentRef[],
  ): Promise<AgentVariant> {
    const [owner = "", name = ""] = skill.repo?.split("/") ?? [];
    return {
      id: skill.spec,
      description: skill.description,
      base_prompt: skill.body,
      source: { owner, name, skill_path: skill.path },
      environments: environments
        .filter((e) => !skill.repo || e.repos.some((r) => `${r.owner}/${r.repo}` === skill.repo))
        .map((e) => ({ uid: e.uid, name: e.name })),
      last_run_timestamp: await this.lastRun(caller, skill),
      ...(skill.error ? { error: skill.error } : {}),
    };
  }

  /** Runs record the spec as it was given: by path, or `owner/repo:name` with the skill's folder. */
  private async lastRun(caller: Caller, skill: LocalSkill): Promise<string | null> {
    const folder = skill.path.split("/").at(-2) ?? "";
    const specs = new Set([skill.spec, skill.repo ? `${skill.repo}:${folder}` : folder]);
    let latest: string | null = null;
    for (const skillSpec of specs) {
      const run = await latestRun(this.store, caller.team.id, { skillSpec });
      if (run && (latest === null || run.createdAt > latest)) latest = run.createdAt;
    }
    return latest;
  }
}
