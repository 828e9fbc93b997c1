import type { SchemaMismatchBehavior } from "jira.js/core";
import type { Surface, SurfaceContext } from "../../surfaces/surface.ts";
import { CloudTransport } from "./cloud-transport.ts";
import { DataCenterTransport } from "./datacenter-transport.ts";
import { jiraTarget } from "./issue-messages.ts";
import { JiraApi } from "./jira-api.ts";
import { JiraAudience } from "./jira-audience.ts";
import { JiraIntegration } from "./jira-integration.ts";
import { JiraSender } from "./jira-sender.ts";
import { jiraNotifierPlatform } from "./notifier-platform.ts";

/** The service account the Jira surface acts as; runs carry the Jira user as their creator. */
export const JIRA_PRINCIPAL = { id: "jira-bot", displayName: "Jira" };

/** At most one edit of a run's comment per this window (each edit is a request against the site's limits). */
const EDIT_INTERVAL_MS = 5_000;

/**
 * Jira as a surface (docs/surfaces.md, Jira), on Cloud (REST v3, ADF) or Data Center (REST v2, wiki
 * markup): webhooks where this process serves the API, the project's browsers as the audience, and where
 * it reports (the notifier role) one comment per run, the final comment, the pull request's link and the
 * configured transitions.
 */
export async function createSurface(ctx: SurfaceContext): Promise<Surface> {
  const { config, store, log } = ctx;
  const jira = config.jira!;
  const settings = config.settings.jira;
  const options = (ctx.options.jira ?? {}) as { onSchemaMismatch?: SchemaMismatchBehavior };
  const schemaLog = log.child({ component: "jira-schema" });
  const transport =
    jira.auth.kind === "pat"
      ? new DataCenterTransport({ baseUrl: jira.baseUrl, token: jira.auth.token })
      : new CloudTransport({
          baseUrl: jira.baseUrl,
          email: jira.auth.email,
          apiToken: jira.auth.apiToken,
          // An answer of a shape jira.js does not expect is logged once per field, never a failure.
          onSchemaMismatch:
            options.onSchemaMismatch ??
            ((report) =>
              schemaLog.warn({ endpoint: report.endpoint }, "Jira answered in an unexpected shape")),
        });
  const api = new JiraApi({ transport, baseUrl: jira.baseUrl, botId: jira.botId });
  const target = jiraTarget(jira.baseUrl);
  const audience = new JiraAudience({ api, settings, log: log.child({ component: "jira-audience" }) });
  const app =
    ctx.inbound && jira.webhookSecret
      ? new JiraIntegration({
          flavour: jira.flavour,
          botId: jira.botId,
          webhookSecret: jira.webhookSecret,
          settings,
          runs: await ctx.runsApi(JIRA_PRINCIPAL),
          store,
          api,
          audience,
          access: ctx.access,
          parsing: {
            serverUrl: config.delivery.serverUrl,
            allowFileRemotes: config.delivery.allowFileRemotes,
            allowedHosts: config.settings.git.allowed_hosts,
          },
          target,
          inbox: { leaseMs: config.leaseMs, pollMs: config.pollIntervalMs },
          log,
          publicUrl: ctx.publicUrl,
        })
      : undefined;
  log.info({ path: "/jira/webhooks", site: jira.baseUrl, flavour: jira.flavour }, "Jira surface enabled");
  return {
    platform: "jira",
    audience,
    ...(app ? { inbound: app } : {}),
    ...(ctx.outbound
      ? {
          notifier: jiraNotifierPlatform({
            sender: new JiraSender({ api, store, log: log.child({ component: "jira-sender" }) }),
            target,
            settings,
            editIntervalMs: ctx.editIntervalMs.jira ?? EDIT_INTERVAL_MS,
            publicUrl: ctx.publicUrl,
          }),
        }
      : {}),
  };
}
