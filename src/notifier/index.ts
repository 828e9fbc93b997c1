import type { Logger } from "pino";
import type { GitHubClients } from "../integrations/github/client.ts";
import type { RunService } from "../runs/run-service.ts";
import { inProcessRunsApiFor, type RunsApi } from "../runs/runs-api.ts";
import type { Store } from "../store/store.ts";
import { GitHubOutboxTransport } from "./github-transport.ts";
import { Notifier, type NotifierOptions } from "./notifier.ts";
import type { DeliveryOutcome } from "./outbox.ts";
import { WebApiSlackTransport } from "./slack-transport.ts";

export { Notifier, type NotifierOptions } from "./notifier.ts";
export { renderStatusCard } from "./status-card.ts";

/** The service account the notifier reads runs as (the default team, like the Slack app). */
export const NOTIFIER_PRINCIPAL = { id: "slack-notifier", displayName: "Slack notifier" };

export function notifierRunsApi(
  store: Store,
  runService: RunService,
  publicUrl: () => string,
): Promise<RunsApi> {
  return inProcessRunsApiFor(
    { store, runService, publicUrl },
    { id: NOTIFIER_PRINCIPAL.id, displayName: NOTIFIER_PRINCIPAL.displayName, role: "read" },
  );
}

/**
 * The notifier of this process: reads runs through an in-process RunsApi; reports SLACK runs with the bot
 * token and GITHUB_WEBHOOK runs through the GitHub clients (either may be absent).
 */
export async function createNotifier(opts: {
  slack?: { botToken: string; apiUrl: string };
  github?: { clients: GitHubClients };
  store: Store;
  runService: RunService;
  publicUrl: () => string;
  log: Logger;
  options?: Partial<NotifierOptions>;
  onDelivery?: (kind: string, outcome: DeliveryOutcome) => void;
  /** Remote mode: runs live in another Dispatch (DISPATCH_RUN_SERVICE_URL). */
  runsApi?: RunsApi;
}): Promise<Notifier> {
  return new Notifier({
    runsApi: opts.runsApi ?? (await notifierRunsApi(opts.store, opts.runService, opts.publicUrl)),
    store: opts.store,
    ...(opts.slack
      ? { slack: new WebApiSlackTransport(opts.slack.botToken, { apiUrl: opts.slack.apiUrl, log: opts.log }) }
      : {}),
    ...(opts.github
      ? { github: { transport: new GitHubOutboxTransport(opts.github.clients, opts.store) } }
      : {}),
    log: opts.log,
    ...(opts.options ? { options: opts.options } : {}),
    ...(opts.onDelivery ? { onDelivery: opts.onDelivery } : {}),
  });
}
