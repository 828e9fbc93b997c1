import type { AuditEvent, AuditQuery, NewAuditEvent } from "../../model/audit.ts";
import { toAuditEvent } from "../audit-rows.ts";
import type { Database, Sql } from "./database.ts";

/** The audit log: appended, read newest first, pruned after its retention; never updated. */

/** Appends `e`: on its own, or in a transaction (a run's creation records its entry with the run). */
export async function appendAuditEvent(db: Sql, e: NewAuditEvent): Promise<void> {
  await db.changes(
    `INSERT INTO audit_events (team_id, at, actor, actor_name, action, target, details)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [e.teamId, e.at, e.actor, e.actorName, e.action, e.target, JSON.stringify(e.details)],
  );
}

export async function listAuditEvents(
  db: Database,
  teamId: string,
  q: AuditQuery,
): Promise<{ events: AuditEvent[]; hasMore: boolean }> {
  const where = ["team_id = $1"];
  const params: unknown[] = [teamId];
  const conditions: Array<[string, unknown]> = [
    ["actor = ", q.actor],
    ["action = ", q.action],
    ["at >= ", q.since],
    ["at < ", q.until],
    ["id < ", q.before],
  ];
  for (const [condition, value] of conditions) {
    if (value === undefined) continue;
    params.push(value);
    where.push(`${condition}$${params.length}`);
  }
  params.push(q.limit + 1);
  const rows = await db.rows(
    `SELECT * FROM audit_events WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT $${params.length}`,
    params,
  );
  return { events: rows.slice(0, q.limit).map(toAuditEvent), hasMore: rows.length > q.limit };
}

export async function pruneAuditEvents(db: Database, olderThan: string): Promise<number> {
  return db.changes("DELETE FROM audit_events WHERE at < $1", [olderThan]);
}
