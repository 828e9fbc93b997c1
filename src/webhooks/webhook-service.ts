import { randomBytes } from "node:crypto";
import { auditEntry } from "../model/audit.ts";
import { RunError } from "../model/errors.ts";
import type { Caller } from "../model/identity.ts";
import {
  WEBHOOK_EVENT_TYPES,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEventType,
} from "../model/webhook.ts";
import type { Store } from "../store/store.ts";
import { checkTarget, type Resolve, TargetRefused } from "./safe-target.ts";

export type WebhookStore = Pick<
  Store,
  | "createWebhookEndpoint"
  | "listWebhookEndpoints"
  | "getWebhookEndpoint"
  | "deleteWebhookEndpoint"
  | "listWebhookDeliveries"
  | "redeliverWebhook"
  | "appendAuditEvent"
>;

/** A team has at most this many endpoints: each run event is written once per endpoint. */
export const MAX_WEBHOOKS_PER_TEAM = 20;

/**
 * The team's webhook endpoints (docs/api.md, "Webhooks"): created only for a URL safe-target.ts allows,
 * with a signing secret shown once; another team's endpoint is unknown (404). Only admin keys reach it
 * (the API checks the role).
 */
export class WebhookService {
  private readonly store: WebhookStore;
  private readonly allowPrivate: boolean;
  private readonly resolve: Resolve | undefined;

  constructor(store: WebhookStore, opts: { allowPrivate: boolean; resolve?: Resolve }) {
    this.store = store;
    this.allowPrivate = opts.allowPrivate;
    this.resolve = opts.resolve;
  }

  async create(
    caller: Caller,
    input: { url: string; events?: WebhookEventType[]; description?: string },
  ): Promise<WebhookEndpoint> {
    try {
      await checkTarget(input.url, {
        allowPrivate: this.allowPrivate,
        ...(this.resolve ? { resolve: this.resolve } : {}),
      });
    } catch (err) {
      if (err instanceof TargetRefused) throw new RunError("invalid_request", err.message);
      throw err;
    }
    if ((await this.store.listWebhookEndpoints(caller.team.id)).length >= MAX_WEBHOOKS_PER_TEAM) {
      throw new RunError(
        "invalid_request",
        `the team has ${MAX_WEBHOOKS_PER_TEAM} webhooks already; delete one (DELETE /api/v1/webhooks/{id}) first`,
      );
    }
    const endpoint: WebhookEndpoint = {
      id: `wh_${randomBytes(8).toString("hex")}`,
      teamId: caller.team.id,
      url: input.url,
      events: input.events ?? [...WEBHOOK_EVENT_TYPES],
      description: input.description ?? null,
      // Standard Webhooks: whsec_ and the base64 of the key (24 to 64 random bytes).
      secret: `whsec_${randomBytes(32).toString("base64")}`,
      createdBy: caller.principal.id,
      createdAt: new Date().toISOString(),
    };
    await this.store.createWebhookEndpoint(endpoint);
    await this.store.appendAuditEvent(
      auditEntry(caller, "webhook.created", endpoint.id, { url: endpoint.url, events: endpoint.events }),
    );
    return endpoint;
  }

  list(caller: Caller): Promise<WebhookEndpoint[]> {
    return this.store.listWebhookEndpoints(caller.team.id);
  }

  async get(caller: Caller, id: string): Promise<WebhookEndpoint> {
    return (await this.store.getWebhookEndpoint(caller.team.id, id)) ?? notFound(id);
  }

  /** The endpoint as it was, deleted with its deliveries. */
  async delete(caller: Caller, id: string): Promise<WebhookEndpoint> {
    const endpoint = await this.get(caller, id);
    if (!(await this.store.deleteWebhookEndpoint(caller.team.id, id))) notFound(id);
    await this.store.appendAuditEvent(auditEntry(caller, "webhook.deleted", id, { url: endpoint.url }));
    return endpoint;
  }

  /** The endpoint's deliveries, newest first, a page at a time. */
  async deliveries(
    caller: Caller,
    id: string,
    page: { limit: number; cursor?: number },
  ): Promise<{ deliveries: WebhookDelivery[]; nextCursor?: string }> {
    const found = await this.store.listWebhookDeliveries(caller.team.id, id, {
      limit: page.limit,
      ...(page.cursor !== undefined ? { before: page.cursor } : {}),
    });
    if (!found) notFound(id);
    const last = found.deliveries.at(-1);
    return {
      deliveries: found.deliveries,
      ...(found.hasMore && last ? { nextCursor: String(last.id) } : {}),
    };
  }

  async redeliver(caller: Caller, id: string, deliveryId: number): Promise<WebhookDelivery> {
    const result = await this.store.redeliverWebhook(
      caller.team.id,
      id,
      deliveryId,
      new Date().toISOString(),
    );
    if (result === "sending") {
      throw new RunError(
        "conflict",
        `delivery ${deliveryId} is being attempted right now; redeliver it once that attempt is over`,
      );
    }
    if (!result) {
      throw new RunError(
        "resource_not_found",
        `no delivery ${deliveryId} of webhook "${id}"; list them with GET /api/v1/webhooks/${id}/deliveries`,
      );
    }
    await this.store.appendAuditEvent(
      auditEntry(caller, "webhook.redelivered", id, { delivery_id: deliveryId, run_id: result.runId }),
    );
    return result;
  }
}

function notFound(id: string): never {
  throw new RunError(
    "resource_not_found",
    `no webhook "${id}" in this team; list them with GET /api/v1/webhooks`,
  );
}
