import type { PullRequestHost, PullRequestRef } from "../../delivery/pull-request-host.ts";
import type { RunRecord } from "../../model/run.ts";
import type { Store } from "../../store/store.ts";
import { githubLoginOf } from "./github-audience.ts";
import { type GitHubClients, splitRepo } from "./github-clients.ts";

/**
 * Delivery's pull requests on GitHub, through the same clients (App installation or token) as the rest
 * of the integration. The git token is the installation token @octokit/auth-app mints (and renews
 * before its hour is up), or GITHUB_TOKEN.
 */
export class GitHubPullRequests implements PullRequestHost {
  private readonly clients: GitHubClients;
  private readonly store: Pick<Store, "bindThread">;

  constructor(clients: GitHubClients, store: Pick<Store, "bindThread">) {
    this.clients = clients;
    this.store = store;
  }

  /**
   * Binds the pull request to the run as a GitHub thread. Its requester is the run's creator when that is
   * a GitHub user (the final comment mentions them); a run asked for elsewhere mentions nobody there.
   */
  async adopt(run: Pick<RunRecord, "id" | "creator">, repository: string, pr: PullRequestRef): Promise<void> {
    await this.store.bindThread({
      runId: run.id,
      platform: "github",
      workspace: repository,
      channel: String(pr.number),
      thread: null,
      triggerRef: null,
      requester: githubLoginOf(run.creator.uid) ?? "",
      createdAt: new Date().toISOString(),
      adopted: true,
    });
  }

  async gitToken(repository: string): Promise<string | undefined> {
    const octokit = await this.clients.forRepo(repository);
    const auth = (await octokit.auth({ type: "installation" })) as { token?: string };
    return auth.token;
  }

  async findOpen(
    repository: string,
    branch: string,
    signal?: AbortSignal,
  ): Promise<PullRequestRef | undefined> {
    const [owner, repo] = splitRepo(repository);
    const octokit = await this.clients.forRepo(repository);
    const { data } = await octokit.rest.pulls.list({
      owner,
      repo,
      state: "open",
      head: `${owner}:${branch}`,
      per_page: 10,
      ...(signal ? { request: { signal } } : {}),
    });
    const pr = data.find((p) => p.head.ref === branch);
    return pr ? refOf(pr) : undefined;
  }

  async open(
    repository: string,
    pr: { title: string; body: string; head: string; base: string; draft: boolean },
    signal?: AbortSignal,
  ): Promise<PullRequestRef> {
    const [owner, repo] = splitRepo(repository);
    const octokit = await this.clients.forRepo(repository);
    const { data } = await octokit.rest.pulls.create({
      owner,
      repo,
      title: pr.title,
      body: pr.body,
      head: pr.head,
      base: pr.base,
      draft: pr.draft,
      ...(signal ? { request: { signal } } : {}),
    });
    return refOf(data);
  }

  async comment(repository: string, number: number, body: string, signal?: AbortSignal): Promise<void> {
    const [owner, repo] = splitRepo(repository);
    const octokit = await this.clients.forRepo(repository);
    await octokit.rest.issues.createComment({
      owner,
      repo,
      issue_number: number,
      body,
      ...(signal ? { request: { signal } } : {}),
    });
  }
}

function refOf(pr: {
  number: number;
  html_url: string;
  base: { ref: string };
  head: { repo: { full_name: string } | null };
}): PullRequestRef {
  return {
    number: pr.number,
    url: pr.html_url,
    base: pr.base.ref,
    headRepository: pr.head.repo?.full_name ?? "",
  };
}
