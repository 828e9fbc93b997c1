import type { Logger } from "pino";
import type { GitHubWebhookConfig } from "../../config.ts";
import type { GitHubSettings } from "../../config-file.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { Store } from "../../store/store.ts";
import type { GitHubClients } from "./github-clients.ts";
import { GitHubIntegration } from "./github-integration.ts";
import type { GitHubWebLogin } from "./web-login.ts";

export { GitHubClients } from "./github-clients.ts";
export { GitHubIntegration } from "./github-integration.ts";
export { GitHubPullRequests } from "./pull-request-host.ts";
export { GITHUB_WEBHOOK_PATH } from "./webhook-route.ts";

/** The service account the GitHub integration acts as; runs carry the GitHub user as their creator. */
export const GITHUB_PRINCIPAL = { id: "github-bot", displayName: "GitHub app" };

/**
 * The GitHub integration of this process, acting on runs through `runs` (this process's run service as the
 * GitHub service account, or a remote Dispatch's) and keeping its inbox and bindings in `store`.
 */
export function createGitHubIntegration(opts: {
  config: GitHubWebhookConfig;
  settings: GitHubSettings;
  clients: GitHubClients;
  runs: RunsApi;
  store: Store;
  log: Logger;
  /** The lease on a delivery being handled, and how often the inbox is polled for ones nobody holds. */
  inbox: { leaseMs: number; pollMs: number };
  /** GITHUB_SERVER_URL: attachment links on its host are fetched as github.com's are. */
  serverUrl?: string;
  /** Approves web sign-ins (`login <code>`); absent where this Dispatch serves no web app (remote mode). */
  webLogin?: GitHubWebLogin;
}): GitHubIntegration {
  return new GitHubIntegration(opts);
}
