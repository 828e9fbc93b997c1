import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { RunAccess } from "../../access/run-access.ts";
import type { LinearSettings } from "../../config-file.ts";
import type { RepositoryParsing } from "../../model/repository.ts";
import type { Creator } from "../../model/run.ts";
import { oneLine, stateWords, truncate } from "../../model/run-wording.ts";
import { type ThreadBinding, threadKey } from "../../model/thread-binding.ts";
import type { BudgetRequest } from "../../runs/budget-answer.ts";
import type { PlanAnswer } from "../../runs/plan-approval.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import { waitsForApproval, waitsForBudget } from "../../runs/waiting-run.ts";
import type { InboundDelivery, Store } from "../../store/store.ts";
import { budgetRefusedText, budgetRequestOf } from "../budget-answer-words.ts";
import { type Command, createBody, GrammarError, parseCommand } from "../grammar.ts";
import { InboxQueue, type InboxStore } from "../inbox-queue.ts";
import { chooseRepository } from "../repository-choice.ts";
import { describeError, runErrorCode } from "../run-errors.ts";
import {
  budgetAnsweredThought,
  followupThought,
  onItThought,
  planAnsweredThought,
} from "./activity-words.ts";
import type { LinearApi } from "./linear-api.ts";
import { type LinearAudience, linearPrincipalId } from "./linear-audience.ts";
import { LINEAR_SOURCE } from "./notifier-platform.ts";
import { actorOf, type SessionEvent, type SessionIssue } from "./session-event.ts";
import { SessionMessages } from "./session-messages.ts";
import { LinearWebhookRoute } from "./webhook-route.ts";

/** Events handled at once (each is a few store writes and a GraphQL query or two). */
const WORK_CONCURRENCY = 4;
/** The inbox's attempts per delivery (inbox-queue.ts): a follow-up waits this long for its session's run. */
const LAST_ATTEMPT = 5;

export type LinearStore = Pick<
  Store,
  "bindThread" | "listChannelBindings" | "enqueueOutbox" | "markThreadAsked"
> &
  InboxStore;

export interface LinearIntegrationDeps {
  webhookSecret: string;
  settings: LinearSettings;
  runs: RunsApi;
  store: LinearStore;
  api: Pick<LinearApi, "issueLinks">;
  audience: LinearAudience;
  access: Pick<RunAccess, "membership" | "steerRefusal">;
  /** How repositories are read (the GitHub server, the hosts the operator allows). */
  parsing: RepositoryParsing;
  inbox: { leaseMs: number; pollMs: number };
  log: Logger;
  publicUrl: () => string;
}

/**
 * The Linear agent (docs/surfaces.md): agent session events stored by the webhook route are handled here,
 * under the inbox's lease. `created` (the issue delegated to Dispatch, or Dispatch mentioned) answers with
 * a thought at once, then starts a run in the issue's repository, binds it to the session, links the run
 * page and moves the issue to started; `prompted` is a follow-up on the session's run, or with the `stop`
 * signal its cancellation. Whatever cannot be done is said in the session as an `error` activity.
 */
export class LinearIntegration {
  private readonly deps: LinearIntegrationDeps;
  private readonly route: LinearWebhookRoute;
  private readonly queue: InboxQueue;
  private readonly log: Logger;

  constructor(deps: LinearIntegrationDeps) {
    this.deps = deps;
    this.log = deps.log.child({ component: "linear" });
    this.queue = new InboxQueue({
      source: "linear",
      store: deps.store,
      handle: (delivery) => this.onDelivery(delivery),
      leaseMs: deps.inbox.leaseMs,
      pollMs: deps.inbox.pollMs,
      concurrency: WORK_CONCURRENCY,
      log: deps.log.child({ component: "linear-work-queue" }),
    });
    this.route = new LinearWebhookRoute({
      webhookSecret: deps.webhookSecret,
      store: deps.store,
      queue: this.queue,
      heard: (event) => this.heard(event),
      log: deps.log.child({ component: "linear-webhook" }),
    });
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

  /** The "On it" thought of a new session, recorded as the event is acknowledged (docs/surfaces.md: never silent). */
  private async heard(event: SessionEvent): Promise<void> {
    const issue = event.agentSession.issue;
    if (event.action !== "created" || !issue) return;
    await new SessionMessages(this.deps.store, event.organizationId, event.agentSession.id).activity(
      "on-it",
      onItThought(issue),
    );
  }

  private async onDelivery(delivery: InboundDelivery): Promise<void> {
    const event = JSON.parse(delivery.payload) as SessionEvent;
    const session = new SessionMessages(this.deps.store, event.organizationId, event.agentSession.id);
    if (event.action === "created") return this.onCreated(event, session);
    return this.onPrompted(event, session, delivery.attempts >= LAST_ATTEMPT);
  }

  private async onCreated(event: SessionEvent, session: SessionMessages): Promise<void> {
    const issue = event.agentSession.issue;
    if (!issue) {
      return session.activity("no-issue", {
        type: "error",
        body: "Dispatch works on issues: delegate an issue to me, or mention me in an issue's comment.",
      });
    }
    // Recorded as the event was acknowledged (heard); again here, deduped, in case that did not happen.
    await session.activity("on-it", onItThought(issue));
    const actor = actorOf(event);
    if (!actor) return session.activity("refused", errorBody("I could not tell who asked for this session."));
    const membership = await this.deps.audience.isTeamMember(actor.id, issue.team.id);
    if (membership.kind === "unknown") {
      return session.activity(
        "refused",
        errorBody(
          "I could not check your membership of this team with Linear just now; mention me again in a minute.",
        ),
      );
    }
    if (membership.kind === "not_member") {
      return session.activity(
        "refused",
        errorBody(`Only members of the ${issue.team.key} team can start Dispatch runs on its issues.`),
      );
    }
    this.deps.audience.rememberSession(event.agentSession.id, issue.team.id);

    const choice = chooseRepository({
      texts: [event.agentSession.comment?.body, issue.description],
      links: await this.issueLinks(issue),
      fallback: {
        repository: this.deps.settings.teams[issue.team.key]?.repository,
        setting: `linear.teams.${issue.team.key}.repository`,
      },
      parsing: this.deps.parsing,
    });
    if (choice.kind === "none") return session.activity("no-repository", errorBody(choice.reason));

    const creator: Creator = { type: "user", uid: linearPrincipalId(actor.id), display_name: actor.name };
    let runId: string;
    try {
      const body = createBody(
        promptOf(event, issue, actor.name),
        { title: truncate(`${issue.identifier} ${oneLine(issue.title)}`, 200) },
        choice.spec,
        asksForPlan(event.agentSession.comment?.body) ? "plan" : undefined,
      );
      const created = await this.deps.runs.create(
        {
          ...body,
          creator,
          source: LINEAR_SOURCE,
          trigger_url: issue.url,
          // The pull request names the issue (`Fixes ENG-123`), which Linear's GitHub integration links.
          metadata: { fixes: issue.identifier, linear_session: event.agentSession.id },
        },
        { idempotencyKey: `linear-create-${event.agentSession.id}` },
      );
      runId = created.run_id;
    } catch (err) {
      this.log.debug({ err, session: event.agentSession.id }, "could not start a run from Linear");
      return session.activity("not-started", errorBody(`Could not start the run: ${describeError(err)}`));
    }
    await this.deps.store.bindThread({
      runId,
      platform: "linear",
      workspace: event.organizationId,
      channel: event.agentSession.id,
      thread: issue.id,
      triggerRef: event.agentSession.comment?.id ?? null,
      requester: actor.id,
      createdAt: new Date().toISOString(),
    });
    await session.linkRun(runId, `${this.deps.publicUrl()}/runs/${runId}`);
    await session.startIssue(issue.id, event.appUserId);
    this.log.info(
      { runId, session: event.agentSession.id, issue: issue.identifier, from: choice.from },
      "run started from Linear",
    );
  }

  /** A message written in the session (or its stop button): steers the session's run. */
  private async onPrompted(
    event: SessionEvent,
    session: SessionMessages,
    lastAttempt: boolean,
  ): Promise<void> {
    const activity = event.agentActivity;
    if (!activity) return;
    const key = `prompt:${activity.id}`;
    const [binding] = await this.deps.store.listChannelBindings(
      { platform: "linear", workspace: event.organizationId, channel: event.agentSession.id },
      1,
    );
    if (!binding) {
      // The session's `created` may still be under way: the inbox tries again with backoff.
      if (!lastAttempt) throw new Error(`Linear session ${event.agentSession.id} has no run yet`);
      return session.activity(
        key,
        errorBody("This session has no Dispatch run: delegate the issue to me again."),
      );
    }
    const actor = actorOf(event);
    if (!actor) return session.activity(key, errorBody("I could not tell who wrote this."));
    const stop = activity.signal === "stop";
    const refusal = await this.refusal(actor.id, binding, stop ? "cancel" : "followup");
    if (refusal) return session.activity(key, errorBody(refusal));
    const by: Creator = { type: "user", uid: linearPrincipalId(actor.id), display_name: actor.name };
    if (stop) return this.cancelRun(binding.runId, by, activity.id, session, key);

    const message = typeof activity.content.body === "string" ? activity.content.body.trim() : "";
    if (!message)
      return session.activity(key, errorBody("The message is empty: say what the agent should do."));
    const gate = await this.gateAnswer(binding.runId, message);
    if (gate && "plan" in gate) return this.answerPlan(binding, gate.plan, activity.id, session, key);
    if (gate) return this.answerBudget(binding, gate.budget, by, activity.id, session, key);
    try {
      const { outcome } = await this.deps.runs.followup(binding.runId, message, {
        idempotencyKey: `linear-followup-${activity.id}`,
      });
      // The reply at the end of this execution comes to this session (docs/surfaces.md, one run, many threads).
      await this.deps.store.markThreadAsked(binding.runId, threadKey(binding), new Date().toISOString());
      await session.activity(key, followupThought(outcome));
    } catch (err) {
      this.log.debug({ err, runId: binding.runId }, "could not send a follow-up from Linear");
      await session.activity(key, errorBody(`Could not send the follow-up: ${describeError(err)}`));
    }
  }

  /**
   * The answer to what the run waits for, when `message` is one (docs/surfaces.md, "Waiting for you"):
   * `approve [note]` or `revise <changes>` to a plan waiting for approval, `extend $X` or `stop` to a run
   * waiting for budget. Anything else, or a run not waiting for that, is a follow-up (undefined).
   */
  private async gateAnswer(
    runId: string,
    message: string,
  ): Promise<{ plan: PlanAnswer } | { budget: BudgetRequest } | undefined> {
    const verb = (message.split(/\s+/)[0] ?? "").toLowerCase();
    if (!["approve", "revise", "extend", "stop"].includes(verb)) return undefined;
    let command: Command;
    try {
      command = parseCommand(message, "github");
    } catch (err) {
      if (err instanceof GrammarError) return undefined;
      throw err;
    }
    const run = await this.deps.runs.get(runId).catch(() => undefined);
    if (!run) return undefined;
    if (command.verb === "revise" && waitsForApproval(run)) {
      return { plan: { action: "revise", message: command.changes } };
    }
    if (command.verb === "approve" && waitsForApproval(run)) {
      return { plan: { action: "approve", ...(command.note ? { message: command.note } : {}) } };
    }
    if ((command.verb === "extend" || command.verb === "stop") && waitsForBudget(run)) {
      return { budget: budgetRequestOf(command) };
    }
    return undefined;
  }

  private async answerPlan(
    binding: ThreadBinding,
    answer: PlanAnswer,
    activityId: string,
    session: SessionMessages,
    key: string,
  ): Promise<void> {
    try {
      await this.deps.runs.approve(binding.runId, answer, { idempotencyKey: `linear-answer-${activityId}` });
      await this.deps.store.markThreadAsked(binding.runId, threadKey(binding), new Date().toISOString());
      await session.activity(key, planAnsweredThought(answer.action));
    } catch (err) {
      this.log.debug({ err, runId: binding.runId }, "could not answer a plan from Linear");
      await session.activity(key, errorBody(`Could not answer the plan: ${describeError(err)}`));
    }
  }

  /** The budget answered as the person who wrote it, whose own monthly budgets then apply. */
  private async answerBudget(
    binding: ThreadBinding,
    request: BudgetRequest,
    by: Creator,
    activityId: string,
    session: SessionMessages,
    key: string,
  ): Promise<void> {
    try {
      await this.deps.runs.budget(binding.runId, request, {
        by,
        idempotencyKey: `linear-budget-${activityId}`,
      });
      await this.deps.store.markThreadAsked(binding.runId, threadKey(binding), new Date().toISOString());
      await session.activity(key, budgetAnsweredThought(request));
    } catch (err) {
      const detail = describeError(err);
      const text =
        runErrorCode(err) === "not_authorized"
          ? budgetRefusedText(detail)
          : `Could not answer the budget: ${detail}`;
      this.log.debug({ err, runId: binding.runId }, "could not answer a budget from Linear");
      await session.activity(key, errorBody(text));
    }
  }

  /** The stop signal: the run is cancelled and the notifier posts its final activity. */
  private async cancelRun(
    runId: string,
    by: Creator,
    activityId: string,
    session: SessionMessages,
    key: string,
  ) {
    try {
      await this.deps.runs.cancel(runId, { by, idempotencyKey: `linear-stop-${activityId}` });
    } catch (err) {
      if (runErrorCode(err) !== "invalid_request") {
        this.log.debug({ err, runId }, "could not cancel a run from Linear");
        return session.activity(key, errorBody(`Could not stop the run: ${describeError(err)}`));
      }
      const run = await this.deps.runs.get(runId).catch(() => undefined);
      const state = run ? stateWords(run).toLowerCase() : "finished";
      await session.activity(key, {
        type: "response",
        body: `Nothing to stop: the run has already finished (${state}).`,
      });
    }
  }

  /** Why this Linear user may not steer the run, asked of the one access rule; undefined when they may. */
  private async refusal(userId: string, binding: ThreadBinding, action: "followup" | "cancel") {
    const viewer = { principal: { id: linearPrincipalId(userId) }, role: "member" as const };
    const membership = await this.deps.access.membership(viewer, binding);
    if (membership.kind === "unknown") {
      return "I could not check your membership of this team with Linear just now; try again in a minute.";
    }
    if (membership.kind === "not_member")
      return "Only members of this issue's team can steer its Dispatch run.";
    return (await this.deps.access.steerRefusal(viewer, { id: binding.runId }, action, binding))?.reason;
  }

  /** The issue's links, for its repository; without them (Linear did not answer) the other sources decide. */
  private async issueLinks(issue: SessionIssue): Promise<string[]> {
    try {
      return await this.deps.api.issueLinks(issue.id);
    } catch (err) {
      this.log.warn({ err, issue: issue.identifier }, "could not read a Linear issue's links");
      return [];
    }
  }
}

function errorBody(body: string) {
  return { type: "error" as const, body };
}

/**
 * The run's prompt: where it comes from, then Linear's own prompt context for the session (the issue,
 * its comments and the team's guidance, formatted by Linear for agents), or the issue itself when an
 * event carries none.
 */
function promptOf(event: SessionEvent, issue: SessionIssue, requester: string): string {
  const context = event.promptContext?.trim() || [issue.title, issue.description ?? ""].join("\n\n").trim();
  return [
    `Linear issue ${issue.identifier}: ${oneLine(issue.title)}`,
    `URL: ${oneLine(issue.url)}`,
    `Requested by ${oneLine(requester)} in Linear.`,
    "",
    context,
  ].join("\n");
}

/**
 * Whether the mentioning comment asks for a plan first (`@Dispatch plan …`): the run plans and waits for its
 * plan to be approved in the session (docs/surfaces.md, "Waiting for you").
 */
function asksForPlan(comment: string | undefined): boolean {
  return /^\s*(?:@\S+\s+|\[@[^\]]*\]\([^)]*\)\s*)*plan\b/i.test(comment ?? "");
}
