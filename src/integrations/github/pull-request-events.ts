import type { Logger } from "pino";
import type { Artifact } from "../../model/run.ts";
import { type ThreadBinding, threadKey } from "../../model/thread-binding.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { Store } from "../../store/store.ts";
import type { GitHubAudience } from "./github-audience.ts";
import { githubPrincipalId } from "./github-audience.ts";
import { type GitHubClients, splitRepo } from "./github-clients.ts";
import { idempotencyKey } from "./idempotency-key.ts";
import { IssueThread } from "./issue-thread.ts";
import { commandText, mentionsHandle } from "./mention.ts";
import { noticeText } from "./messages.ts";
import type { Verbs } from "./verbs.ts";
import type { Payload } from "./webhook-events.ts";

/** Inline comments of a review carried into its follow-up, at most. */
const MAX_REVIEW_COMMENTS = 50;
/** Lines of an inline comment's diff hunk quoted in the follow-up (the lines it is on). */
const HUNK_LINES = 6;

export interface PullRequestEventsDeps {
  botHandle: string;
  /** The least repository role that may steer runs, as a refusal names it. */
  minPermission: string;
  store: Pick<Store, "findLatestBinding" | "endThread" | "recordArtifact" | "enqueueOutbox" | "claimInbound">;
  runs: Pick<RunsApi, "get">;
  clients: Pick<GitHubClients, "forRepo">;
  audience: GitHubAudience;
  verbs: Verbs;
  log: Logger;
}

/**
 * A pull request a run opened is one of its threads (docs/surfaces.md, one run, many threads): an inline
 * review comment mentioning the bot, a review asking for changes, or a review mentioning the bot steer
 * that run (a follow-up on the same branch); merging or closing the pull request ends the thread.
 */
export class PullRequestEvents {
  private readonly deps: PullRequestEventsDeps;

  constructor(deps: PullRequestEventsDeps) {
    this.deps = deps;
  }

  /** `pull_request_review_comment` created, mentioning the bot: a follow-up, answered in its review thread. */
  async onReviewComment(delivery: string, p: Payload): Promise<void> {
    const repo = String(p.repository.full_name);
    const number = Number(p.pull_request.number);
    const comment = p.comment as {
      id: number;
      body: string;
      path?: string;
      line?: number | null;
      diff_hunk?: string;
    };
    const login = String(p.comment.user.login);
    const thread = new IssueThread(this.deps.store, repo, number, delivery);
    await thread.reactToReviewComment(comment.id, "eyes");
    const answer = (purpose: string, text: string) =>
      thread.replyInReview(comment.id, purpose, noticeText(login, text));

    const refusal = await this.mayNotSteer(repo, login);
    if (refusal) return answer("refusal", refusal);
    const owner = await this.ownerOf(repo, number);
    if (!owner) {
      return answer(
        "no-run",
        `No Dispatch run is working on this pull request. \`@${this.deps.botHandle} <task>\` in a comment on the conversation starts one.`,
      );
    }
    if (owner.ended) return answer("ended", endedWords(number, owner));
    const text = commandText(comment.body, this.deps.botHandle).trim();
    const where = comment.path ? `${comment.path}${comment.line ? `:${comment.line}` : ""}` : "the diff";
    const message = [
      `A review comment on ${where}:`,
      ...(comment.diff_hunk ? ["", fenced(comment.diff_hunk.split("\n").slice(-HUNK_LINES).join("\n"))] : []),
      "",
      text,
    ].join("\n");
    const key = idempotencyKey("review-comment", repo, comment.id);
    if (await this.deps.verbs.followup(thread, login, owner.runId, text === "" ? "" : message, key)) {
      await answer(
        "followup",
        `On it: run \`${owner.runId}\` takes this as a follow-up; the tracking comment shows its progress.`,
      );
    }
  }

  /**
   * `pull_request_review` submitted: "changes requested" by someone who may steer is a follow-up carrying
   * the review's body and its inline comments; any other review mentioning the bot, one with its body.
   */
  async onReview(delivery: string, p: Payload): Promise<void> {
    const repo = String(p.repository.full_name);
    const number = Number(p.pull_request.number);
    const review = p.review as { id: number; body?: string | null; state: string; user: { login: string } };
    const login = review.user.login;
    const changesRequested = review.state.toLowerCase() === "changes_requested";
    const thread = new IssueThread(this.deps.store, repo, number, delivery);
    const owner = await this.ownerOf(repo, number);
    // A review that does not name the bot, on a pull request no run works on, is not for Dispatch.
    const mentioned = mentionsHandle(review.body ?? "", this.deps.botHandle);
    if (!owner || owner.ended) {
      if (!mentioned) return;
      return this.deps.verbs.notice(
        thread,
        login,
        owner ? endedWords(number, owner) : "No Dispatch run is working on this pull request.",
      );
    }
    const refusal = await this.mayNotSteer(repo, login);
    if (refusal)
      return changesRequested && !mentioned ? undefined : this.deps.verbs.notice(thread, login, refusal);
    const body = commandText(review.body ?? "", this.deps.botHandle).trim();
    let message = body;
    if (changesRequested) {
      const inline = await this.inlineComments(repo, number, review.id);
      message = [
        `@${login} requested changes in a review of this pull request.`,
        ...(body ? ["", body] : []),
        ...(inline.length ? ["", "Inline comments:", ...inline] : []),
      ].join("\n");
    }
    const key = idempotencyKey("review", repo, review.id);
    if (await this.deps.verbs.followup(thread, login, owner.runId, message, key)) {
      await this.deps.verbs.notice(
        thread,
        login,
        `On it: run \`${owner.runId}\` takes your review as a follow-up; the tracking comment shows its progress.`,
      );
    }
  }

  /**
   * `pull_request` closed: the pull request's thread ends (later comments, reviews and CI on it steer
   * nothing), and the run's pull request shows merged or closed on every card.
   */
  async onClosed(p: Payload): Promise<void> {
    const repo = String(p.repository.full_name);
    const number = Number(p.pull_request.number);
    const why = p.pull_request.merged ? "merged" : "closed";
    const owner = await this.ownerOf(repo, number);
    if (!owner || owner.ended) return;
    const key = threadKey({ platform: "github", workspace: repo, channel: String(number) });
    if (!(await this.deps.store.endThread(owner.runId, key, why))) return;
    this.deps.log.info({ runId: owner.runId, repo, number, why }, "a run's pull request ended");
    const run = await this.deps.runs.get(owner.runId).catch(() => undefined);
    const pr = run?.artifacts?.findLast(
      (a) => a.artifact_type === "PULL_REQUEST" && Number(a.data?.number) === number,
    ) as Artifact | undefined;
    // The same artifact, in place (recordArtifact replaces a pull request by its url): every card re-renders.
    if (pr) {
      // As recorded, not as the API shows it (its `status` is derived from `state`).
      const { status: _shown, ...data } = pr.data;
      await this.deps.store.recordArtifact(owner.runId, { ...pr, data: { ...data, state: why } });
    }
  }

  /** The run bound to the pull request last (its thread may have ended). */
  private ownerOf(repo: string, number: number): Promise<ThreadBinding | undefined> {
    return this.deps.store.findLatestBinding({
      platform: "github",
      workspace: repo,
      channel: String(number),
      thread: null,
    });
  }

  /** Why `login` may not steer runs of the repository, in words for them; undefined when they may. */
  private async mayNotSteer(repo: string, login: string): Promise<string | undefined> {
    const { audience } = this.deps;
    const membership = await audience.includes(githubPrincipalId(login), audience.place({ workspace: repo }));
    if (membership.kind === "member") return undefined;
    if (membership.kind === "unknown") {
      return "I could not check your permission on this repository just now; please try again.";
    }
    return `Steering Dispatch's runs here needs ${this.deps.minPermission} access to ${repo}.`;
  }

  /** The review's inline comments as "path:line: text" lines (GitHub's order). */
  private async inlineComments(repo: string, number: number, reviewId: number): Promise<string[]> {
    const [owner, name] = splitRepo(repo);
    try {
      const octokit = await this.deps.clients.forRepo(repo);
      const { data } = await octokit.rest.pulls.listCommentsForReview({
        owner,
        repo: name,
        pull_number: number,
        review_id: reviewId,
        per_page: MAX_REVIEW_COMMENTS,
      });
      return data.map((c) => {
        const line = (c as { line?: number | null }).line ?? c.original_line;
        return `- ${c.path}${line ? `:${line}` : ""}: ${c.body.replace(/\s*\n\s*/g, " ").trim()}`;
      });
    } catch (err) {
      // The review's body still goes to the run; its inline comments are on the pull request to read.
      this.deps.log.warn({ err, repo, number, reviewId }, "could not read a review's inline comments");
      return ["(the inline comments could not be read from GitHub: see the review on the pull request)"];
    }
  }
}

function endedWords(number: number, owner: ThreadBinding): string {
  return `Pull request #${number} was ${owner.ended}: run \`${owner.runId}\` no longer takes follow-ups from it.`;
}

function fenced(code: string): string {
  const longest = Math.max(2, ...(code.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  return `${fence}diff\n${code}\n${fence}`;
}
