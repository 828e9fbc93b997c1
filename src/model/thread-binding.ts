/**
 * Where a run was asked for and reports back: a thread of a surface (a Slack thread, a GitHub issue or
 * pull request, …). The fields' meaning is the surface's; the names below are Slack's and GitHub's.
 */
export interface ThreadBinding {
  runId: string;
  /** The surface that owns the thread, as it registered itself (src/surfaces/): "slack", "github", … */
  platform: string;
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
