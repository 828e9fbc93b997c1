/** Where a run was asked for and reports back: a Slack thread or a GitHub issue or pull request. */
export interface ThreadBinding {
  runId: string;
  platform: "slack" | "github";
  /** Slack team id, or GitHub "owner/repo". */
  workspace: string;
  /** Slack channel id, or GitHub issue/PR number. */
  channel: string;
  /** Slack thread ts; null until a slash command's status card is posted, and on GitHub. */
  thread: string | null;
  /** The message ts or comment id that asked for the run; null for slash commands. */
  triggerRef: string | null;
  /** Slack user id or GitHub login. */
  requester: string;
  createdAt: string;
}
