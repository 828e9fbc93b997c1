import type { Surface, SurfaceContext } from "../../surfaces/surface.ts";
import { LinearApi } from "./linear-api.ts";
import { LinearAudience } from "./linear-audience.ts";
import { LinearIntegration } from "./linear-integration.ts";
import { LinearSender } from "./linear-sender.ts";
import { linearNotifierPlatform } from "./notifier-platform.ts";
import { StepReporter } from "./step-reporter.ts";

/** The service account the Linear agent acts as; runs carry the Linear user as their creator. */
export const LINEAR_PRINCIPAL = { id: "linear-bot", displayName: "Linear agent" };

/** At most one plan update per session per this window (Linear's rate limits are per app and hour). */
const EDIT_INTERVAL_MS = 2_000;
/** How often runs in progress are looked at for steps a missed signal left unreported. */
const STEP_POLL_MS = 2_000;

/**
 * Linear as a surface (docs/surfaces.md): agent session webhooks where this process serves the API, the
 * issue's team as the audience, and where it reports (the notifier role) the session's plan, its steps
 * and the final activity.
 */
export async function createSurface(ctx: SurfaceContext): Promise<Surface> {
  const { config, store, log } = ctx;
  const linear = config.linear!;
  const api = new LinearApi({ apiUrl: linear.apiUrl, accessToken: linear.accessToken });
  const runs = await ctx.runsApi(LINEAR_PRINCIPAL);
  const audience = new LinearAudience({
    api,
    settings: config.settings.linear,
    log: log.child({ component: "linear-audience" }),
  });
  const app =
    ctx.inbound && linear.webhookSecret
      ? new LinearIntegration({
          webhookSecret: linear.webhookSecret,
          settings: config.settings.linear,
          runs,
          store,
          api,
          audience,
          access: ctx.access,
          parsing: {
            serverUrl: config.delivery.serverUrl,
            allowFileRemotes: config.delivery.allowFileRemotes,
            allowedHosts: config.settings.git.allowed_hosts,
          },
          inbox: { leaseMs: config.leaseMs, pollMs: config.pollIntervalMs },
          log,
          publicUrl: ctx.publicUrl,
        })
      : undefined;
  log.info({ path: "/linear/webhooks", api: linear.apiUrl }, "Linear agent enabled");
  const sender = new LinearSender({ api, runs, log: log.child({ component: "linear-sender" }) });
  return {
    platform: "linear",
    audience,
    ...(app ? { inbound: app } : {}),
    ...(ctx.outbound
      ? {
          notifier: linearNotifierPlatform({
            sender,
            editIntervalMs: ctx.editIntervalMs.linear ?? EDIT_INTERVAL_MS,
            publicUrl: ctx.publicUrl,
          }),
          reporter: new StepReporter({
            runs,
            store,
            log: log.child({ component: "linear-steps" }),
            pollMs: STEP_POLL_MS,
          }),
        }
      : {}),
  };
}
