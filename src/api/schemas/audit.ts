import { z } from "zod";
import { AUDIT_ACTIONS } from "../../model/audit.ts";
import { Timestamp, timestampParam } from "./common.ts";

/** The audit log (docs/api.md, "Audit log"). */

export const ListAuditEventsQuerySchema = z.strictObject({
  actor: z.string().min(1).max(200).optional(),
  action: z.enum(AUDIT_ACTIONS, { error: `action must be one of ${AUDIT_ACTIONS.join(", ")}` }).optional(),
  since: timestampParam("since").optional(),
  until: timestampParam("until").optional(),
  limit: z
    .string()
    .regex(/^([1-9]\d?|[1-4]\d\d|500)$/, "limit must be a whole number from 1 to 500")
    .transform(Number)
    .meta({ type: "integer", minimum: 1, maximum: 500 })
    .optional(),
  cursor: z
    .string()
    .regex(/^[1-9]\d{0,15}$/, "cursor must be a next_cursor of an earlier page")
    .transform(Number)
    .optional(),
});

export const AuditEventSchema = z
  .object({
    id: z.number().int(),
    at: Timestamp,
    actor: z.string().meta({
      description: "A principal id, or a surface's user (slack:T…:U…, github:login); `dispatch` for itself.",
    }),
    actor_name: z.string().optional(),
    action: z.enum(AUDIT_ACTIONS),
    target: z.string().optional().meta({ description: "What it was done to: a run, key, webhook, channel." }),
    details: z.record(z.string(), z.unknown()),
  })
  .meta({ id: "AuditEvent" });

export const ListAuditEventsResponseSchema = z
  .object({
    events: z.array(AuditEventSchema),
    page_info: z.object({ has_next_page: z.boolean(), next_cursor: z.string().optional() }),
  })
  .meta({ id: "ListAuditEventsResponse" });
