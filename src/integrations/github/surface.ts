import type { Surface, SurfaceContext } from "../../surfaces/surface.ts";
import { GitHubSignIn } from "../../web/auth/github-sign-in.ts";
import { GitHubClients } from "./github-clients.ts";
import { GitHubIntegration } from "./github-integration.ts";
import { GITHUB_PRINCIPAL } from "./index.ts";
import { githubNotifierPlatform } from "./notifier-platform.ts";
import { GitHubPullRequests } from "./pull-request-host.ts";

/** At most one edit of a tracking comment per run per this window (GitHub's secondary rate limits). */
const EDIT_INTERVAL_MS = 10_000;

/**
 * GitHub as a surface: `issue_comment` webhooks where this process serves the API (only the api role
 * receives webhooks; the configuration requires their secret exactly then), a repository's collaborators
 * at min_permission as the audience, tracking comments for the notifier, pull requests for delivery and
 * sign-in to the web app with a `login <code>` comment.
 */
export async function createSurface(ctx: SurfaceContext): Promise<Surface> {
  const { config, store, log } = ctx;
  const github = config.github!;
  const clients = new GitHubClients({
    auth: github.auth,
    apiUrl: github.apiUrl,
    log,
    ...((ctx.options.github as { throttle?: boolean } | undefined)?.throttle !== undefined
      ? { throttle: (ctx.options.github as { throttle: boolean }).throttle }
      : {}),
  });
  const account = ctx.serviceAccount;
  // GitHub users sign in as the principal their runs name (`github:<login>`), in the team of the GitHub
  // integration's runs; not when fronting another Dispatch, whose runs this web app does not show.
  const commentSignIn =
    ctx.webSignIn && account
      ? new GitHubSignIn({
          store,
          signIn: ctx.webSignIn,
          teamId: async () => (await account(GITHUB_PRINCIPAL)).team.id,
          publicUrl: ctx.publicUrl,
          handle: github.botHandle,
          minPermission: config.settings.github.min_permission,
        })
      : undefined;
  const app =
    ctx.inbound && github.webhookSecret
      ? new GitHubIntegration({
          config: { ...github, webhookSecret: github.webhookSecret },
          settings: config.settings.github,
          clients,
          runs: await ctx.runsApi(GITHUB_PRINCIPAL),
          store,
          log,
          inbox: { leaseMs: config.leaseMs, pollMs: config.pollIntervalMs },
          serverUrl: config.delivery.serverUrl,
          ...(commentSignIn ? { webLogin: commentSignIn } : {}),
        })
      : undefined;
  log.info(
    { path: "/github/webhooks", auth: github.auth.kind, handle: `@${github.botHandle}` },
    "GitHub integration enabled",
  );
  return {
    platform: "github",
    ...(app ? { audience: app.audience, inbound: app } : {}),
    pullRequests: new GitHubPullRequests(clients, store),
    ...(commentSignIn ? { commentSignIn } : {}),
    ...(ctx.outbound
      ? {
          notifier: githubNotifierPlatform({
            clients,
            store,
            editIntervalMs: ctx.editIntervalMs.github ?? EDIT_INTERVAL_MS,
            handle: github.botHandle,
          }),
        }
      : {}),
  };
}
