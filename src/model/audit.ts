import type { Caller } from "./identity.ts";

/**
 * The audit log (docs/api.md, "Audit log"): who did what, kept as written (entries are never edited)
 * until DISPATCH_AUDIT_RETENTION_DAYS have passed.
 */

export const AUDIT_ACTIONS = [
  "run.created",
  "run.followed_up",
  "run.cancelled",
  "run.retried",
  "api_key.created",
  "api_key.revoked",
  "identity.created",
  "identity.updated",
  "identity.deleted",
  "session.signed_in",
  "webhook.created",
  "webhook.deleted",
  "webhook.redelivered",
  "channel.repository_set",
  "channel.agent_set",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Who did it: a principal id (a user, a service account) or a surface's user (`slack:T1:U1`). */
export interface AuditActor {
  actor: string;
  /** How people know them, as the action named them then. */
  actorName: string | null;
}

export interface NewAuditEvent extends AuditActor {
  teamId: string;
  at: string;
  action: AuditAction;
  /** What it was done to: a run id, a key id, a webhook id, a channel. */
  target: string | null;
  details: Record<string, unknown>;
}

export interface AuditEvent extends NewAuditEvent {
  id: number;
}

/** A page of the team's audit log, newest first: `before` is the last id of the previous page. */
export interface AuditQuery {
  actor?: string;
  action?: AuditAction;
  /** At or after (RFC 3339). */
  since?: string;
  /** Before (RFC 3339). */
  until?: string;
  before?: number;
  limit: number;
}

/** The entry of `caller`'s action, done now. */
export function auditEntry(
  caller: Pick<Caller, "principal" | "team">,
  action: AuditAction,
  target: string | null,
  details: Record<string, unknown> = {},
): NewAuditEvent {
  return {
    teamId: caller.team.id,
    at: new Date().toISOString(),
    actor: caller.principal.id,
    actorName: caller.principal.displayName,
    action,
    target,
    details,
  };
}
