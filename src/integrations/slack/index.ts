import type { Logger } from "pino";
import { DEFAULT_TEAM } from "../../auth/bootstrap.ts";
import type { SlackConfig } from "../../config.ts";
import type { SlackSettings } from "../../config-file.ts";
import type { RunService } from "../../runs/run-service.ts";
import { InProcessRunsApi } from "../../runs/runs-api.ts";
import type { Caller } from "../../runs/types.ts";
import type { Store } from "../../store/store.ts";
import { SlackIntegration, type StatusRenderer } from "./slack-app.ts";

export { SlackIntegration } from "./slack-app.ts";

/** The service account the Slack app acts as; runs carry the Slack user as their creator. */
export const SLACK_PRINCIPAL = { id: "slack-bot", displayName: "Slack app" };

/** The Slack app of this process, acting on the default team's runs through an in-process RunsApi. */
export async function createSlackIntegration(opts: {
  config: SlackConfig;
  settings: SlackSettings;
  store: Store;
  runService: RunService;
  publicUrl: () => string;
  log: Logger;
  renderStatus?: StatusRenderer;
}): Promise<SlackIntegration> {
  const team = await opts.store.ensureTeam(DEFAULT_TEAM);
  const principal = await opts.store.ensurePrincipal({
    id: SLACK_PRINCIPAL.id,
    teamId: team.id,
    type: "service_account",
    displayName: SLACK_PRINCIPAL.displayName,
    email: null,
  });
  const caller: Caller = {
    // No API key: the integration is inside the process. This record only names it.
    key: {
      id: "in-process-slack",
      principalId: principal.id,
      name: "Slack app (in process)",
      role: "member",
      prefix: "",
      createdAt: new Date(0).toISOString(),
      revokedAt: null,
    },
    principal,
    team,
  };
  return new SlackIntegration({
    config: opts.config,
    settings: opts.settings,
    runs: new InProcessRunsApi(opts.runService, caller, opts.publicUrl),
    store: opts.store,
    log: opts.log.child({ component: "slack" }),
    ...(opts.renderStatus ? { renderStatus: opts.renderStatus } : {}),
  });
}
