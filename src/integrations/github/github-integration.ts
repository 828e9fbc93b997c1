import { createHash } from "node:crypto";
import { Webhooks } from "@octokit/webhooks";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import type { GitHubConfig } from "../../config.ts";
import type { GitHubSettings } from "../../config-file.ts";
import { RunError } from "../../model/errors.ts";
import type { Creator } from "../../model/run.ts";
import { stateWords } from "../../model/run-wording.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { OutboxMessage, Store } from "../../store/store.ts";
import { type Command, createBody, GrammarError, parseCommand } from "../grammar.ts";
import { describeError, runErrorCode } from "../run-errors.ts";
import { type GitHubClients, permissionRank, splitRepo } from "./client.ts";
import { commandText, mentionsHandle } from "./mention.ts";
import { helpText, noticeText, promptWithContext, refusalText, statusComment, titleFor } from "./messages.ts";
import { DISPATCH_MARKER_PREFIX, githubTarget } from "./tracking-comment.ts";

export const GITHUB_WEBHOOK_PATH = "/github/webhooks";

const VERBS = new Set(["cancel", "status", "help", "list", "new"]);
const PERMISSION_CACHE_MAX = 5_000;
/** Deliveries handled at once (each is a few store writes and at most one GitHub call). */
const WORK_CONCURRENCY = 4;

export type GitHubStore = Pick<
  Store,
  "claimInbound" | "bindThread" | "findLatestBinding" | "getThreadBinding" | "enqueueOutbox"
>;

export interface GitHubAppDeps {
  config: GitHubConfig;
  settings: GitHubSettings;
  runs: RunsApi;
  store: GitHubStore;
  clients: GitHubClients;
  log: Logger;
}

/** The fields of an `issue_comment` payload Dispatch reads (@octokit/webhooks-types has them all). */
interface CommentPayload {
  action: string;
  issue: { number: number; title: string; body?: string | null; html_url: string; pull_request?: unknown };
  comment: {
    id: number;
    body: string;
    html_url: string;
    user: { login: string; type?: string } | null;
    performed_via_github_app?: { id?: number; slug?: string } | null;
  };
  repository: { full_name: string };
  sender: { login: string; type?: string };
  installation?: { id: number };
}

/**
 * The GitHub side of Dispatch: `issue_comment` webhooks that mention the bot start, steer, cancel and
 * report runs (INTEGRATIONS.md). The route verifies the signature on the raw bytes, drops what is not a
 * trigger, dedupes (delivery id and (repo, comment id), persisted), answers 202 and then does the work:
 * 👀 reaction, permission check, RunsApi call, thread binding. The notifier reports progress afterwards.
 */
export class GitHubIntegration {
  readonly webhooks: Webhooks;
  private readonly deps: GitHubAppDeps;
  private readonly log: Logger;
  private readonly permissions = new Map<string, { level: Promise<string>; at: number }>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly waiting: Array<() => Promise<void>> = [];
  private active = 0;

  constructor(deps: GitHubAppDeps) {
    this.deps = deps;
    this.log = deps.log;
    this.webhooks = new Webhooks({ secret: deps.config.webhookSecret });
    this.webhooks.on("issue_comment.created", ({ id, payload }) =>
      this.onComment(id, payload as unknown as CommentPayload),
    );
  }

  /** Mounts POST /github/webhooks. Call before the server listens. */
  register(server: FastifyInstance): void {
    server.register(async (scope) => {
      // Encapsulated: the raw bytes are kept for this route only (the signature covers them exactly).
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser(
        ["application/json", "application/x-www-form-urlencoded"],
        { parseAs: "buffer", bodyLimit: 26 * 1024 * 1024 },
        (_req, body, done) => done(null, body),
      );
      scope.post(
        GITHUB_WEBHOOK_PATH,
        {
          onRequest: async (req) => {
            if (!header(req, "x-hub-signature-256")) {
              throw new RunError("authentication_required", "GitHub webhook: missing X-Hub-Signature-256");
            }
          },
        },
        (req, reply) => this.handle(req, reply),
      );
    });
  }

  /** Lets work that started after an acknowledgement finish. */
  async stop(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Resolves once every delivery acknowledged so far has been handled (tests, benchmarks). */
  idle(): Promise<void> {
    return this.stop();
  }

  private async handle(req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const raw = Buffer.isBuffer(req.body) ? req.body.toString("utf8") : "";
    const signature = header(req, "x-hub-signature-256") ?? "";
    let valid = false;
    try {
      valid = await this.webhooks.verify(raw, signature);
    } catch {
      valid = false;
    }
    if (!valid) throw new RunError("authentication_required", "GitHub webhook: signature mismatch");

    const event = header(req, "x-github-event");
    const delivery = header(req, "x-github-delivery");
    if (!event || !delivery) {
      throw new RunError("invalid_request", "GitHub webhook: missing X-GitHub-Event or X-GitHub-Delivery");
    }
    const payload = parsePayload(header(req, "content-type") ?? "", raw);
    if (!payload) throw new RunError("invalid_request", "GitHub webhook: the body is not a JSON payload");
    if (event === "ping") return reply.code(200).send({ ok: true });

    const ignored =
      event === "issue_comment" ? this.whyIgnored(payload as unknown as CommentPayload) : "not issue_comment";
    if (ignored) return reply.code(202).send({ ok: true, ignored });

    const p = payload as unknown as CommentPayload;
    if (!(await this.claim(delivery, p))) {
      req.log.debug({ delivery }, "duplicate GitHub delivery acknowledged");
      return reply.code(200).send({ ok: true, duplicate: true });
    }
    this.enqueueWork(() => this.webhooks.receive({ id: delivery, name: "issue_comment", payload } as never));
    return reply.code(202).send({ ok: true });
  }

  /** Why a comment is not a trigger (undefined: it is one). Pure and cheap: runs before any write. */
  private whyIgnored(p: CommentPayload): string | undefined {
    if (p.action !== "created") return `action ${p.action}`;
    const { botHandle, appId } = this.deps.config;
    const author = p.comment?.user;
    if (!author || !p.repository?.full_name || !p.issue) return "incomplete payload";
    // The bot must never trigger itself: bots, our own account (App "<slug>[bot]" or a token's user),
    // anything posted through this App, and anything carrying our marker.
    if (p.sender?.type === "Bot" || author.type === "Bot") return "bot";
    const login = author.login.toLowerCase();
    const handle = botHandle.toLowerCase();
    if (login === handle || login === `${handle}[bot]`) return "self";
    if (appId && String(p.comment.performed_via_github_app?.id ?? "") === appId) return "self";
    const body = p.comment.body ?? "";
    if (body.includes(DISPATCH_MARKER_PREFIX)) return "self";
    if (!mentionsHandle(body, botHandle)) return "no mention";
    return undefined;
  }

  /**
   * Dedupe on the delivery id (redeliveries reuse it) and on (repo, comment id). If the store cannot
   * record them, the delivery is processed anyway: the RunsApi calls carry idempotency keys.
   */
  private async claim(delivery: string, p: CommentPayload): Promise<boolean> {
    try {
      const claimed = await Promise.all([
        this.deps.store.claimInbound(`github:delivery:${delivery}`, "github"),
        this.deps.store.claimInbound(`github:comment:${p.repository.full_name}:${p.comment.id}`, "github"),
      ]);
      return claimed.every(Boolean);
    } catch (err) {
      this.log.warn({ err }, "could not record a GitHub delivery for dedupe; processing it");
      return true;
    }
  }

  /**
   * Acknowledged deliveries are handled a few at a time, after the current acknowledgements: a burst of
   * webhooks is answered first (GitHub's 10 s deadline, our < 50 ms target) and then worked through,
   * without a burst of permission calls at GitHub.
   */
  private enqueueWork(work: () => Promise<unknown>): void {
    let release!: () => void;
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.inFlight.add(done);
    this.waiting.push(async () => {
      try {
        await work();
      } catch (err) {
        this.log.error({ err }, "GitHub webhook handling failed");
      } finally {
        this.inFlight.delete(done);
        release();
      }
    });
    setImmediate(() => this.drain());
  }

  private drain(): void {
    while (this.active < WORK_CONCURRENCY && this.waiting.length > 0) {
      const next = this.waiting.shift()!;
      this.active += 1;
      void next().finally(() => {
        this.active -= 1;
        this.drain();
      });
    }
  }

  // --- a comment that mentions the bot ---------------------------------------------------------------

  private async onComment(delivery: string, p: CommentPayload): Promise<void> {
    const { config, settings, store } = this.deps;
    const repo = p.repository.full_name;
    const login = p.comment.user!.login;
    const issue = new IssueThread(store, repo, p.issue.number, delivery);
    this.deps.clients.rememberInstallation(repo, p.installation?.id);
    // Received.
    await issue.react(p.comment.id, "eyes");

    const level = await this.permissionOf(repo, login).catch((err: unknown) => {
      this.log.warn({ err, repo, login }, "GitHub permission check failed");
      return undefined;
    });
    if (level === undefined) {
      return issue.reply(
        "notice",
        noticeText(login, "I could not check your permission on this repository just now; please try again."),
      );
    }
    if (permissionRank(level) < permissionRank(settings.min_permission)) {
      // One short reply per user per issue, remembered in the inbox; further mentions get only 👀.
      const first = await store.claimInbound(
        `github:refusal:${repo}#${p.issue.number}:${login.toLowerCase()}`,
        "github",
      );
      if (first) await issue.reply("refusal", refusalText(login, repo, settings.min_permission));
      return;
    }

    const creator: Creator = { type: "user", uid: `github:${login}`, display_name: login };
    const text = commandText(p.comment.body, config.botHandle);
    const binding = await store.findLatestBinding({
      platform: "github",
      workspace: repo,
      channel: String(p.issue.number),
      thread: null,
    });
    const verb = (text.split(/\s+/)[0] ?? "").toLowerCase();
    const key = (purpose: string) => idempotencyKey(purpose, repo, p.comment.id);

    // On an issue that has a run, anything that is not a verb is a follow-up to its latest run.
    if (binding && !VERBS.has(verb)) return this.followup(issue, login, binding.runId, text, key("followup"));
    let command: Command;
    try {
      command = parseCommand(text, "github");
    } catch (err) {
      if (err instanceof GrammarError) return issue.reply("notice", noticeText(login, err.message));
      throw err;
    }
    switch (command.verb) {
      case "help":
      case "followup":
        return issue.reply("help", helpText(config.botHandle));
      case "list":
      case "status": {
        const runId = command.verb === "status" && command.runId ? command.runId : binding?.runId;
        if (!runId) return issue.reply("notice", noticeText(login, "No Dispatch run was started here yet."));
        return this.status(issue, login, runId);
      }
      case "cancel": {
        const runId = command.runId ?? binding?.runId;
        if (!runId) return issue.reply("notice", noticeText(login, "No Dispatch run was started here yet."));
        return this.cancel(issue, login, creator, runId, key("cancel"));
      }
      case "run":
        if (binding && !command.forceNew) {
          return this.followup(issue, login, binding.runId, text, key("followup"));
        }
        return this.startRun(issue, p, creator, command, key("create"));
    }
  }

  private async startRun(
    issue: IssueThread,
    p: CommentPayload,
    creator: Creator,
    command: Command & { verb: "run" },
    idempotencyKey: string,
  ): Promise<void> {
    const login = p.comment.user!.login;
    const context = {
      repo: issue.repo,
      number: p.issue.number,
      title: p.issue.title,
      body: p.issue.body,
      url: p.issue.html_url,
      isPullRequest: Boolean(p.issue.pull_request),
      requester: login,
      commentUrl: p.comment.html_url,
    };
    const options = { title: titleFor(context), ...command.options };
    let created: { run_id: string };
    try {
      created = await this.deps.runs.create(
        {
          ...createBody(promptWithContext(command.prompt, context), options),
          creator,
          source: "GITHUB_WEBHOOK",
          trigger_url: p.comment.html_url,
        },
        { idempotencyKey },
      );
    } catch (err) {
      return issue.reply("notice", noticeText(login, `Could not start the run: ${describeError(err)}`));
    }
    await this.deps.store.bindThread({
      runId: created.run_id,
      platform: "github",
      workspace: issue.repo,
      channel: String(p.issue.number),
      thread: null,
      triggerRef: String(p.comment.id),
      requester: login,
      createdAt: new Date().toISOString(),
    });
  }

  private async followup(
    issue: IssueThread,
    login: string,
    runId: string,
    message: string,
    idempotencyKey: string,
  ): Promise<void> {
    if (message.trim() === "") {
      return issue.reply(
        "notice",
        noticeText(login, "The follow-up is empty: say what the agent should do."),
      );
    }
    try {
      // The tracking comment shows the run at work again; 👀 already acknowledged the comment.
      await this.deps.runs.followup(runId, message.trim(), { idempotencyKey });
    } catch (err) {
      await issue.reply("notice", noticeText(login, `Could not send the follow-up: ${describeError(err)}`));
    }
  }

  private async cancel(
    issue: IssueThread,
    login: string,
    creator: Creator,
    runId: string,
    idempotencyKey: string,
  ): Promise<void> {
    if (!(await this.inRepo(issue.repo, runId))) {
      return issue.reply("notice", noticeText(login, `No run \`${runId}\` was started from ${issue.repo}.`));
    }
    try {
      await this.deps.runs.cancel(runId, { by: creator, idempotencyKey });
      // The tracking comment says "Cancelled by …" once the notifier sees the change.
    } catch (err) {
      if (runErrorCode(err) === "invalid_request") {
        const run = await this.deps.runs.get(runId).catch(() => undefined);
        const state = run ? stateWords(run).toLowerCase() : "finished";
        return issue.reply("notice", noticeText(login, `That run has already finished (${state}).`));
      }
      await issue.reply("notice", noticeText(login, `Could not cancel the run: ${describeError(err)}`));
    }
  }

  private async status(issue: IssueThread, login: string, runId: string): Promise<void> {
    if (!(await this.inRepo(issue.repo, runId))) {
      return issue.reply("notice", noticeText(login, `No run \`${runId}\` was started from ${issue.repo}.`));
    }
    try {
      await issue.reply("status", statusComment(await this.deps.runs.get(runId)));
    } catch (err) {
      await issue.reply("notice", noticeText(login, `Could not read the run: ${describeError(err)}`));
    }
  }

  /** GitHub users reach only runs started from the same repository. */
  private async inRepo(repo: string, runId: string): Promise<boolean> {
    const binding = await this.deps.store.getThreadBinding(runId);
    return binding?.platform === "github" && binding.workspace.toLowerCase() === repo.toLowerCase();
  }

  /**
   * The commenter's role on the repository, from the collaborator-permission endpoint
   * (author_association is not a permission check). Cached briefly: roles change rarely, mentions come
   * in bursts.
   */
  private permissionOf(repo: string, login: string): Promise<string> {
    const key = `${repo.toLowerCase()}:${login.toLowerCase()}`;
    const ttl = this.deps.settings.permission_cache_seconds * 1000;
    const cached = this.permissions.get(key);
    if (cached && Date.now() - cached.at < ttl) return cached.level;
    // The promise is cached, so concurrent mentions by one person make one call; a failure is not kept.
    const level = this.fetchPermission(repo, login);
    if (this.permissions.size >= PERMISSION_CACHE_MAX) {
      this.permissions.delete(this.permissions.keys().next().value!);
    }
    this.permissions.set(key, { level, at: Date.now() });
    level.catch(() => {
      if (this.permissions.get(key)?.level === level) this.permissions.delete(key);
    });
    return level;
  }

  private async fetchPermission(repo: string, login: string): Promise<string> {
    const [owner, name] = splitRepo(repo);
    const octokit = await this.deps.clients.forRepo(repo);
    try {
      const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({
        owner,
        repo: name,
        username: login,
      });
      // role_name says triage and maintain; permission folds them into read and write.
      const role = (data as { role_name?: string }).role_name;
      return role && permissionRank(role) > 0 ? role : data.permission;
    } catch (err) {
      if ((err as { status?: unknown }).status !== 404) throw err;
      return "none"; // no such user, or not visible to the App
    }
  }
}

/** Messages to one issue or pull request, through the outbox (retried, rate-limit aware, once each). */
class IssueThread {
  readonly repo: string;
  readonly number: number;
  private readonly store: GitHubStore;
  private readonly delivery: string;

  constructor(store: GitHubStore, repo: string, number: number, delivery: string) {
    this.store = store;
    this.repo = repo;
    this.number = number;
    this.delivery = delivery;
  }

  private get group(): string {
    return `github:${this.repo}#${this.number}`;
  }

  react(commentId: number, content: string): Promise<void> {
    return this.enqueue({
      dedupeKey: `gh-react:${this.repo}:${commentId}:${content}`,
      kind: "reaction",
      stream: `gh-react:${this.repo}:${commentId}`,
      target: githubTarget({ workspace: this.repo }),
      payload: { repo: this.repo, issue_number: this.number, comment_id: commentId, content },
    });
  }

  reply(purpose: string, body: string): Promise<void> {
    return this.enqueue({
      dedupeKey: `gh-reply:${this.delivery}:${purpose}`,
      kind: "reply",
      stream: `gh-issue:${this.group}`,
      target: githubTarget({ workspace: this.repo }),
      payload: { repo: this.repo, issue_number: this.number, body },
    });
  }

  private enqueue(message: OutboxMessage): Promise<void> {
    return this.store.enqueueOutbox(this.group, [message]);
  }
}

function idempotencyKey(purpose: string, repo: string, commentId: number): string {
  const digest = createHash("sha256").update(`${repo}\n${commentId}`).digest("base64url").slice(0, 32);
  return `github-${purpose}-${digest}`;
}

function header(req: FastifyRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** GitHub sends JSON, or `payload=<json>` when the hook's content type is form-encoded. */
function parsePayload(contentType: string, raw: string): Record<string, unknown> | undefined {
  try {
    const json = contentType.startsWith("application/x-www-form-urlencoded")
      ? new URLSearchParams(raw).get("payload")
      : raw;
    if (json === null) return undefined;
    const parsed = JSON.parse(json) as unknown;
    return parsed && typeof parsed === "object" && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
