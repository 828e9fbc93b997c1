import type { Creator } from "../../model/run.ts";
import { escapeMrkdwn } from "./status-card.ts";
import type { SlackUser } from "./user-directory.ts";

/**
 * Issues a one-time web sign-in link for a Slack user, as the Slack integration names them (the
 * `creator` its runs carry: `slack:<team>:<user>`), so that the web app shows them as their runs do.
 */
export type WebLogin = (creator: Creator) => Promise<{ url: string; expiresAt: string }>;

/** The ephemeral answer to `login`: the link (only the asker sees it), or why there is none. */
export async function loginText(
  webLogin: WebLogin | undefined,
  user: SlackUser,
  command: string,
): Promise<string> {
  if (!webLogin) {
    return "This Dispatch does not serve the web app (it fronts another Dispatch): sign in on that one.";
  }
  const { url } = await webLogin(user.creator);
  return [
    `<${url}|Sign in to Dispatch> as ${escapeMrkdwn(user.creator.display_name)}.`,
    "The link works once, within 10 minutes; do not share it.",
    `(\`${command} login\` again for a new one.)`,
  ].join("\n");
}
