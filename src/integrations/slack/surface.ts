import type { Surface, SurfaceContext } from "../../surfaces/surface.ts";
import { inProcessChannelSchedules } from "./channel-schedules.ts";
import { SLACK_PRINCIPAL } from "./index.ts";
import { slackNotifierPlatform } from "./notifier-platform.ts";
import { SlackIntegration } from "./slack-integration.ts";
import { renderStatusCard } from "./status-card.ts";
import { WebApiSlackPoster } from "./web-api.ts";

/** At most one card edit per run per this window: Slack allows about one chat.update a second per message. */
const EDIT_INTERVAL_MS = 1000;

/**
 * Slack as a surface: the app (slash command, mentions, thread follow-ups, buttons) where this process
 * serves the API, its channels' members as the audience, and status cards and replies for the notifier.
 */
export async function createSurface(ctx: SurfaceContext): Promise<Surface> {
  const { config, store, log } = ctx;
  const slack = config.slack!;
  const account = ctx.serviceAccount;
  const app = ctx.inbound
    ? new SlackIntegration({
        config: slack,
        settings: config.settings.slack,
        runs: await ctx.runsApi(SLACK_PRINCIPAL),
        access: ctx.access,
        // In process only: the runs of a remote Dispatch's schedule could not report to this bot's channels.
        ...(ctx.schedules && account
          ? {
              schedules: await (async () => {
                const { principal, team } = await account(SLACK_PRINCIPAL);
                return inProcessChannelSchedules(ctx.schedules!, team.id, principal.id);
              })(),
            }
          : {}),
        // A Slack user signs in as the principal their runs name (`slack:<team>:<user>`), in the team the
        // Slack app's runs belong to; a remote Dispatch's runs are not this web app's to show.
        ...(ctx.webSignIn && account
          ? {
              webLogin: async (creator) => {
                const { team } = await account(SLACK_PRINCIPAL);
                return ctx.webSignIn!.issueLink({
                  id: creator.uid,
                  teamId: team.id,
                  type: "user",
                  displayName: creator.display_name,
                  email: creator.email ?? null,
                });
              },
            }
          : {}),
        store,
        log,
        // The runs' transcripts are in this store only when the runs are this process's.
        agentProgress: account !== undefined,
        renderStatus: (run, binding) => renderStatusCard(run, binding ?? null, Date.now()),
        inbox: { leaseMs: config.leaseMs, pollMs: config.pollIntervalMs },
        repositories: {
          serverUrl: config.delivery.serverUrl,
          allowFileRemotes: config.delivery.allowFileRemotes,
          allowedHosts: config.settings.git.allowed_hosts,
        },
      })
    : undefined;
  return {
    platform: "slack",
    ...(app ? { audience: app.audience, inbound: app } : {}),
    ...(ctx.outbound
      ? {
          notifier: slackNotifierPlatform({
            slack: new WebApiSlackPoster(slack.botToken, { apiUrl: config.slackApiUrl, log }),
            store,
            editIntervalMs: ctx.editIntervalMs.slack ?? EDIT_INTERVAL_MS,
          }),
        }
      : {}),
  };
}
