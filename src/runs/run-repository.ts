import { RunError } from "../model/errors.ts";
import {
  branchNameProblem,
  isGitHubRepository,
  parseRepositorySpec,
  type RepositoryParsing,
  triggerOf,
  workBranchName,
} from "../model/repository.ts";
import type { AgentConfig, RunRecord } from "../model/run.ts";

/** Where owner/repo lives, whether file:// remotes and which git hosts are allowed, and whether PRs open. */
export type RepositoryDelivery = RepositoryParsing & { pullRequests: boolean };

/**
 * The run's repository, base, work branch and delivery mode (docs/delivery.md), normalised on the config so
 * every surface shows them: `owner/repo@base` splits, the work branch is named now. A `config.branch`
 * given must be the run's own: the executor checks the remote (branch-ownership.ts); here, a `dispatch/`
 * branch, which is another run's, is refused unless this run continues that run (`parent_run_id`) or
 * was started on a pull request of the repository, whose head it may be.
 */
export function resolveRepository(
  config: AgentConfig,
  runId: string,
  title: string,
  delivery: RepositoryDelivery | undefined,
  context: { parent: RunRecord | undefined; triggerUrl: string | undefined },
): void {
  for (const field of ["base_branch", "branch", "delivery"] as const) {
    if (config[field] !== undefined && !config.repository)
      throw new RunError("invalid_request", `config.${field} needs config.repository`);
  }
  if (!config.repository) return;
  if (!delivery) {
    throw new RunError("invalid_request", "config.repository: this server does not deliver to repositories");
  }
  const spec = parseRepositorySpec(config.repository, delivery);
  if (typeof spec === "string") throw new RunError("invalid_request", `config.repository: ${spec}`);
  if (spec.base && config.base_branch && spec.base !== config.base_branch) {
    throw new RunError(
      "invalid_request",
      `config.repository names the base branch "${spec.base}" and config.base_branch "${config.base_branch}": give one`,
    );
  }
  const base = spec.base ?? config.base_branch;
  for (const [field, name] of [
    ["base_branch", base],
    ["branch", config.branch],
  ] as const) {
    const problem = name === undefined ? undefined : branchNameProblem(name);
    if (problem) throw new RunError("invalid_request", `config.${field}: "${name}" ${problem}`);
  }
  if (config.branch && config.branch === base) {
    throw new RunError(
      "invalid_request",
      "config.branch: Dispatch does not push to the base branch; leave config.branch out for a new branch",
    );
  }
  if (config.branch?.startsWith("dispatch/") && !continuesBranch(spec.repository, config.branch, context)) {
    throw new RunError(
      "invalid_request",
      `config.branch: ${config.branch} is a branch Dispatch named for another run; a run works on it only to continue that run (parent_run_id). Leave config.branch out for a new branch, or name one that does not exist yet.`,
    );
  }
  const onGitHub = isGitHubRepository(spec.repository);
  if (config.delivery === "pull_request" && !(onGitHub && delivery.pullRequests)) {
    throw new RunError(
      "invalid_request",
      onGitHub
        ? "config.delivery: pull requests need the GitHub integration: set GITHUB_TOKEN or GITHUB_APP_ID on the server, or use delivery branch"
        : "config.delivery: pull requests are opened on GitHub repositories (owner/repo) only; use delivery branch for a git URL",
    );
  }
  config.repository = spec.repository;
  if (base) config.base_branch = base;
  else delete config.base_branch;
  config.delivery ??= onGitHub && delivery.pullRequests ? "pull_request" : "branch";
  if (config.delivery !== "none") config.branch ??= workBranchName(runId, title);
}

/**
 * Whether a run may name `branch` of `repository` as its work branch at create: it continues the run whose
 * branch it is (`parent`), or it was started on a pull request of that repository (a GitHub comment; the
 * executor checks that the branch is that pull request's head).
 */
function continuesBranch(
  repository: string,
  branch: string,
  context: { parent: RunRecord | undefined; triggerUrl: string | undefined },
): boolean {
  const parent = context.parent?.agentConfig;
  if (parent?.branch === branch && parent.repository?.toLowerCase() === repository.toLowerCase()) return true;
  return triggerOf(context.triggerUrl, repository)?.kind === "pull";
}
