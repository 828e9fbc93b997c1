import type { Logger } from "pino";
import type { Creator } from "../../model/run.ts";
import { stateWords } from "../../model/run-wording.ts";
import type { AttachmentInput } from "../../runs/attachments.ts";
import type { BudgetRequest } from "../../runs/budget-answer.ts";
import type { PlanAnswer } from "../../runs/plan-approval.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { Store } from "../../store/store.ts";
import type { CollectedImages } from "../attachments/collect-images.ts";
import { budgetRefusedText, notWaitingForBudgetText } from "../budget-answer-words.ts";
import { type Command, createBody } from "../grammar.ts";
import { describeError, refusedAgent, runErrorCode } from "../run-errors.ts";
import { type GitHubClients, splitRepo } from "./github-clients.ts";
import type { IssueThread } from "./issue-thread.ts";
import { helpText, noticeText, promptWithContext, refusalText, statusComment, titleFor } from "./messages.ts";

/**
 * The images of the comment (and of the issue's body, for a new run), downloaded when called: only once
 * the commenter's permission was checked, right before the run is created or the follow-up sent.
 */
export type SharedImages = () => Promise<CollectedImages>;

export interface VerbsDeps {
  /** The @mention people write, as help spells it. */
  botHandle: string;
  /** The least repository role that may start or steer runs, as the refusal names it. */
  minPermission: string;
  runs: RunsApi;
  /** Reads the pull request a comment was made on (its base and head), for where the run delivers. */
  clients: Pick<GitHubClients, "forRepo">;
  store: Pick<Store, "bindThread" | "listThreadBindings" | "claimInbound" | "markThreadAsked">;
  log: Logger;
  /** The repository's default agent (settings `github.repositories.<owner/repo>.agent`), if it has one. */
  repositoryAgent?: (repo: string) => string | undefined;
}

/** What a run started on an issue or pull request is asked from: a comment, a label, an assignment. */
export interface StartRequest {
  issue: { number: number; title: string; body?: string | null; html_url: string; isPullRequest: boolean };
  /** The GitHub login the run is for (the final comment mentions them). */
  requester: string;
  /** The comment (or the issue) that asked. */
  triggerUrl: string;
  /** The comment that asked, for the outcome reaction; null when no comment did (a label). */
  triggerRef: string | null;
}

/** The delivery fields of a run's config: repository, and a pull request's base and head branch. */
interface DeliveryConfig {
  repository: string;
  base_branch?: string;
  branch?: string;
}

/**
 * What each command in a comment does: acts through RunsApi and answers on the issue. Progress is the
 * notifier's (the tracking comment); these answer only what the tracking comment cannot show.
 */
export class Verbs {
  private readonly deps: VerbsDeps;
  private readonly log: Logger;

  constructor(deps: VerbsDeps) {
    this.deps = deps;
    this.log = deps.log;
  }

  help(issue: IssueThread): Promise<void> {
    return issue.reply("help", helpText(this.deps.botHandle));
  }

  notice(issue: IssueThread, login: string, text: string): Promise<void> {
    return issue.reply("notice", noticeText(login, text));
  }

  /** One short reply per user per issue, remembered in the inbox; further mentions get only 👀. */
  async refuse(issue: IssueThread, login: string): Promise<void> {
    const first = await this.deps.store.claimInbound(
      `github:refusal:${issue.repo}#${issue.number}:${login.toLowerCase()}`,
      "github",
    );
    if (first) await issue.reply("refusal", refusalText(login, issue.repo, this.deps.minPermission));
  }

  async start(
    issue: IssueThread,
    request: StartRequest,
    creator: Creator,
    command: Command & { verb: "run" },
    idempotencyKey: string,
    images?: SharedImages,
  ): Promise<void> {
    const login = request.requester;
    const context = {
      repo: issue.repo,
      number: request.issue.number,
      title: request.issue.title,
      body: request.issue.body,
      url: request.issue.html_url,
      isPullRequest: request.issue.isPullRequest,
      requester: login,
      commentUrl: request.triggerUrl,
    };
    // `/codex`, `--agent` or `harness=` in the comment beat the repository's default agent.
    const fallbackAgent = command.options.harness ? undefined : this.deps.repositoryAgent?.(issue.repo);
    const options = {
      title: titleFor(context),
      ...(fallbackAgent ? { harness: fallbackAgent } : {}),
      ...command.options,
    };
    let delivery: DeliveryConfig;
    try {
      delivery = await this.deliveryConfig(issue.repo, request.issue);
    } catch (err) {
      const status = (err as { status?: unknown }).status;
      this.log.warn({ err, repo: issue.repo, pull: request.issue.number }, "could not read a pull request");
      return this.notice(
        issue,
        login,
        `Could not start the run: pull request #${request.issue.number} could not be read from GitHub${typeof status === "number" ? ` (HTTP ${status})` : ""}; try again in a moment.`,
      );
    }
    const attachments = await this.attachmentsOf(issue, login, images);
    let created: { run_id: string };
    try {
      const body = createBody(promptWithContext(command.prompt, context), options, undefined, command.mode);
      created = await this.deps.runs.create(
        {
          ...body,
          config: { ...body.config, ...delivery },
          creator,
          source: "GITHUB_WEBHOOK",
          trigger_url: request.triggerUrl,
          ...(attachments.length ? { attachments } : {}),
        },
        { idempotencyKey },
      );
    } catch (err) {
      this.log.debug({ err, repo: issue.repo, issue: issue.number }, "could not start a run from GitHub");
      // A default the server refuses is the repository's setting, not what was written: say where it came from.
      const hint =
        fallbackAgent && refusedAgent(err)
          ? ` (${fallbackAgent} is this repository's default agent, github.repositories.${issue.repo}.agent in Dispatch's settings; \`@${this.deps.botHandle} /<agent> …\` chooses another)`
          : "";
      return this.notice(issue, login, `Could not start the run: ${describeError(err)}${hint}`);
    }
    await this.deps.store.bindThread({
      runId: created.run_id,
      platform: "github",
      workspace: issue.repo,
      channel: String(issue.number),
      thread: null,
      triggerRef: request.triggerRef,
      requester: login,
      createdAt: new Date().toISOString(),
    });
    this.log.info(
      { runId: created.run_id, repo: issue.repo, issue: issue.number },
      "run started from GitHub",
    );
  }

  /**
   * Where a run started here delivers (docs/delivery.md): the triggering repository. On an issue, from its
   * default branch (resolved by the executor). On a pull request, from the PR's base; when its head
   * branch is in this repository (and the PR is open) the work goes onto that branch, so the commits
   * land on the PR; a fork's PR gets a new dispatch/ branch and a PR of its own.
   */
  private async deliveryConfig(repo: string, issue: StartRequest["issue"]): Promise<DeliveryConfig> {
    if (!issue.isPullRequest) return { repository: repo };
    const [owner, name] = splitRepo(repo);
    const octokit = await this.deps.clients.forRepo(repo);
    const { data: pr } = await octokit.rest.pulls.get({ owner, repo: name, pull_number: issue.number });
    const sameRepository =
      pr.state === "open" && pr.head.repo?.full_name?.toLowerCase() === repo.toLowerCase();
    return {
      repository: repo,
      base_branch: pr.base.ref,
      ...(sameRepository && pr.head.ref !== pr.base.ref ? { branch: pr.head.ref } : {}),
    };
  }

  /** Sends a follow-up asked on `issue` (a thread of the run); true when the run took it. */
  async followup(
    issue: IssueThread,
    login: string,
    runId: string,
    message: string,
    idempotencyKey: string,
    images?: SharedImages,
  ): Promise<boolean> {
    if (message.trim() === "") {
      await this.notice(issue, login, "The follow-up is empty: say what the agent should do.");
      return false;
    }
    const attachments = await this.attachmentsOf(issue, login, images);
    try {
      // The tracking comment shows the run at work again; 👀 already acknowledged the comment.
      await this.deps.runs.followup(runId, message.trim(), {
        idempotencyKey,
        ...(attachments.length ? { attachments } : {}),
      });
    } catch (err) {
      this.log.debug({ err, runId }, "could not send a follow-up from GitHub");
      await this.notice(issue, login, `Could not send the follow-up: ${describeError(err)}`);
      return false;
    }
    // The reply at the end of this execution comes here too (docs/surfaces.md, one run, many threads).
    await this.deps.store.markThreadAsked(runId, issue.threadKey, new Date().toISOString());
    return true;
  }

  /**
   * `approve [note]` / `revise <changes>`: answers the plan the run waits on (docs/surfaces.md, "Waiting for
   * you"), a follow-up asked from this issue like any other.
   */
  async answerPlan(
    issue: IssueThread,
    login: string,
    runId: string,
    answer: PlanAnswer,
    idempotencyKey: string,
  ): Promise<void> {
    if (!(await this.inRepo(issue.repo, runId))) return this.notFound(issue, login, runId);
    try {
      // The tracking comment shows the run at work again; 👀 already acknowledged the comment.
      await this.deps.runs.approve(runId, answer, { idempotencyKey });
    } catch (err) {
      if (runErrorCode(err) === "conflict") {
        const run = await this.deps.runs.get(runId).catch(() => undefined);
        const state = run ? stateWords(run).toLowerCase() : "not waiting";
        return this.notice(
          issue,
          login,
          `Run \`${runId}\` has no plan waiting for approval (it is ${state}); mention me without \`${answer.action}\` to send it a follow-up.`,
        );
      }
      this.log.debug({ err, runId }, "could not answer a plan from GitHub");
      return this.notice(issue, login, `Could not answer the plan: ${describeError(err)}`);
    }
    await this.deps.store.markThreadAsked(runId, issue.threadKey, new Date().toISOString());
  }

  /**
   * `extend $X` / `stop`: answers the budget the run waits for (docs/surfaces.md, "Waiting for you") as the
   * commenter, whose own monthly budgets then apply; beyond them an admin must extend it.
   */
  async answerBudget(
    issue: IssueThread,
    login: string,
    creator: Creator,
    runId: string,
    request: BudgetRequest,
    idempotencyKey: string,
  ): Promise<void> {
    if (!(await this.inRepo(issue.repo, runId))) return this.notFound(issue, login, runId);
    try {
      await this.deps.runs.budget(runId, request, { by: creator, idempotencyKey });
    } catch (err) {
      const code = runErrorCode(err);
      if (code === "conflict") {
        const run = await this.deps.runs.get(runId).catch(() => undefined);
        const state = run ? stateWords(run).toLowerCase() : "not waiting";
        return this.notice(issue, login, notWaitingForBudgetText(runId, state));
      }
      if (code === "not_authorized") return this.notice(issue, login, budgetRefusedText(describeError(err)));
      this.log.debug({ err, runId }, "could not answer a budget from GitHub");
      return this.notice(issue, login, `Could not answer the budget: ${describeError(err)}`);
    }
    // The tracking comment shows the run at work again (or delivering) once the notifier sees it.
    await this.deps.store.markThreadAsked(runId, issue.threadKey, new Date().toISOString());
  }

  async cancel(
    issue: IssueThread,
    login: string,
    creator: Creator,
    runId: string,
    idempotencyKey: string,
  ): Promise<void> {
    if (!(await this.inRepo(issue.repo, runId))) return this.notFound(issue, login, runId);
    try {
      await this.deps.runs.cancel(runId, { by: creator, idempotencyKey });
      // The tracking comment says "Cancelled by …" once the notifier sees the change.
    } catch (err) {
      if (runErrorCode(err) === "invalid_request") {
        const run = await this.deps.runs.get(runId).catch(() => undefined);
        const state = run ? stateWords(run).toLowerCase() : "finished";
        return this.notice(issue, login, `That run has already finished (${state}).`);
      }
      this.log.debug({ err, runId }, "could not cancel a run from GitHub");
      await this.notice(issue, login, `Could not cancel the run: ${describeError(err)}`);
    }
  }

  async status(issue: IssueThread, login: string, runId: string): Promise<void> {
    if (!(await this.inRepo(issue.repo, runId))) return this.notFound(issue, login, runId);
    try {
      await issue.reply("status", statusComment(await this.deps.runs.get(runId)));
    } catch (err) {
      this.log.debug({ err, runId }, "could not read a run for GitHub");
      await this.notice(issue, login, `Could not read the run: ${describeError(err)}`);
    }
  }

  /**
   * Downloads the images and says, in one reply on the issue, which were not attached and why (never
   * silently). A redelivered webhook enqueues the same reply, which the outbox drops.
   */
  private async attachmentsOf(
    issue: IssueThread,
    login: string,
    images: SharedImages | undefined,
  ): Promise<AttachmentInput[]> {
    if (!images) return [];
    const { attachments, notes } = await images();
    if (notes.length > 0) {
      await issue.reply(
        "attachments",
        noticeText(login, `Some images were not attached:\n${notes.map((n) => `- ${n}`).join("\n")}`),
      );
    }
    return attachments;
  }

  private notFound(issue: IssueThread, login: string, runId: string): Promise<void> {
    return this.notice(issue, login, `No run \`${runId}\` was started from ${issue.repo}.`);
  }

  /** GitHub users reach only runs with a thread (an issue, a pull request) in the same repository. */
  private async inRepo(repo: string, runId: string): Promise<boolean> {
    const threads = await this.deps.store.listThreadBindings(runId);
    return threads.some((b) => b.platform === "github" && b.workspace.toLowerCase() === repo.toLowerCase());
  }
}
