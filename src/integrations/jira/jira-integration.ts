import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { RunAccess } from "../../access/run-access.ts";
import type { JiraSettings } from "../../config-file.ts";
import type { RepositoryParsing } from "../../model/repository.ts";
import type { Creator } from "../../model/run.ts";
import { isTerminal } from "../../model/run-state.ts";
import { stateWords } from "../../model/run-wording.ts";
import { type ThreadBinding, threadKey } from "../../model/thread-binding.ts";
import type { BudgetRequest } from "../../runs/budget-answer.ts";
import type { PlanAnswer } from "../../runs/plan-approval.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { InboundDelivery, Store } from "../../store/store.ts";
import { budgetRefusedText, budgetRequestOf, notWaitingForBudgetText } from "../budget-answer-words.ts";
import { type Command, GrammarError, parseCommand, selectsAgent, TRACKER_VERBS } from "../grammar.ts";
import { InboxQueue, type InboxStore } from "../inbox-queue.ts";
import { runErrorCode } from "../run-errors.ts";
import { IssueMessages } from "./issue-messages.ts";
import type { JiraApi } from "./jira-api.ts";
import { type JiraAudience, jiraPrincipalId } from "./jira-audience.ts";
import { type HandlingContext, JiraRuns } from "./jira-runs.ts";
import { renderNotice } from "./tracking-comment.ts";
import type { JiraTrigger } from "./webhook-events.ts";
import { JiraWebhookRoute } from "./webhook-route.ts";

/** Deliveries handled at once (each is a few store writes and a few Jira calls). */
const WORK_CONCURRENCY = 4;
/** The inbox's attempts per delivery (inbox-queue.ts): the last one answers rather than fails. */
const LAST_ATTEMPT = 5;

export type JiraStore = Pick<
  Store,
  "bindThread" | "findLatestBinding" | "listThreadBindings" | "enqueueOutbox" | "markThreadAsked"
> &
  InboxStore;

export interface JiraIntegrationDeps {
  flavour: "cloud" | "datacenter";
  botId: string;
  webhookSecret: string;
  settings: JiraSettings;
  runs: RunsApi;
  store: JiraStore;
  api: JiraApi;
  audience: JiraAudience;
  access: Pick<RunAccess, "membership" | "steerRefusal">;
  /** How repositories are read (the GitHub server, the hosts the operator allows). */
  parsing: RepositoryParsing;
  /** The outbox target of this site. */
  target: string;
  inbox: { leaseMs: number; pollMs: number };
  log: Logger;
  publicUrl: () => string;
}

/**
 * The Jira side of Dispatch (docs/surfaces.md, Jira): triggers stored by the webhook route are handled
 * here, under the inbox's lease. A comment that mentions the service account starts a run, or on an issue
 * that has one is a follow-up, `status` or `cancel`; the label or an assignment starts a run. Whoever asks
 * must be allowed in the project (`jira.allowed_projects`) and able to browse it; every refusal is a reply
 * on the issue. Starting runs is JiraRuns'; the notifier reports progress afterwards.
 */
export class JiraIntegration {
  private readonly deps: JiraIntegrationDeps;
  private readonly route: JiraWebhookRoute;
  private readonly queue: InboxQueue;
  private readonly starts: JiraRuns;
  private readonly log: Logger;

  constructor(deps: JiraIntegrationDeps) {
    this.deps = deps;
    this.log = deps.log.child({ component: "jira" });
    this.queue = new InboxQueue({
      source: "jira",
      store: deps.store,
      handle: (delivery) => this.onDelivery(delivery),
      leaseMs: deps.inbox.leaseMs,
      pollMs: deps.inbox.pollMs,
      concurrency: WORK_CONCURRENCY,
      log: deps.log.child({ component: "jira-work-queue" }),
    });
    this.route = new JiraWebhookRoute({
      flavour: deps.flavour,
      webhookSecret: deps.webhookSecret,
      triggers: { botId: deps.botId, label: deps.settings.label },
      store: deps.store,
      queue: this.queue,
      log: deps.log.child({ component: "jira-webhook" }),
    });
    this.starts = new JiraRuns({ ...deps, log: this.log });
  }

  register(server: FastifyInstance): void {
    this.route.register(server);
  }

  start(): void {
    this.queue.start();
  }

  stop(): Promise<void> {
    return this.queue.stop();
  }

  idle(): Promise<void> {
    return this.queue.idle();
  }

  private async onDelivery(delivery: InboundDelivery): Promise<void> {
    const trigger = JSON.parse(delivery.payload) as JiraTrigger;
    const { issue, actor } = trigger;
    const about = trigger.comment
      ? `comment:${trigger.comment.id}`
      : `changelog:${trigger.changelogId}:${trigger.kind}`;
    const messages = new IssueMessages(this.deps.store, issue, this.deps.target, about);
    const notice = (purpose: string, text: string) => messages.reply(purpose, renderNotice(actor, text));
    const { audience } = this.deps;
    if (!audience.projectAllowed(issue.projectKey)) {
      return notice(
        "refused",
        `Dispatch does not work in project ${issue.projectKey}: ask your Dispatch admin to add it to jira.allowed_projects.`,
      );
    }
    // The access rule's own question: can this person browse the project (docs/surfaces.md, audience)?
    const membership = await audience.includes(
      jiraPrincipalId(actor.id),
      audience.place({ workspace: issue.projectKey }),
    );
    if (membership.kind === "unknown") {
      return notice(
        "refused",
        "I could not check your permission on this project with Jira just now; mention me again in a minute.",
      );
    }
    if (membership.kind === "not_member") {
      return notice(
        "refused",
        `Only people who can browse project ${issue.projectKey} can start or steer Dispatch runs on its issues.`,
      );
    }
    const binding = await this.deps.store.findLatestBinding({
      platform: "jira",
      workspace: issue.projectKey,
      channel: issue.id,
      thread: null,
    });
    const ctx = { trigger, binding, messages, notice, about, lastAttempt: delivery.attempts >= LAST_ATTEMPT };
    if (trigger.kind === "comment") return this.onComment(ctx);
    // A label or an assignment: one active run per issue.
    const run = binding ? await this.deps.runs.get(binding.runId).catch(() => undefined) : undefined;
    if (run && !isTerminal(run.state)) {
      return notice(
        "busy",
        `Run ${run.run_id} is already working on this issue; its comment shows how far it is.`,
      );
    }
    const how = trigger.kind === "label" ? `labelled "${this.deps.settings.label}"` : "assigned to Dispatch";
    return this.starts.start(ctx, {
      verb: "run",
      prompt: `Resolve this issue as it describes (it was ${how}).`,
      options: {},
      forceNew: true,
    });
  }

  /** A comment that mentions the service account, once its author is known to be in the audience. */
  private async onComment(ctx: HandlingContext): Promise<void> {
    const { trigger, binding, messages, notice } = ctx;
    const text = trigger.comment!.command;
    const verb = (text.split(/\s+/)[0] ?? "").toLowerCase();
    // On an issue that has a run, anything that is not a verb (or `/codex …`, a new run) is a follow-up.
    if (binding && !TRACKER_VERBS.has(verb) && !selectsAgent(verb)) return this.followup(ctx, binding, text);
    let command: Command;
    try {
      command = parseCommand(text, "github");
    } catch (err) {
      if (err instanceof GrammarError) return notice("grammar", err.message);
      throw err;
    }
    switch (command.verb) {
      case "help":
      case "followup":
        return messages.reply("help", this.starts.help());
      case "login":
        return notice(
          "login",
          "signing in to Dispatch's web app is not available from Jira; sign in from Slack or GitHub, or with an API key.",
        );
      case "list":
      case "status":
      case "cancel": {
        const runId = (command.verb !== "list" && command.runId) || binding?.runId;
        const target = runId ? await this.bindingOf(runId, trigger.issue.projectKey) : undefined;
        if (!runId) return notice(command.verb, "no Dispatch run was started on this issue yet.");
        if (!target)
          return notice(command.verb, `no run ${runId} was started in project ${trigger.issue.projectKey}.`);
        if (command.verb === "cancel") return this.cancel(ctx, target);
        return this.starts.status(messages, target.runId);
      }
      case "approve":
      case "revise": {
        const runId = command.runId ?? binding?.runId;
        const target = runId ? await this.bindingOf(runId, trigger.issue.projectKey) : undefined;
        if (!runId) return notice(command.verb, "no Dispatch run was started on this issue yet.");
        if (!target)
          return notice(command.verb, `no run ${runId} was started in project ${trigger.issue.projectKey}.`);
        const answer: PlanAnswer =
          command.verb === "revise"
            ? { action: "revise", message: command.changes }
            : { action: "approve", ...(command.note ? { message: command.note } : {}) };
        return this.answerPlan(ctx, target, answer);
      }
      case "extend":
      case "stop": {
        const runId = command.runId ?? binding?.runId;
        const target = runId ? await this.bindingOf(runId, trigger.issue.projectKey) : undefined;
        if (!runId) return notice(command.verb, "no Dispatch run was started on this issue yet.");
        if (!target)
          return notice(command.verb, `no run ${runId} was started in project ${trigger.issue.projectKey}.`);
        return this.answerBudget(ctx, target, budgetRequestOf(command));
      }
      case "run":
        if (binding && !command.forceNew) return this.followup(ctx, binding, command.prompt);
        return this.starts.start(ctx, command);
    }
  }

  /** `approve [note]` / `revise <changes>`: the answer to the plan the run waits on, a follow-up like any. */
  private async answerPlan(ctx: HandlingContext, binding: ThreadBinding, answer: PlanAnswer): Promise<void> {
    const { trigger, notice } = ctx;
    const refusal = await this.refusal(trigger.actor.id, binding, "followup");
    if (refusal) return notice("refused", refusal);
    try {
      await this.deps.runs.approve(binding.runId, answer, {
        idempotencyKey: `jira-answer-${trigger.comment!.id}`,
      });
      await this.deps.store.markThreadAsked(binding.runId, threadKey(binding), new Date().toISOString());
      // The run's comment shows it at work again once the notifier sees the change.
    } catch (err) {
      if (runErrorCode(err) === "conflict") {
        const run = await this.deps.runs.get(binding.runId).catch(() => undefined);
        const state = run ? stateWords(run).toLowerCase() : "not waiting";
        return notice(
          answer.action,
          `run ${binding.runId} has no plan waiting for approval (it is ${state}); mention me without "${answer.action}" to send it a follow-up.`,
        );
      }
      this.log.debug({ err, runId: binding.runId }, "could not answer a plan from Jira");
      await notice(answer.action, `could not answer the plan: ${this.starts.describe(err)}`);
    }
  }

  /**
   * `extend $X` / `stop`: the answer to the budget the run waits for, as the commenter, whose own monthly
   * budgets then apply; beyond them an admin must extend it.
   */
  private async answerBudget(ctx: HandlingContext, binding: ThreadBinding, request: BudgetRequest) {
    const { trigger, notice } = ctx;
    const refusal = await this.refusal(trigger.actor.id, binding, "followup");
    if (refusal) return notice("refused", refusal);
    try {
      await this.deps.runs.budget(binding.runId, request, {
        by: this.personOf(trigger.actor),
        idempotencyKey: `jira-budget-${trigger.comment!.id}`,
      });
      await this.deps.store.markThreadAsked(binding.runId, threadKey(binding), new Date().toISOString());
      // The run's comment shows it at work again (or delivering) once the notifier sees the change.
    } catch (err) {
      const code = runErrorCode(err);
      if (code === "conflict") {
        const run = await this.deps.runs.get(binding.runId).catch(() => undefined);
        const state = run ? stateWords(run).toLowerCase() : "not waiting";
        return notice(request.action, notWaitingForBudgetText(binding.runId, state));
      }
      if (code === "not_authorized") return notice("refused", budgetRefusedText(this.starts.describe(err)));
      this.log.debug({ err, runId: binding.runId }, "could not answer a budget from Jira");
      await notice(request.action, `could not answer the budget: ${this.starts.describe(err)}`);
    }
  }

  private async followup(ctx: HandlingContext, binding: ThreadBinding, text: string): Promise<void> {
    const { trigger, notice } = ctx;
    const refusal = await this.refusal(trigger.actor.id, binding, "followup");
    if (refusal) return notice("refused", refusal);
    if (!text.trim()) return notice("empty", "the message is empty: say what the agent should do.");
    try {
      const { outcome } = await this.deps.runs.followup(binding.runId, text, {
        idempotencyKey: `jira-followup-${trigger.comment!.id}`,
      });
      // The reply at the end of this execution comes to this issue (docs/surfaces.md, one run, many threads).
      await this.deps.store.markThreadAsked(binding.runId, threadKey(binding), new Date().toISOString());
      await notice("followup", this.starts.followupWords(outcome));
    } catch (err) {
      this.log.debug({ err, runId: binding.runId }, "could not send a follow-up from Jira");
      await notice("followup", `could not send the follow-up: ${this.starts.describe(err)}`);
    }
  }

  private async cancel(ctx: HandlingContext, binding: ThreadBinding): Promise<void> {
    const { trigger, notice } = ctx;
    const refusal = await this.refusal(trigger.actor.id, binding, "cancel");
    if (refusal) return notice("refused", refusal);
    const done = await this.starts.cancel(
      binding.runId,
      this.personOf(trigger.actor),
      `jira-cancel-${trigger.comment!.id}`,
    );
    // The run's comment says "Cancelled by …" once the notifier sees the change; otherwise say why not.
    if (done !== true) await notice("cancel", done);
  }

  /** The Jira user as the run's records name people. */
  private personOf(actor: { id: string; name: string }): Creator {
    return { type: "user", uid: jiraPrincipalId(actor.id), display_name: actor.name };
  }

  /** Why this person may not steer the run, asked of the one access rule; undefined when they may. */
  private async refusal(userId: string, binding: ThreadBinding, action: "followup" | "cancel") {
    const viewer = { principal: { id: jiraPrincipalId(userId) }, role: "member" as const };
    return (await this.deps.access.steerRefusal(viewer, { id: binding.runId }, action, binding))?.reason;
  }

  /** The run's binding to an issue of this project: Jira users reach only runs asked for in the project. */
  private async bindingOf(runId: string, projectKey: string): Promise<ThreadBinding | undefined> {
    const threads = await this.deps.store.listThreadBindings(runId).catch(() => []);
    return threads.find((b) => b.platform === "jira" && b.workspace === projectKey);
  }
}
