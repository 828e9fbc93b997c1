import type { AuditAction, AuditEvent } from "../model/audit.ts";
import { type Row, str } from "./rows.ts";

/** An audit_events row as the record both backends return. */
export function toAuditEvent(row: Row): AuditEvent {
  return {
    id: Number(row.id),
    teamId: String(row.team_id),
    at: String(row.at),
    actor: String(row.actor),
    actorName: str(row.actor_name),
    action: row.action as AuditAction,
    target: str(row.target),
    details: JSON.parse(String(row.details)) as Record<string, unknown>,
  };
}
