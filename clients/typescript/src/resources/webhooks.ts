import type {
  CreatedWebhook,
  CreateWebhookRequest,
  ListWebhookDeliveriesResponse,
  ListWebhooksResponse,
  Webhook,
  WebhookDelivery,
} from "../api-types.ts";
import { APIPromise, parseJSON, type RequestOptions, type Transport } from "../core.ts";
import { DispatchError } from "../errors.ts";
import type { RunRequestOptions } from "./runs.ts";

export type WebhookCreateParams = CreateWebhookRequest;

export interface WebhookDeliveriesListParams {
  /** 1 to 100; 20 when not given. */
  limit?: number;
  /** `page_info.next_cursor` of the previous page. */
  cursor?: string;
}

/**
 * /webhooks: the team's outbound webhooks (Standard Webhooks: verify deliveries with the secret `create`
 * answers, e.g. with the `standardwebhooks` package). Every call needs an admin key.
 */
export class Webhooks {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** POST /webhooks: the answer's `secret` is shown only here. */
  create(body: WebhookCreateParams, options?: RunRequestOptions): APIPromise<CreatedWebhook> {
    return this.#json("POST", "webhooks", { ...options, body });
  }

  /** GET /webhooks: oldest first. */
  list(options?: RunRequestOptions): APIPromise<ListWebhooksResponse> {
    return this.#json("GET", "webhooks", options);
  }

  /** GET /webhooks/{id}. */
  retrieve(id: string, options?: RunRequestOptions): APIPromise<Webhook> {
    return this.#json("GET", webhookPath(id), options);
  }

  /** DELETE /webhooks/{id}: nothing more is sent to it. */
  delete(id: string, options?: RunRequestOptions): APIPromise<void> {
    return this.#json("DELETE", webhookPath(id), options);
  }

  /** GET /webhooks/{id}/deliveries: newest first, a page at a time. */
  listDeliveries(
    id: string,
    params: WebhookDeliveriesListParams = {},
    options?: RunRequestOptions,
  ): APIPromise<ListWebhookDeliveriesResponse> {
    const query = {
      ...(params.limit !== undefined ? { limit: params.limit } : {}),
      ...(params.cursor !== undefined ? { cursor: params.cursor } : {}),
    };
    return this.#json("GET", `${webhookPath(id)}/deliveries`, { ...options, query });
  }

  /** POST /webhooks/{id}/deliveries/{deliveryId}/redeliver: the same event again, with fresh attempts. */
  redeliver(id: string, deliveryId: number, options?: RunRequestOptions): APIPromise<WebhookDelivery> {
    if (!Number.isInteger(deliveryId) || deliveryId < 1) {
      throw new DispatchError("deliveryId must be a delivery's id (a positive whole number)");
    }
    return this.#json("POST", `${webhookPath(id)}/deliveries/${deliveryId}/redeliver`, options);
  }

  #json<T>(method: string, path: string, options: RequestOptions = {}): APIPromise<T> {
    return new APIPromise(this.#transport.send(method, path, options), parseJSON<T>);
  }
}

function webhookPath(id: string): string {
  if (typeof id !== "string" || id === "") throw new DispatchError("id must be a non-empty string");
  return `webhooks/${encodeURIComponent(id)}`;
}
