export { GitHubClients } from "./github-clients.ts";
export { GitHubIntegration } from "./github-integration.ts";
export { GitHubPullRequests } from "./pull-request-host.ts";
export { GITHUB_WEBHOOK_PATH } from "./webhook-route.ts";

/** The service account the GitHub integration acts as; runs carry the GitHub user as their creator. */
export const GITHUB_PRINCIPAL = { id: "github-bot", displayName: "GitHub app" };
