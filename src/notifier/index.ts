import type { Logger } from "pino";
import { DEFAULT_TEAM } from "../auth/bootstrap.ts";
import type { GitHubClients } from "../integrations/github/client.ts";
import type { RunService } from "../runs/run-service.ts";
import { InProcessRunsApi, type RunsApi } from "../runs/runs-api.ts";
import type { Caller } from "../runs/types.ts";
import type { Store } from "../store/store.ts";
import { GitHubOutboxTransport } from "./github-transport.ts";
import { Notifier, type NotifierOptions, SlackNotifier } from "./notifier.ts";
import type { DeliveryOutcome } from "./outbox.ts";
import { WebApiSlackTransport } from "./slack-transport.ts";

export { Notifier, type NotifierOptions, SlackNotifier } from "./notifier.ts";
export { renderStatusCard } from "./status-card.ts";

/** The service account the notifier reads runs as (the default team, like the Slack app). */
export const NOTIFIER_PRINCIPAL = { id: "slack-notifier", displayName: "Slack notifier" };

export async function notifierRunsApi(
  store: Store,
  runService: RunService,
  publicUrl: () => string,
): Promise<RunsApi> {
  const team = await store.ensureTeam(DEFAULT_TEAM);
  const principal = await store.ensurePrincipal({
    id: NOTIFIER_PRINCIPAL.id,
    teamId: team.id,
    type: "service_account",
    displayName: NOTIFIER_PRINCIPAL.displayName,
    email: null,
  });
  const caller: Caller = {
    // No API key: the notifier is inside the process. This record only names it.
    key: {
      id: "in-process-slack-notifier",
      principalId: principal.id,
      name: "Slack notifier (in process)",
      role: "read",
      prefix: "",
      createdAt: new Date(0).toISOString(),
      revokedAt: null,
    },
    principal,
    team,
  };
  return new InProcessRunsApi(runService, caller, publicUrl);
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
}): Promise<Notifier> {
  return new Notifier({
    runsApi: await notifierRunsApi(opts.store, opts.runService, opts.publicUrl),
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

/** The Slack notifier of this process: reads runs through an in-process RunsApi, posts with the bot token. */
export async function createSlackNotifier(opts: {
  botToken: string;
  apiUrl: string;
  store: Store;
  runService: RunService;
  publicUrl: () => string;
  log: Logger;
  options?: Partial<NotifierOptions>;
  onDelivery?: (kind: string, outcome: DeliveryOutcome) => void;
}): Promise<SlackNotifier> {
  return new SlackNotifier({
    runsApi: await notifierRunsApi(opts.store, opts.runService, opts.publicUrl),
    store: opts.store,
    slack: new WebApiSlackTransport(opts.botToken, { apiUrl: opts.apiUrl, log: opts.log }),
    log: opts.log,
    ...(opts.options ? { options: opts.options } : {}),
    ...(opts.onDelivery ? { onDelivery: opts.onDelivery } : {}),
  });
}
