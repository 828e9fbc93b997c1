import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { GitHubWebhookConfig } from "../../config.ts";
import type { GitHubSettings } from "../../config-file.ts";
import type { Creator } from "../../model/run.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { InboundDelivery, Store } from "../../store/store.ts";
import { budgetRequestOf } from "../budget-answer-words.ts";
import { type Command, GrammarError, parseCommand, selectsAgent, TRACKER_VERBS } from "../grammar.ts";
import { InboxQueue, type InboxStore } from "../inbox-queue.ts";
import { CiAutofix } from "./ci-autofix.ts";
import { CollaboratorPermissions } from "./collaborator-permissions.ts";
import { CommentImages } from "./comment-images.ts";
import type { CommentPayload } from "./comment-payload.ts";
import { GitHubAudience, githubPrincipalId } from "./github-audience.ts";
import type { GitHubClients } from "./github-clients.ts";
import { idempotencyKey } from "./idempotency-key.ts";
import { IssueStarts } from "./issue-starts.ts";
import { IssueThread } from "./issue-thread.ts";
import { commandText } from "./mention.ts";
import { noticeText } from "./messages.ts";
import { PullRequestEvents } from "./pull-request-events.ts";
import { Verbs } from "./verbs.ts";
import { type GitHubWebLogin, loginRefusalText, loginReply } from "./web-login.ts";
import type { Payload } from "./webhook-events.ts";
import { WebhookRoute } from "./webhook-route.ts";

/** Deliveries handled at once (each is a few store writes and at most one GitHub call). */
const WORK_CONCURRENCY = 4;

export type GitHubStore = Pick<
  Store,
  | "claimInbound"
  | "bindThread"
  | "findLatestBinding"
  | "listThreadBindings"
  | "enqueueOutbox"
  | "markThreadAsked"
  | "endThread"
  | "recordArtifact"
> &
  InboxStore;

export interface GitHubIntegrationDeps {
  config: GitHubWebhookConfig;
  settings: GitHubSettings;
  runs: RunsApi;
  store: GitHubStore;
  clients: GitHubClients;
  /** The lease on a delivery being handled, and how often the inbox is polled for ones nobody holds. */
  inbox: { leaseMs: number; pollMs: number };
  /** Each part logs under its own `component` (github-webhook, github-verbs, …). */
  log: Logger;
  /** GITHUB_SERVER_URL: its host's attachment links are GitHub's own, as github.com's are. */
  serverUrl?: string;
  /** Approves web sign-ins (`login <code>`); absent where this Dispatch serves no web app (remote mode). */
  webLogin?: GitHubWebLogin;
}

/**
 * The GitHub side of Dispatch (docs/surfaces.md): comments that mention the bot start, steer, cancel and
 * report runs; on a pull request a run opened, review comments, reviews asking for changes and red CI steer
 * that run (pull-request-events.ts, ci-autofix.ts); a label or an assignment starts one (issue-starts.ts).
 * The webhook route stores triggers in the inbox and acknowledges them; the inbox queue hands each to this
 * class. The notifier reports progress afterwards.
 */
export class GitHubIntegration {
  private readonly deps: GitHubIntegrationDeps;
  private readonly route: WebhookRoute;
  private readonly queue: InboxQueue;
  private readonly permissions: CollaboratorPermissions;
  /** Who is in the audience of this integration's threads: the repository's collaborators at min_permission. */
  readonly audience: GitHubAudience;
  private readonly verbs: Verbs;
  private readonly images: CommentImages;
  private readonly pullRequests: PullRequestEvents;
  private readonly autofix: CiAutofix;
  private readonly issueStarts: IssueStarts;

  constructor(deps: GitHubIntegrationDeps) {
    this.deps = deps;
    const { config, settings, log } = deps;
    this.queue = new InboxQueue({
      source: "github",
      store: deps.store,
      handle: (delivery) => this.onDelivery(delivery),
      leaseMs: deps.inbox.leaseMs,
      pollMs: deps.inbox.pollMs,
      concurrency: WORK_CONCURRENCY,
      log: log.child({ component: "github-work-queue" }),
    });
    this.permissions = new CollaboratorPermissions({
      clients: deps.clients,
      minimum: settings.min_permission,
      cacheSeconds: settings.permission_cache_seconds,
      log: log.child({ component: "github-permissions" }),
    });
    this.audience = new GitHubAudience(this.permissions);
    this.verbs = new Verbs({
      botHandle: config.botHandle,
      minPermission: settings.min_permission,
      runs: deps.runs,
      clients: deps.clients,
      store: deps.store,
      log: log.child({ component: "github-verbs" }),
      repositoryAgent: repositoryAgents(settings),
    });
    this.pullRequests = new PullRequestEvents({
      botHandle: config.botHandle,
      minPermission: settings.min_permission,
      store: deps.store,
      runs: deps.runs,
      clients: deps.clients,
      audience: this.audience,
      verbs: this.verbs,
      log: log.child({ component: "github-pull-requests" }),
    });
    this.autofix = new CiAutofix({
      botHandle: config.botHandle,
      settings,
      store: deps.store,
      runs: deps.runs,
      clients: deps.clients,
      log: log.child({ component: "github-autofix" }),
    });
    this.issueStarts = new IssueStarts({
      store: deps.store,
      runs: deps.runs,
      audience: this.audience,
      verbs: this.verbs,
      log: log.child({ component: "github-issues" }),
    });
    this.images = new CommentImages({
      clients: deps.clients,
      apiUrl: config.apiUrl,
      ...(deps.serverUrl ? { serverUrl: deps.serverUrl } : {}),
      log: log.child({ component: "github-images" }),
    });
    this.route = new WebhookRoute({
      config,
      label: settings.label,
      store: deps.store,
      queue: this.queue,
      log: log.child({ component: "github-webhook" }),
    });
  }

  /** Mounts POST /github/webhooks. Call before the server listens. */
  register(server: FastifyInstance): void {
    this.route.register(server);
  }

  /** Starts handling stored deliveries, those an earlier process acknowledged but did not handle first. */
  start(): void {
    this.queue.start();
  }

  /** Lets work that started after an acknowledgement finish; the rest stays in the inbox. */
  stop(): Promise<void> {
    return this.queue.stop();
  }

  /** Resolves once every delivery acknowledged so far has been handled (tests, benchmarks). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  private async onDelivery(delivery: InboundDelivery): Promise<void> {
    const p = JSON.parse(delivery.payload) as Payload;
    this.deps.clients.rememberInstallation(p.repository.full_name, p.installation?.id);
    switch (delivery.kind) {
      case "issue_comment":
        return this.onComment(delivery.deliveryId, p as CommentPayload);
      case "pull_request_review_comment":
        return this.pullRequests.onReviewComment(delivery.deliveryId, p);
      case "pull_request_review":
        return this.pullRequests.onReview(delivery.deliveryId, p);
      case "pull_request":
        return this.pullRequests.onClosed(p);
      case "check_suite":
      case "workflow_run":
        return this.autofix.onFailure(delivery.kind, p);
      case "issues":
        return this.issueStarts.onIssue(delivery.deliveryId, p);
    }
  }

  /** A comment that mentions the bot, acknowledged and deduped by the route. */
  private async onComment(delivery: string, p: CommentPayload): Promise<void> {
    const { config, store } = this.deps;
    const repo = p.repository.full_name;
    const login = p.comment.user!.login;
    const issue = new IssueThread(store, repo, p.issue.number, delivery);
    // Received.
    await issue.react(p.comment.id, "eyes");

    const text = commandText(p.comment.body, config.botHandle);
    const verb = (text.split(/\s+/)[0] ?? "").toLowerCase();
    // Whoever is in the repository's audience (collaborators at min_permission) may start and steer its
    // runs: the same answer the web app and the API get from RunAccess for this person.
    const membership = await this.audience.includes(
      githubPrincipalId(login),
      this.audience.place({ workspace: repo }),
    );
    if (membership.kind === "unknown") {
      return this.verbs.notice(
        issue,
        login,
        "I could not check your permission on this repository just now; please try again.",
      );
    }
    if (membership.kind === "not_member") {
      // Signing in is refused in its own words: whoever may not start runs here may not sign in from here.
      if (verb === "login") {
        return issue.reply("login", loginRefusalText(login, repo, this.deps.settings.min_permission));
      }
      return this.verbs.refuse(issue, login);
    }

    const creator: Creator = { type: "user", uid: githubPrincipalId(login), display_name: login };
    const binding = await store.findLatestBinding({
      platform: "github",
      workspace: repo,
      channel: String(p.issue.number),
      thread: null,
    });
    const key = (purpose: string) => idempotencyKey(purpose, repo, p.comment.id);
    // A follow-up takes the comment's images; a new run the issue body's too (its context).
    const followupImages = () => this.images.collect(repo, [p.comment.body]);
    const runImages = () => this.images.collect(repo, [p.comment.body, p.issue.body]);

    const followup = async (runId: string) => {
      if (binding?.ended)
        return this.verbs.notice(
          issue,
          login,
          endedText(p.issue.number, binding.ended, runId, config.botHandle),
        );
      await this.verbs.followup(issue, login, runId, text, key("followup"), followupImages);
    };
    // On an issue that has a run, anything that is not a verb (or `/codex …`, a new run) is a follow-up.
    if (binding && !TRACKER_VERBS.has(verb) && !selectsAgent(verb)) return followup(binding.runId);
    let command: Command;
    try {
      command = parseCommand(text, "github");
    } catch (err) {
      if (err instanceof GrammarError) return this.verbs.notice(issue, login, err.message);
      throw err;
    }
    switch (command.verb) {
      case "help":
      case "followup":
        return this.verbs.help(issue);
      case "list":
      case "status": {
        const runId = command.verb === "status" && command.runId ? command.runId : binding?.runId;
        if (!runId) return this.verbs.notice(issue, login, "No Dispatch run was started here yet.");
        return this.verbs.status(issue, login, runId);
      }
      case "cancel": {
        const runId = command.runId ?? binding?.runId;
        if (!runId) return this.verbs.notice(issue, login, "No Dispatch run was started here yet.");
        return this.verbs.cancel(issue, login, creator, runId, key("cancel"));
      }
      case "approve":
      case "revise": {
        const runId = command.runId ?? binding?.runId;
        if (!runId) return this.verbs.notice(issue, login, "No Dispatch run was started here yet.");
        const answer =
          command.verb === "revise"
            ? { action: "revise" as const, message: command.changes }
            : { action: "approve" as const, ...(command.note ? { message: command.note } : {}) };
        return this.verbs.answerPlan(issue, login, runId, answer, key(command.verb));
      }
      case "extend":
      case "stop": {
        const runId = command.runId ?? binding?.runId;
        if (!runId) return this.verbs.notice(issue, login, "No Dispatch run was started here yet.");
        const request = budgetRequestOf(command);
        return this.verbs.answerBudget(issue, login, creator, runId, request, key(command.verb));
      }
      case "login":
        // Never the code nor a link that signs in: this comment is public.
        return issue.reply(
          "login",
          noticeText(login, await loginReply(this.deps.webLogin, login, command.code)),
        );
      case "run":
        if (binding && !command.forceNew) return followup(binding.runId);
        return this.verbs.start(
          issue,
          {
            issue: { ...p.issue, isPullRequest: Boolean(p.issue.pull_request) },
            requester: login,
            triggerUrl: p.comment.html_url,
            triggerRef: String(p.comment.id),
          },
          creator,
          command,
          key("create"),
          runImages,
        );
    }
  }
}

/** Why a comment on a pull request whose run is done with it steers nothing, and what to do instead. */
export function endedText(number: number, why: string, runId: string, handle: string): string {
  return `Pull request #${number} was ${why}: run \`${runId}\` no longer takes follow-ups from it. \`@${handle} new <task>\` starts a new run.`;
}

/** Each repository's default agent from the settings, looked up without regard to case (as GitHub names match). */
function repositoryAgents(settings: GitHubSettings): (repo: string) => string | undefined {
  const agents = new Map(
    Object.entries(settings.repositories).map(([repo, s]) => [repo.toLowerCase(), s.agent] as const),
  );
  return (repo) => agents.get(repo.toLowerCase());
}
