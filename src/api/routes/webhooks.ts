import type { FastifyInstance } from "fastify";
import { RunError } from "../../model/errors.ts";
import type { WebhookDelivery, WebhookEndpoint } from "../../model/webhook.ts";
import type { WebhookService } from "../../webhooks/webhook-service.ts";
import { json, operation, route } from "../operation.ts";
import { NoQuerySchema } from "../schemas/common.ts";
import {
  CreatedWebhookSchema,
  CreateWebhookRequestSchema,
  ListWebhookDeliveriesQuerySchema,
  ListWebhookDeliveriesResponseSchema,
  ListWebhooksResponseSchema,
  WebhookDeliverySchema,
  WebhookSchema,
} from "../schemas/webhooks.ts";

export interface WebhookRoutesOptions {
  webhooks: Pick<WebhookService, "create" | "list" | "get" | "delete" | "deliveries" | "redeliver">;
}

const DELIVERY_LIMIT_DEFAULT = 20;

export const webhookOperations = {
  createWebhook: operation({
    id: "createWebhook",
    method: "POST",
    path: "/webhooks",
    tag: "webhooks",
    summary: "Send the team's run events to a URL, signed as Standard Webhooks (admin keys only)",
    description:
      "The answer carries the signing secret, the only time it is shown. A URL whose host is or resolves to a loopback, private, link-local or metadata address is refused (400) unless the server sets DISPATCH_WEBHOOK_ALLOW_PRIVATE=true.",
    access: "admin",
    body: { schema: CreateWebhookRequestSchema, required: true },
    responses: {
      201: { description: "The new webhook and its secret.", content: json(CreatedWebhookSchema) },
    },
    errors: ["invalid_request", "unsupported_media_type"],
  }),
  listWebhooks: operation({
    id: "listWebhooks",
    method: "GET",
    path: "/webhooks",
    tag: "webhooks",
    summary: "The team's webhooks, oldest first (admin keys only)",
    access: "admin",
    query: NoQuerySchema,
    responses: { 200: { description: "The webhooks.", content: json(ListWebhooksResponseSchema) } },
    errors: ["invalid_request"],
  }),
  getWebhook: operation({
    id: "getWebhook",
    method: "GET",
    path: "/webhooks/{webhookId}",
    tag: "webhooks",
    summary: "One webhook, without its secret (admin keys only)",
    access: "admin",
    responses: { 200: { description: "The webhook.", content: json(WebhookSchema) } },
    errors: ["resource_not_found"],
  }),
  deleteWebhook: operation({
    id: "deleteWebhook",
    method: "DELETE",
    path: "/webhooks/{webhookId}",
    tag: "webhooks",
    summary: "Stop sending to a webhook; its deliveries are dropped (admin keys only)",
    access: "admin",
    responses: { 204: { description: "Deleted; nothing more is sent to it." } },
    errors: ["resource_not_found"],
  }),
  listWebhookDeliveries: operation({
    id: "listWebhookDeliveries",
    method: "GET",
    path: "/webhooks/{webhookId}/deliveries",
    tag: "webhooks",
    summary: "A webhook's deliveries, newest first, with their attempts (admin keys only)",
    access: "admin",
    query: ListWebhookDeliveriesQuerySchema,
    responses: {
      200: { description: "A page of deliveries.", content: json(ListWebhookDeliveriesResponseSchema) },
    },
    errors: ["invalid_request", "resource_not_found"],
  }),
  redeliverWebhook: operation({
    id: "redeliverWebhook",
    method: "POST",
    path: "/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver",
    tag: "webhooks",
    summary: "Send a delivery again, with a fresh set of attempts (admin keys only)",
    description:
      "The same event and webhook-id, due at once. 409 `conflict` while an attempt of it is under way.",
    access: "admin",
    responses: { 202: { description: "Pending again.", content: json(WebhookDeliverySchema) } },
    errors: ["resource_not_found", "conflict"],
  }),
};

/** /webhooks: the team's outbound webhooks and their deliveries (admin keys only). */
export async function webhookRoutes(app: FastifyInstance, opts: WebhookRoutesOptions): Promise<void> {
  const { webhooks } = opts;
  const ops = webhookOperations;

  route(app, ops.createWebhook, async (req, reply, { body }) => {
    const created = await webhooks.create(req.caller!, {
      url: body.url,
      ...(body.events ? { events: body.events } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
    });
    return reply.code(201).send({ ...toWire(created), secret: created.secret });
  });

  route(app, ops.listWebhooks, async (req) => ({
    webhooks: (await webhooks.list(req.caller!)).map(toWire),
  }));

  route(app, ops.getWebhook, async (req) => toWire(await webhooks.get(req.caller!, req.params.webhookId)));

  route(app, ops.deleteWebhook, async (req, reply) => {
    await webhooks.delete(req.caller!, req.params.webhookId);
    return reply.code(204).send();
  });

  route(app, ops.listWebhookDeliveries, async (req, _reply, { query }) => {
    const page = await webhooks.deliveries(req.caller!, req.params.webhookId, {
      limit: query.limit ?? DELIVERY_LIMIT_DEFAULT,
      ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
    });
    return {
      deliveries: page.deliveries.map(deliveryToWire),
      page_info: {
        has_next_page: page.nextCursor !== undefined,
        ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}),
      },
    };
  });

  route(app, ops.redeliverWebhook, async (req, reply) => {
    const id = /^[1-9]\d{0,15}$/.test(req.params.deliveryId) ? Number(req.params.deliveryId) : undefined;
    if (id === undefined) {
      throw new RunError(
        "resource_not_found",
        `no delivery "${req.params.deliveryId.slice(0, 40)}"; delivery ids are the numbers GET /api/v1/webhooks/{id}/deliveries lists`,
      );
    }
    const delivery = await webhooks.redeliver(req.caller!, req.params.webhookId, id);
    return reply.code(202).send(deliveryToWire(delivery));
  });
}

function toWire(endpoint: WebhookEndpoint) {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.events,
    ...(endpoint.description !== null ? { description: endpoint.description } : {}),
    created_at: endpoint.createdAt,
    created_by: endpoint.createdBy,
  };
}

function deliveryToWire(d: WebhookDelivery) {
  const optional = (key: string, value: string | number | null) => (value === null ? {} : { [key]: value });
  return {
    id: d.id,
    message_id: d.eventId,
    event_type: d.eventType,
    run_id: d.runId,
    state: d.state,
    attempts: d.attempts,
    ...optional("next_attempt_at", d.nextAttemptAt),
    ...optional("last_attempt_at", d.lastAttemptAt),
    ...optional("last_status", d.lastStatus),
    ...optional("last_error", d.lastError),
    ...optional("response_excerpt", d.responseExcerpt),
    created_at: d.createdAt,
    ...optional("finished_at", d.finishedAt),
  };
}
