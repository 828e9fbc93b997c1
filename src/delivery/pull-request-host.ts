import type { RunRecord } from "../model/run.ts";

/**
 * What delivery needs of the git host's API (GitHub): a token for git, and pull requests. Implemented by
 * the GitHub integration; the executor only knows this port.
 */
export interface PullRequestRef {
  number: number;
  url: string;
  /** The head branch's repository, `owner/repo` (another one for a pull request from a fork). */
  headRepository: string;
  base: string;
}

export interface PullRequestHost {
  /**
   * A token git may use for `owner/repo` (a GitHub App installation token minted now, or GITHUB_TOKEN);
   * undefined when none is configured (a public or file:// repository).
   */
  gitToken(repository: string): Promise<string | undefined>;
  /** The open pull request whose head is `branch` of `repository`, if any. */
  findOpen(repository: string, branch: string, signal?: AbortSignal): Promise<PullRequestRef | undefined>;
  open(
    repository: string,
    pr: { title: string; body: string; head: string; base: string; draft: boolean },
    signal?: AbortSignal,
  ): Promise<PullRequestRef>;
  comment(repository: string, number: number, body: string, signal?: AbortSignal): Promise<void>;
  /**
   * The run opened or updated this pull request: it becomes one of the run's threads (docs/surfaces.md,
   * one run, many threads), whatever surface the run was asked from, so that comments, reviews and CI on
   * it steer this run and its card shows there.
   */
  adopt(run: Pick<RunRecord, "id" | "creator">, repository: string, pr: PullRequestRef): Promise<void>;
}
