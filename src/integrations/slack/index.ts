import type { Logger } from "pino";
import type { RunAccess } from "../../access/run-access.ts";
import type { SlackConfig } from "../../config.ts";
import type { SlackSettings } from "../../config-file.ts";
import type { RepositoryParsing } from "../../model/repository.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { Store } from "../../store/store.ts";
import type { ChannelSchedules } from "./channel-schedules.ts";
import { SlackIntegration } from "./slack-integration.ts";
import type { StatusRenderer } from "./verbs.ts";
import type { WebLogin } from "./web-login.ts";

export { inProcessChannelSchedules } from "./channel-schedules.ts";
export { SlackIntegration } from "./slack-integration.ts";

/** The service account the Slack app acts as; runs carry the Slack user as their creator. */
export const SLACK_PRINCIPAL = { id: "slack-bot", displayName: "Slack app" };

/**
 * The Slack app of this process, acting on runs through `runs` (this process's run service as the Slack
 * service account, or a remote Dispatch's) and keeping its inbox and thread bindings in `store`.
 */
export function createSlackIntegration(opts: {
  config: SlackConfig;
  settings: SlackSettings;
  runs: RunsApi;
  store: Store;
  log: Logger;
  renderStatus?: StatusRenderer;
  /** Schedules made from Slack (in process only); absent in remote mode. */
  schedules?: ChannelSchedules;
  /** The lease on a delivery being handled, and how often the inbox is polled for ones nobody holds. */
  inbox: { leaseMs: number; pollMs: number };
  /** How repositories in commands are read: the server's GitHub URL and whether file:// is allowed. */
  repositories?: RepositoryParsing;
  /** Issues web sign-in links for `/agent login`; absent in remote mode. */
  webLogin?: WebLogin;
  /** The one access rule (its verbs ask it); the caller registers the integration's `audience` with it. */
  access: RunAccess;
}): SlackIntegration {
  // Each part of the integration logs under its own `component` (slack, slack-receiver, …).
  return new SlackIntegration(opts);
}
