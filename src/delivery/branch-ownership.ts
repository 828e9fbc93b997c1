import { triggerOf } from "../model/repository.ts";
import type { RunEvent, RunRecord } from "../model/run.ts";
import type { PullRequestHost } from "./pull-request-host.ts";

/**
 * Why a run may push to its work branch: the branch is its own (docs/delivery.md). Dispatch pushes with the
 * App's token, which may write to any branch of the repository, so whoever names `config.branch` must not
 * be able to name someone else's: another pull request's head, another run's branch.
 */
export type BranchClaim =
  /** Not on the remote when the run first fetched: the run creates it. */
  | { kind: "new" }
  /** This run pushed it in an earlier execution (its transcript records the push). */
  | { kind: "this_run" }
  /** The branch of the run this one continues (parent_run_id), in the same repository. */
  | { kind: "parent_run" }
  /** The head branch of the open pull request this run was started on (its GitHub trigger comment). */
  | { kind: "pull_request"; number: number }
  /** An earlier run of the same schedule pushed it: a schedule that names its branch works on it each time. */
  | { kind: "schedule"; runId: string };

export interface BranchEvidence {
  run: RunRecord;
  repository: string;
  branch: string;
  /** The run's transcript so far. */
  transcript(): Promise<RunEvent[]>;
  /** The run this one continues (parent_run_id), if it has one and it exists. */
  parent(): Promise<RunRecord | undefined>;
  /** The latest other runs of the schedule that fired this one, newest first (none for a run asked for directly). */
  scheduleSiblings(): Promise<RunRecord[]>;
  /** Another run's transcript. */
  transcriptOf(runId: string): Promise<RunEvent[]>;
  pullRequests: PullRequestHost | undefined;
  signal: AbortSignal;
}

/** How a branch that already exists on the remote is the run's own, or undefined when it is not. */
export async function claimExistingBranch(e: BranchEvidence): Promise<BranchClaim | undefined> {
  const { run, repository, branch } = e;
  if ((await e.transcript()).some((event) => pushedBranchOf(event) === branch)) return { kind: "this_run" };
  const parent = await e.parent();
  if (
    parent &&
    sameRepository(parent.agentConfig.repository, repository) &&
    parent.agentConfig.branch === branch
  )
    return { kind: "parent_run" };
  for (const sibling of await e.scheduleSiblings()) {
    if (sibling.id === run.id || !sameRepository(sibling.agentConfig.repository, repository)) continue;
    if (sibling.agentConfig.branch !== branch) continue;
    if ((await e.transcriptOf(sibling.id)).some((event) => pushedBranchOf(event) === branch))
      return { kind: "schedule", runId: sibling.id };
  }
  const trigger = triggerOf(run.triggerUrl, repository);
  if (trigger?.kind === "pull" && e.pullRequests) {
    const pr = await e.pullRequests.findOpen(repository, branch, e.signal).catch(() => undefined);
    if (pr?.number === trigger.number && sameRepository(pr.headRepository, repository))
      return { kind: "pull_request", number: pr.number };
  }
  return undefined;
}

/** Why the run may not work on `branch`: it exists and is not the run's. */
export function notOwnBranch(repository: string, branch: string): string {
  return `config.branch: ${branch} already exists in ${repository} and is not this run's. A run pushes only to a branch it creates, to the branch of the run it continues (parent_run_id), to the branch of the pull request it was started on or to a branch an earlier run of its schedule pushed; leave config.branch out for a new branch, or name one that does not exist yet.`;
}

/** The transcript event delivery records once it has pushed: the evidence of `this_run` later on. */
export function pushedEvent(branch: string, sha: string, stat: string): Record<string, unknown> {
  return {
    level: "info",
    phase: "delivery",
    message: `Pushed ${sha.slice(0, 12)} to ${branch} (${stat})`,
    pushed_branch: branch,
  };
}

function pushedBranchOf(event: RunEvent): string | undefined {
  const { data } = event;
  return event.type === "log" && data.phase === "delivery" && typeof data.pushed_branch === "string"
    ? data.pushed_branch
    : undefined;
}

function sameRepository(a: string | undefined, b: string): boolean {
  return a?.toLowerCase() === b.toLowerCase();
}
