import { createAppAuth } from "@octokit/auth-app";
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { Octokit } from "@octokit/rest";
import type { Logger } from "pino";

/** @octokit/rest with GitHub's rate-limit etiquette (throttling) and retries of transient failures. */
const ThrottledOctokit = Octokit.plugin(throttling, retry);
/** What the rest of Dispatch uses of a client: the REST methods and pagination. */
export type GitHubOctokit = Octokit;

export type GitHubAuth =
  | { kind: "app"; appId: string; privateKey: string }
  | { kind: "token"; token: string };

export interface GitHubClientOptions {
  auth: GitHubAuth;
  /** GITHUB_API_URL: https://api.github.com, a GitHub Enterprise Server's /api/v3, or a test fake. */
  apiUrl: string;
  log: Logger;
  /**
   * Pace requests the way GitHub asks (@octokit/plugin-throttling: one content-creating request per
   * second per process, under the ≤ 80/min secondary limit). Off only in tests that must not wait.
   */
  throttle?: boolean;
}

/** A read may wait this long for a rate limit inside the call; anything longer fails and is retried later. */
const MAX_INLINE_WAIT_S = 5;

/**
 * Octokit clients for the repositories Dispatch talks to. With a token, one client. As a GitHub App, one
 * client per installation: @octokit/auth-app signs a JWT with the App's private key, exchanges it for an
 * installation token and renews that token before its 1 h expiry. The installation of a repository comes
 * from the webhook payload (`installation.id`), else from `GET /repos/{owner}/{repo}/installation`.
 */
export class GitHubClients {
  private readonly opts: GitHubClientOptions;
  private readonly log: Logger;
  private readonly byInstallation = new Map<number, GitHubOctokit>();
  private readonly installationOfRepo = new Map<string, number>();
  private tokenClient: GitHubOctokit | undefined;
  private appClient: GitHubOctokit | undefined;

  constructor(opts: GitHubClientOptions) {
    this.opts = opts;
    this.log = opts.log.child({ component: "github-api" });
  }

  /** Records the installation a webhook came through, so no lookup is needed for its repository. */
  rememberInstallation(repo: string, installationId: number | undefined): void {
    if (this.opts.auth.kind === "app" && installationId)
      this.installationOfRepo.set(repo.toLowerCase(), installationId);
  }

  /** The client acting on `owner/repo`. */
  async forRepo(repo: string): Promise<GitHubOctokit> {
    const auth = this.opts.auth;
    if (auth.kind === "token") {
      this.tokenClient ??= this.create({ auth: auth.token });
      return this.tokenClient;
    }
    const key = repo.toLowerCase();
    let installationId = this.installationOfRepo.get(key);
    if (!installationId) {
      this.appClient ??= this.create({
        authStrategy: createAppAuth,
        auth: { appId: auth.appId, privateKey: auth.privateKey },
      });
      const [owner, name] = splitRepo(repo);
      const { data } = await this.appClient.rest.apps.getRepoInstallation({ owner, repo: name });
      installationId = data.id;
      this.installationOfRepo.set(key, installationId);
    }
    let client = this.byInstallation.get(installationId);
    if (!client) {
      client = this.create({
        authStrategy: createAppAuth,
        auth: { appId: auth.appId, privateKey: auth.privateKey, installationId },
      });
      this.byInstallation.set(installationId, client);
    }
    return client;
  }

  private create(auth: Record<string, unknown>): GitHubOctokit {
    const log = this.log;
    const waitInline = (retryAfter: number, options: { method?: string }, retryCount: number) =>
      options.method === "GET" && retryCount < 1 && retryAfter <= MAX_INLINE_WAIT_S;
    return new ThrottledOctokit({
      ...auth,
      baseUrl: this.opts.apiUrl,
      userAgent: "dispatch",
      log: {
        debug: () => {},
        info: () => {},
        warn: (message: string) => log.debug({ detail: message }, "octokit warning"),
        error: (message: string) => log.warn({ detail: message }, "octokit error"),
      },
      // Writes come from the outbox, which retries on its own schedule: here they fail fast on a rate
      // limit (the outbox pauses that target until retry-after / x-ratelimit-reset). Reads on the
      // webhook path may wait a few seconds once.
      throttle:
        this.opts.throttle === false
          ? { enabled: false }
          : {
              onRateLimit: (retryAfter, options, _octokit, retryCount) => {
                log.info({ retry_after_s: retryAfter, url: options.url }, "GitHub primary rate limit");
                return waitInline(retryAfter, options, retryCount);
              },
              onSecondaryRateLimit: (retryAfter, options, _octokit, retryCount) => {
                log.info({ retry_after_s: retryAfter, url: options.url }, "GitHub secondary rate limit");
                return waitInline(retryAfter, options, retryCount);
              },
            },
      retry: { retries: 2 },
    });
  }
}

export function splitRepo(repo: string): [string, string] {
  const i = repo.indexOf("/");
  return [repo.slice(0, i), repo.slice(i + 1)];
}
