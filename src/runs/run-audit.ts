import type { AuditAction, AuditActor, NewAuditEvent } from "../model/audit.ts";
import type { Caller } from "../model/identity.ts";
import type { Creator } from "../model/run.ts";
import type { Store } from "../store/store.ts";

/**
 * Who asks for a run and who the audit log names for it (docs/api.md, "Audit log"): the person a surface
 * acts for (a Slack or GitHub user, `on_behalf_of`) when there is one, else the key's or session's principal.
 */

export function creatorOf(caller: Pick<Caller, "principal">): Creator {
  return {
    type: caller.principal.type,
    uid: caller.principal.id,
    display_name: caller.principal.displayName,
    ...(caller.principal.email ? { email: caller.principal.email } : {}),
  };
}

export function auditActorOf(ask: { caller: Pick<Caller, "principal">; creator?: Creator }): AuditActor {
  const who = ask.creator ?? creatorOf(ask.caller);
  return { actor: who.uid, actorName: who.display_name };
}

/** Records what was done to runs, once it is done (a replayed request records nothing again). */
export class RunAudit {
  private readonly store: Pick<Store, "appendAuditEvent">;

  constructor(store: Pick<Store, "appendAuditEvent">) {
    this.store = store;
  }

  async record(
    ask: { caller: Pick<Caller, "principal" | "team">; creator?: Creator },
    action: AuditAction,
    runId: string,
    details: Record<string, unknown> = {},
  ): Promise<void> {
    await this.store.appendAuditEvent(this.entry(ask, action, runId, details));
  }

  /** The entry `record` appends, for a store write that appends it itself (a run's creation). */
  entry(
    ask: { caller: Pick<Caller, "principal" | "team">; creator?: Creator },
    action: AuditAction,
    runId: string,
    details: Record<string, unknown> = {},
  ): NewAuditEvent {
    const actor = auditActorOf(ask);
    return {
      teamId: ask.caller.team.id,
      at: new Date().toISOString(),
      ...actor,
      action,
      target: runId,
      details: {
        ...details,
        // A surface (or an admin key) acting for someone: through which account.
        ...(actor.actor !== ask.caller.principal.id ? { via: ask.caller.principal.id } : {}),
      },
    };
  }
}
