import type { GitHubApproval } from "../../model/github-sign-in.ts";

/**
 * Web sign-in from GitHub, as the integration sees it: GitHub comments are public, so nothing
 * written here may sign anyone in. A browser opens `startUrl()` and shows a code; the comment
 * `@<bot> login <code>` approves that browser's sign-in for the commenter; the browser then signs itself in.
 */
export interface GitHubWebLogin {
  /** The page that starts a sign-in and shows its code (nothing secret). */
  startUrl(): string;
  /** Approves the sign-in of `code` for GitHub user `login`, whose permission was checked already. */
  approve(code: string, login: string): Promise<GitHubApproval>;
}

/**
 * The reply to `@<bot> login [code]`, after the mention's author (`@login `, added by noticeText): never
 * the code, never a link that signs in, only where to go next.
 */
export async function loginReply(
  webLogin: GitHubWebLogin | undefined,
  login: string,
  code: string | undefined,
): Promise<string> {
  if (!webLogin) {
    return "this Dispatch does not serve the web app (it fronts another Dispatch): sign in on that one.";
  }
  const start = webLogin.startUrl();
  if (code === undefined) {
    return `to sign in to Dispatch's web app, open ${start} in your browser: it shows a code to comment here as \`login <code>\` after the mention.`;
  }
  const result = await webLogin.approve(code, login);
  if (result.kind === "approved") return "signed in: return to your browser.";
  switch (result.reason) {
    case "expired":
      return `that sign-in code has expired (codes work for 10 minutes): open ${start} for a new one.`;
    case "used":
      return `that sign-in code was used already (each code signs in once): open ${start} for a new one.`;
    case "unknown":
      return `that is not a sign-in code Dispatch gave out: open ${start} in your browser and comment the code it shows.`;
  }
}

export function loginRefusalText(login: string, repo: string, minimum: string): string {
  return `<!-- dispatch:refusal -->\n@${login} only people with **${minimum}** access to ${repo} can sign in to Dispatch from here.`;
}
