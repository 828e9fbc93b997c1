import type { Logger } from "pino";
import type { SlackConfig } from "../../config.ts";
import type { SlackSettings } from "../../config-file.ts";
import type { RunService } from "../../runs/run-service.ts";
import { inProcessRunsApiFor, type RunsApi } from "../../runs/runs-api.ts";
import type { Store } from "../../store/store.ts";
import { SlackIntegration, type StatusRenderer } from "./slack-app.ts";

export { SlackIntegration } from "./slack-app.ts";

/** The service account the Slack app acts as; runs carry the Slack user as their creator. */
export const SLACK_PRINCIPAL = { id: "slack-bot", displayName: "Slack app" };

/** The Slack app of this process, acting on the default team's runs (or a remote Dispatch's) through RunsApi. */
export async function createSlackIntegration(opts: {
  config: SlackConfig;
  settings: SlackSettings;
  store: Store;
  runService: RunService;
  publicUrl: () => string;
  log: Logger;
  renderStatus?: StatusRenderer;
  /** Remote mode: runs live in another Dispatch (DISPATCH_RUN_SERVICE_URL). */
  runsApi?: RunsApi;
}): Promise<SlackIntegration> {
  const runs =
    opts.runsApi ??
    (await inProcessRunsApiFor(opts, {
      id: SLACK_PRINCIPAL.id,
      displayName: SLACK_PRINCIPAL.displayName,
      role: "member",
    }));
  return new SlackIntegration({
    config: opts.config,
    settings: opts.settings,
    runs,
    store: opts.store,
    log: opts.log.child({ component: "slack" }),
    ...(opts.renderStatus ? { renderStatus: opts.renderStatus } : {}),
  });
}
