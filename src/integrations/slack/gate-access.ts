import type { RunAccess } from "../../access/run-access.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import type { Store } from "../../store/store.ts";
import { type Actor, boundHere, channelThreadKey, mayActOnRun, notHereText } from "./access.ts";
import type { Responder } from "./responder.ts";

/**
 * Who may answer a waiting run from Slack (docs/surfaces.md, "Waiting for you"), the same for a plan and a
 * budget: an answer is a follow-up, so only on a run bound to the channel it is given in, under the
 * channel's follow-up policy; a button only on its own card's run. Whoever may not is told why, ephemerally.
 */
export interface GateAccessDeps {
  store: Pick<Store, "getThreadBinding" | "getCardState">;
  responder: Pick<Responder, "ephemeral">;
  access: RunAccess;
}

/** The run's binding in this channel when the actor may answer it; otherwise they are told why not. */
export async function steerableHere(
  deps: GateAccessDeps,
  actor: Actor,
  runId: string,
  thread?: string,
): Promise<ThreadBinding | undefined> {
  const { store, responder, access } = deps;
  const binding = boundHere(await store.getThreadBinding(runId, channelThreadKey(actor)), actor);
  if (!binding) {
    await responder.ephemeral(actor, notHereText(runId), thread);
    return undefined;
  }
  const refused = await mayActOnRun(access, "followup", actor, binding);
  if (refused) {
    await responder.ephemeral(actor, refused, thread);
    return undefined;
  }
  return binding;
}

/** Whether `cardTs` is the run's status card in the actor's channel (a button acts on its own card's run). */
export async function onItsCard(
  deps: GateAccessDeps,
  actor: Actor,
  runId: string,
  cardTs: string | undefined,
  thread?: string,
): Promise<boolean> {
  const card = await deps.store.getCardState(runId, channelThreadKey(actor));
  if (cardTs && card?.cardRef === cardTs) return true;
  await deps.responder.ephemeral(actor, notHereText(runId), thread);
  return false;
}
