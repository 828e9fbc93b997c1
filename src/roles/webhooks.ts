import type { Logger } from "pino";
import type { Metrics } from "../api/metrics.ts";
import type { Config } from "../config.ts";
import type { Store } from "../store/store.ts";
import { WebhookSender, type WebhookSenderOptions } from "../webhooks/webhook-sender.ts";

/**
 * The notifier role's webhook sender (docs/api.md, "Webhooks"): delivers the webhook outbox, whatever
 * surfaces are configured; replicas on one store share the work without sending anything twice.
 */
export function startWebhookSender(deps: {
  config: Config;
  log: Logger;
  store: Store;
  metrics: Metrics;
  publicUrl: () => string;
  options?: Partial<WebhookSenderOptions>;
}): WebhookSender {
  const { webhooks } = deps.config;
  const sender = new WebhookSender({
    store: deps.store,
    log: deps.log,
    publicUrl: deps.publicUrl,
    options: {
      retryBaseMs: webhooks.retryBaseMs,
      maxAttempts: webhooks.maxAttempts,
      allowPrivate: webhooks.allowPrivate,
      ...deps.options,
    },
    onOutcome: (outcome) => deps.metrics.webhookDeliveries.inc({ outcome }),
  });
  sender.start();
  return sender;
}
