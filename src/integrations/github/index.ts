import type { Logger } from "pino";
import { DEFAULT_TEAM } from "../../auth/bootstrap.ts";
import type { GitHubConfig } from "../../config.ts";
import type { GitHubSettings } from "../../config-file.ts";
import type { RunService } from "../../runs/run-service.ts";
import { InProcessRunsApi } from "../../runs/runs-api.ts";
import type { Caller } from "../../runs/types.ts";
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
}): Promise<GitHubIntegration> {
  const team = await opts.store.ensureTeam(DEFAULT_TEAM);
  const principal = await opts.store.ensurePrincipal({
    id: GITHUB_PRINCIPAL.id,
    teamId: team.id,
    type: "service_account",
    displayName: GITHUB_PRINCIPAL.displayName,
    email: null,
  });
  const caller: Caller = {
    // No API key: the integration is inside the process. This record only names it.
    key: {
      id: "in-process-github",
      principalId: principal.id,
      name: "GitHub app (in process)",
      role: "member",
      prefix: "",
      createdAt: new Date(0).toISOString(),
      revokedAt: null,
    },
    principal,
    team,
  };
  return new GitHubIntegration({
    config: opts.config,
    settings: opts.settings,
    runs: new InProcessRunsApi(opts.runService, caller, opts.publicUrl),
    store: opts.store,
    clients: opts.clients,
    log: opts.log.child({ component: "github" }),
  });
}
