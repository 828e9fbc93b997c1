import type { AgentConfig, Artifact, StatusMessage } from "./run.ts";

/**
 * What every surface (status card, tracking comment, session page, CLI) shows of a run's delivery, read
 * from the run as the API returns it: the repository and base, the work branch, the pull request and
 * whether a later execution updated it, the diff stat of the latest patch.
 */
export interface DeliverySummary {
  repository: string;
  base?: string;
  branch?: string;
  /** `ended`: the pull request was merged or closed (the run no longer follows it). */
  pullRequest?: { number: number; url: string; updated: boolean; ended?: "merged" | "closed" };
  /** "+12 −3 in 4 files", of the latest patch. */
  diffStat?: string;
  /** The latest patch's FILE artifact uid (GET /agent/artifacts/{uid}/download). */
  patchUid?: string;
  /** The run ended with nothing to deliver. */
  noChanges: boolean;
}

interface RunLike {
  // The API's types (the clients') allow null where the record has an absent field.
  agent_config?: { [K in "repository" | "base_branch" | "branch"]?: AgentConfig[K] | null } | null;
  artifacts?: readonly Artifact[] | null;
  status_message?: Pick<StatusMessage, "message"> | null;
  state?: string;
}

export function deliverySummary(run: RunLike): DeliverySummary | undefined {
  const config = run.agent_config;
  if (!config?.repository) return undefined;
  const artifacts = run.artifacts ?? [];
  const pr = artifacts.findLast((a) => a.artifact_type === "PULL_REQUEST");
  const patch = artifacts.findLast((a) => a.artifact_type === "FILE" && a.data.filename === "changes.patch");
  const number = Number(pr?.data.number);
  return {
    repository: config.repository,
    ...(config.base_branch ? { base: config.base_branch } : {}),
    ...(config.branch ? { branch: config.branch } : {}),
    ...(pr && typeof pr.data.url === "string" && Number.isInteger(number)
      ? {
          pullRequest: {
            number,
            url: pr.data.url,
            updated: typeof pr.data.updated_at === "string",
            ...(pr.data.state === "merged" || pr.data.state === "closed" ? { ended: pr.data.state } : {}),
          },
        }
      : {}),
    ...(typeof patch?.data.description === "string" ? { diffStat: patch.data.description } : {}),
    ...(typeof patch?.data.artifact_uid === "string" ? { patchUid: patch.data.artifact_uid } : {}),
    noChanges: run.state === "SUCCEEDED" && run.status_message?.message === "No changes",
  };
}

/** "acme/app@main" (the base when known). */
export function repositoryLabel(summary: DeliverySummary): string {
  return summary.base ? `${summary.repository}@${summary.base}` : summary.repository;
}

/** "PR #123 opened · +12 −3 in 4 files" (updated, merged, closed), "No changes", or undefined while there is nothing to say. */
export function deliveryLine(summary: DeliverySummary): string | undefined {
  if (summary.pullRequest) {
    const { number, updated, ended } = summary.pullRequest;
    const pr = `PR #${number} ${ended ?? (updated ? "updated" : "opened")}`;
    return summary.diffStat ? `${pr} · ${summary.diffStat}` : pr;
  }
  if (summary.noChanges) return "No changes";
  return undefined;
}
