import type { RunAccess } from "../../access/run-access.ts";
import { stateWord } from "../../model/run-wording.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import type { PlanAnswer } from "../../runs/plan-approval.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import { waitsForApproval } from "../../runs/waiting-run.ts";
import type { Store } from "../../store/store.ts";
import { describeError, runErrorCode } from "../run-errors.ts";
import type { Actor } from "./access.ts";
import { onItsCard, steerableHere } from "./gate-access.ts";
import type { Responder } from "./responder.ts";
import { type ReviseOrigin, reviseModal } from "./waiting-card.ts";

export interface PlanAnswersDeps {
  runs: Pick<RunsApi, "approve" | "get">;
  store: Pick<Store, "getThreadBinding" | "getCardState">;
  responder: Pick<Responder, "ephemeral" | "openModal">;
  /** The one access rule: an answer is a follow-up, so the channel's follow-up policy decides who may. */
  access: RunAccess;
}

/**
 * Answers to a plan that waits for approval from Slack (docs/surfaces.md, "Waiting for you"): `approve` and
 * `revise` typed in the run's thread (or as a slash command naming the run), the card's Approve button, and
 * its Request changes button, whose modal's submission is the revise. Each acts only on a run of the
 * channel it is used in (a button: only on its own card's run), after the steering policy said yes, and
 * answers the person ephemerally.
 */
export class PlanAnswers {
  private readonly deps: PlanAnswersDeps;

  constructor(deps: PlanAnswersDeps) {
    this.deps = deps;
  }

  /** `approve [note]` / `revise <changes>`, typed. */
  async answer(
    actor: Actor,
    runId: string,
    answer: PlanAnswer,
    idempotencyKey: string,
    thread?: string,
  ): Promise<void> {
    const binding = await this.steerable(actor, runId, thread);
    if (binding) await this.send(actor, runId, answer, idempotencyKey, thread);
  }

  /** The Approve button: only on the run of the card it is on (`cardTs`). */
  async approveFromCard(
    actor: Actor,
    runId: string,
    cardTs: string | undefined,
    idempotencyKey: string,
    thread?: string,
  ): Promise<void> {
    if (!(await this.onItsCard(actor, runId, cardTs, thread))) return;
    await this.answer(actor, runId, { action: "approve" }, idempotencyKey, thread);
  }

  /**
   * The Request changes button: opens the modal where the changes are written (Slack's trigger_id is valid
   * for 3 seconds, so nothing slow comes first). Someone who may not answer is told so instead.
   */
  async openRevise(
    actor: Actor,
    runId: string,
    cardTs: string | undefined,
    triggerId: string | undefined,
    thread?: string,
  ): Promise<void> {
    if (!cardTs || !triggerId || !(await this.onItsCard(actor, runId, cardTs, thread))) return;
    if (!(await this.steerable(actor, runId, thread))) return;
    const run = await this.deps.runs.get(runId).catch(() => undefined);
    if (run && !waitsForApproval(run))
      return this.deps.responder.ephemeral(actor, answered(run.state), thread);
    const origin: ReviseOrigin = {
      runId,
      channel: actor.channel,
      cardTs,
      ...(thread ? { threadTs: thread } : {}),
    };
    const opened = await this.deps.responder.openModal(triggerId, reviseModal(origin, run?.title ?? runId));
    if (!opened) {
      await this.deps.responder.ephemeral(
        actor,
        "Could not open the form; mention me in the run's thread with `revise <what to change>` instead.",
        thread,
      );
    }
  }

  /** The Request changes modal, submitted: the revise, on the card it was opened from. */
  async reviseFromModal(
    actor: Actor,
    origin: ReviseOrigin,
    changes: string,
    idempotencyKey: string,
  ): Promise<void> {
    if (!(await this.onItsCard(actor, origin.runId, origin.cardTs, origin.threadTs))) return;
    if (changes.trim() === "") {
      return this.deps.responder.ephemeral(
        actor,
        "The changes were empty: say what should change in the plan.",
        origin.threadTs,
      );
    }
    await this.answer(
      actor,
      origin.runId,
      { action: "revise", message: changes.trim() },
      idempotencyKey,
      origin.threadTs,
    );
  }

  private steerable(actor: Actor, runId: string, thread?: string): Promise<ThreadBinding | undefined> {
    return steerableHere(this.deps, actor, runId, thread);
  }

  private onItsCard(actor: Actor, runId: string, cardTs: string | undefined, thread?: string) {
    return onItsCard(this.deps, actor, runId, cardTs, thread);
  }

  private async send(
    actor: Actor,
    runId: string,
    answer: PlanAnswer,
    idempotencyKey: string,
    thread?: string,
  ): Promise<void> {
    const { runs, responder } = this.deps;
    try {
      await runs.approve(runId, answer, { idempotencyKey });
      // The card shows the run at work again once the notifier sees it.
      await responder.ephemeral(
        actor,
        answer.action === "approve"
          ? "Approved: the agent carries out the plan in this run."
          : "Sent: the agent revises its plan, and the card shows the new one for approval.",
        thread,
      );
    } catch (err) {
      if (runErrorCode(err) === "conflict") {
        const run = await runs.get(runId).catch(() => undefined);
        return responder.ephemeral(actor, answered(run?.state ?? "not waiting"), thread);
      }
      await responder.ephemeral(actor, `Could not answer the plan: ${describeError(err)}`, thread);
    }
  }
}

/** A run whose plan is no longer waiting (answered by someone else, cancelled, finished). */
function answered(state: string): string {
  return `That run has no plan waiting for approval (it is ${stateWord(state).toLowerCase()}): it was answered already, or it never asked.`;
}
