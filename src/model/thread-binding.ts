/**
 * One thread of a run: where it was asked for and reports back (a Slack thread, a GitHub issue or pull
 * request, …). A run has one or more (docs/surfaces.md, "one run, many threads"): the thread it was asked
 * in is its origin, the first bound; a pull request it opened, or another thread that took it up, are
 * bound later. The fields' meaning is the surface's; the names below are Slack's and GitHub's.
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
  /** When someone last asked the run something from this thread (a follow-up); null if never since binding. */
  askedAt?: string | null;
  /**
   * Bound because the run delivered there (the pull request it opened), not because it was asked there. A
   * run whose threads are all adopted (an API run with a pull request) keeps its team as audience.
   */
  adopted?: boolean;
  /**
   * Why the thread no longer follows the run ("merged", "closed": its pull request is done); null while it
   * does. An ended thread gets no more cards and steers nothing; it still counts for the run's audience.
   */
  ended?: string | null;
}

/** Names one binding among a run's threads: its card state and outbox rows carry it. */
export function threadKey(b: Pick<ThreadBinding, "platform" | "workspace" | "channel">): string {
  return `${b.platform}:${b.workspace}:${b.channel}`;
}
