import { z } from "zod";
import { WEBHOOK_DELIVERY_STATES, WEBHOOK_EVENT_TYPES } from "../../model/webhook.ts";
import { boundedText, Timestamp } from "./common.ts";

/** Outbound webhooks (docs/api.md, "Webhooks"): a team's endpoints and their deliveries. */

const EventTypeSchema = z.enum(WEBHOOK_EVENT_TYPES, {
  error: `events: each must be one of ${WEBHOOK_EVENT_TYPES.join(", ")}`,
});

export const CreateWebhookRequestSchema = z
  .strictObject({
    url: z.string().min(1, "url must not be empty").max(2000, "url must be at most 2000 characters"),
    events: z
      .array(EventTypeSchema)
      .min(1, "events: name at least one event type, or leave it out for all of them")
      .refine((types) => new Set(types).size === types.length, "events: each event type once")
      .optional(),
    description: boundedText(500, "description").optional(),
  })
  .meta({
    id: "CreateWebhookRequest",
    description: "Without `events`, the endpoint gets every event type.",
  });

const endpointFields = {
  id: z.string(),
  url: z.string(),
  events: z.array(EventTypeSchema),
  description: z.string().optional(),
  created_at: Timestamp,
  created_by: z.string(),
};

export const WebhookSchema = z.object(endpointFields).meta({ id: "Webhook" });

export const CreatedWebhookSchema = z
  .object({
    ...endpointFields,
    secret: z.string().meta({
      description:
        "whsec_ and the base64 of the signing key: verify webhook-signature with it (Standard Webhooks). Shown only here.",
    }),
  })
  .meta({ id: "CreatedWebhook" });

export const ListWebhooksResponseSchema = z
  .object({ webhooks: z.array(WebhookSchema) })
  .meta({ id: "ListWebhooksResponse" });

export const WebhookDeliverySchema = z
  .object({
    id: z.number().int(),
    message_id: z.string().meta({ description: "The webhook-id header: the same on every attempt." }),
    event_type: EventTypeSchema,
    run_id: z.string(),
    state: z.enum(WEBHOOK_DELIVERY_STATES),
    attempts: z.number().int(),
    next_attempt_at: Timestamp.optional(),
    last_attempt_at: Timestamp.optional(),
    last_status: z.number().int().optional().meta({ description: "The HTTP status of the last answer." }),
    last_error: z.string().optional(),
    response_excerpt: z.string().optional().meta({ description: "The start of the last answer's body." }),
    created_at: Timestamp,
    finished_at: Timestamp.optional(),
  })
  .meta({ id: "WebhookDelivery" });

export const ListWebhookDeliveriesResponseSchema = z
  .object({
    deliveries: z.array(WebhookDeliverySchema),
    page_info: z.object({ has_next_page: z.boolean(), next_cursor: z.string().optional() }),
  })
  .meta({ id: "ListWebhookDeliveriesResponse" });

export const ListWebhookDeliveriesQuerySchema = z.strictObject({
  limit: z
    .string()
    .regex(/^([1-9]\d?|100)$/, "limit must be a whole number from 1 to 100")
    .transform(Number)
    .meta({ type: "integer", minimum: 1, maximum: 100 })
    .optional(),
  cursor: z
    .string()
    .regex(/^[1-9]\d{0,15}$/, "cursor must be a next_cursor of an earlier page")
    .transform(Number)
    .optional(),
});
