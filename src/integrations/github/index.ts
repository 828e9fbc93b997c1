import type { Logger } from "pino";
import type { GitHubConfig } from "../../config.ts";
import type { GitHubSettings } from "../../config-file.ts";
import type { RunService } from "../../runs/run-service.ts";
import { inProcessRunsApiFor, type RunsApi } from "../../runs/runs-api.ts";
import type { Store } from "../../store/store.ts";
import type { GitHubClients } from "./client.ts";
import { GitHubIntegration } from "./github-app.ts";

export { GitHubClients } from "./client.ts";
export { GITHUB_WEBHOOK_PATH, GitHubIntegration } from "./github-app.ts";

/** The service account the GitHub integration acts as; runs carry the GitHub user as their creator. */
export const GITHUB_PRINCIPAL = { id: "github-bot", displayName: "GitHub app" };

/** The GitHub integration of this process, acting on the default team's runs through an in-process RunsApi. */
export async function createGitHubIntegration(opts: {
  config: GitHubConfig;
  settings: GitHubSettings;
  clients: GitHubClients;
  store: Store;
  runService: RunService;
  publicUrl: () => string;
  log: Logger;
  /** Remote mode: runs live in another Dispatch (DISPATCH_RUN_SERVICE_URL). */
  runsApi?: RunsApi;
}): Promise<GitHubIntegration> {
  const runs =
    opts.runsApi ??
    (await inProcessRunsApiFor(opts, {
      id: GITHUB_PRINCIPAL.id,
      displayName: GITHUB_PRINCIPAL.displayName,
      role: "member",
    }));
  return new GitHubIntegration({
    config: opts.config,
    settings: opts.settings,
    runs,
    store: opts.store,
    clients: opts.clients,
    log: opts.log.child({ component: "github" }),
  });
}
