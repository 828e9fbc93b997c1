import type { SQLInputValue } from "node:sqlite";
import type { AuditEvent, AuditQuery, NewAuditEvent } from "../../model/audit.ts";
import { toAuditEvent } from "../audit-rows.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";

/** The audit log: appended, read newest first, pruned after its retention; never updated. */

export async function appendAuditEvent(db: Database, e: NewAuditEvent): Promise<void> {
  await db.grouped(() => insertAuditEvent(db, e));
}

/** Appends `e` in the transaction under way (a run's creation records its entry with the run). */
export function insertAuditEvent(db: Database, e: NewAuditEvent): void {
  db.sql(
    `INSERT INTO audit_events (team_id, at, actor, actor_name, action, target, details)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  ).run(e.teamId, e.at, e.actor, e.actorName, e.action, e.target, JSON.stringify(e.details));
}

export async function listAuditEvents(
  db: Database,
  teamId: string,
  q: AuditQuery,
): Promise<{ events: AuditEvent[]; hasMore: boolean }> {
  const where = ["team_id = ?"];
  const params: SQLInputValue[] = [teamId];
  const conditions: Array<[string, SQLInputValue | undefined]> = [
    ["actor = ?", q.actor],
    ["action = ?", q.action],
    ["at >= ?", q.since],
    ["at < ?", q.until],
    ["id < ?", q.before],
  ];
  for (const [condition, value] of conditions) {
    if (value === undefined) continue;
    where.push(condition);
    params.push(value);
  }
  // One cached statement per combination of filters: a bounded set, since values are bound.
  const rows = db
    .sql(`SELECT * FROM audit_events WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT (SELECT ?)`)
    .all(...params, q.limit + 1) as Row[];
  return { events: rows.slice(0, q.limit).map(toAuditEvent), hasMore: rows.length > q.limit };
}

export async function pruneAuditEvents(db: Database, olderThan: string): Promise<number> {
  return db.grouped(() => Number(db.sql("DELETE FROM audit_events WHERE at < ?").run(olderThan).changes));
}
