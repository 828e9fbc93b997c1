import type { FastifyInstance } from "fastify";
import type { AuditEvent } from "../../model/audit.ts";
import type { Store } from "../../store/store.ts";
import { json, operation, route } from "../operation.ts";
import { ListAuditEventsQuerySchema, ListAuditEventsResponseSchema } from "../schemas/audit.ts";

export interface AuditRoutesOptions {
  store: Pick<Store, "listAuditEvents">;
}

const LIMIT_DEFAULT = 50;

export const auditOperations = {
  listAuditEvents: operation({
    id: "listAuditEvents",
    method: "GET",
    path: "/audit-events",
    tag: "audit",
    summary: "Who did what in the team, newest first (admin keys only)",
    description:
      "Runs created, followed up, cancelled, retried; API keys and identities created or revoked; sign-ins; webhook changes; channel settings changed from Slack. Filters: `actor`, `action`, `since` (inclusive), `until` (exclusive); keyset pages by `cursor`.",
    access: "admin",
    query: ListAuditEventsQuerySchema,
    responses: { 200: { description: "A page of entries.", content: json(ListAuditEventsResponseSchema) } },
    errors: ["invalid_request"],
  }),
};

/** /audit-events: the team's audit log (admin keys only). */
export async function auditRoutes(app: FastifyInstance, opts: AuditRoutesOptions): Promise<void> {
  route(app, auditOperations.listAuditEvents, async (req, _reply, { query }) => {
    const page = await opts.store.listAuditEvents(req.caller!.team.id, {
      ...(query.actor !== undefined ? { actor: query.actor } : {}),
      ...(query.action !== undefined ? { action: query.action } : {}),
      ...(query.since !== undefined ? { since: query.since } : {}),
      ...(query.until !== undefined ? { until: query.until } : {}),
      ...(query.cursor !== undefined ? { before: query.cursor } : {}),
      limit: query.limit ?? LIMIT_DEFAULT,
    });
    const last = page.events.at(-1);
    return {
      events: page.events.map(auditToWire),
      page_info: {
        has_next_page: page.hasMore,
        ...(page.hasMore && last ? { next_cursor: String(last.id) } : {}),
      },
    };
  });
}

export function auditToWire(e: AuditEvent) {
  return {
    id: e.id,
    at: e.at,
    actor: e.actor,
    ...(e.actorName !== null ? { actor_name: e.actorName } : {}),
    action: e.action,
    ...(e.target !== null ? { target: e.target } : {}),
    details: e.details,
  };
}
