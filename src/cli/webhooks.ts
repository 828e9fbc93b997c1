import { parseArgs } from "node:util";
import type { z } from "zod";
import type {
  CreatedWebhookSchema,
  ListWebhookDeliveriesResponseSchema,
  ListWebhooksResponseSchema,
  WebhookDeliverySchema,
  WebhookSchema,
} from "../api/schemas/webhooks.ts";
import {
  apiClient,
  EXIT_OK,
  EXIT_USAGE,
  printJSON,
  reportApiError,
  table,
  UsageError,
} from "./api-output.ts";
import { agoCell, whenLine } from "./time-text.ts";
import { WEBHOOKS_USAGE } from "./webhook-commands.ts";

// The wire shapes, as the server declares them (src/api/schemas/webhooks.ts).
type Webhook = z.output<typeof WebhookSchema>;
type CreatedWebhook = z.output<typeof CreatedWebhookSchema>;
type ListWebhooks = z.output<typeof ListWebhooksResponseSchema>;
type Delivery = z.output<typeof WebhookDeliverySchema>;
type ListDeliveries = z.output<typeof ListWebhookDeliveriesResponseSchema>;

/** `dispatch webhooks list|create|get|delete|deliveries|redeliver`: the team's webhooks (admin key). */
export async function webhooksCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`Usage:\n${WEBHOOKS_USAGE}\n`);
    return sub === undefined ? EXIT_USAGE : EXIT_OK;
  }
  try {
    switch (sub) {
      case "list":
        return await list(rest);
      case "create":
        return await create(rest);
      case "get":
        return await get(rest);
      case "delete":
        return await remove(rest);
      case "deliveries":
        return await deliveries(rest);
      case "redeliver":
        return await redeliver(rest);
      default:
        throw new UsageError(`unknown webhooks command "${sub}"`);
    }
  } catch (err) {
    return reportApiError(err, WEBHOOKS_USAGE);
  }
}

const JSON_FLAG = { json: { type: "boolean" } } as const;

async function list(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: JSON_FLAG });
  const { webhooks } = await apiClient().get<ListWebhooks>("webhooks");
  if (values.json) {
    printJSON(webhooks);
    return EXIT_OK;
  }
  const now = Date.now();
  const rows = webhooks.map((w) => [w.id, agoCell(w.created_at, now), w.events.join(","), w.url]);
  process.stdout.write(table([["ID", "CREATED", "EVENTS", "URL"], ...rows]));
  return EXIT_OK;
}

async function create(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { event: { type: "string", multiple: true }, description: { type: "string" }, ...JSON_FLAG },
  });
  const url = positionals[0];
  if (!url || positionals.length > 1) throw new UsageError("give the URL to send the webhooks to");
  const body = {
    url,
    ...(values.event ? { events: values.event } : {}),
    ...(values.description !== undefined ? { description: values.description } : {}),
  };
  const created = await apiClient().post<CreatedWebhook>("webhooks", { body });
  if (values.json) printJSON(created);
  else {
    process.stdout.write(`${created.id}\n${created.secret}\n`);
    process.stderr.write(
      `Created ${created.id}: the second line is its signing secret, shown only now. Receivers verify the webhook-signature header with it (Standard Webhooks).\n`,
    );
  }
  return EXIT_OK;
}

async function get(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: JSON_FLAG });
  const webhook = await apiClient().get<Webhook>(webhookPath(positionals));
  if (values.json) printJSON(webhook);
  else {
    printFields([
      ["id", webhook.id],
      ["url", webhook.url],
      ["events", webhook.events.join(", ")],
      ["description", webhook.description],
      ["created", whenLine(webhook.created_at)],
      ["created by", webhook.created_by],
    ]);
  }
  return EXIT_OK;
}

async function remove(argv: string[]): Promise<number> {
  const { positionals } = parseArgs({ args: argv, allowPositionals: true, options: {} });
  const path = webhookPath(positionals);
  await apiClient().delete(path);
  process.stdout.write(`Deleted ${positionals[0]}; nothing more is sent to it.\n`);
  return EXIT_OK;
}

async function deliveries(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { limit: { type: "string" }, cursor: { type: "string" }, ...JSON_FLAG },
  });
  const query = {
    ...(values.limit !== undefined ? { limit: values.limit } : {}),
    ...(values.cursor !== undefined ? { cursor: values.cursor } : {}),
  };
  const page = await apiClient().get<ListDeliveries>(`${webhookPath(positionals)}/deliveries`, { query });
  if (values.json) {
    printJSON(page);
    return EXIT_OK;
  }
  const now = Date.now();
  const rows = page.deliveries.map((d) => [
    String(d.id),
    agoCell(d.created_at, now),
    d.event_type,
    d.state,
    String(d.attempts),
    lastAnswer(d),
    d.run_id,
  ]);
  process.stdout.write(
    table([["ID", "CREATED", "EVENT", "STATE", "ATTEMPTS", "LAST ANSWER", "RUN"], ...rows]),
  );
  if (page.page_info.next_cursor) {
    process.stderr.write(
      `More: dispatch webhooks deliveries ${positionals[0]} --cursor ${page.page_info.next_cursor}\n`,
    );
  }
  return EXIT_OK;
}

async function redeliver(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: JSON_FLAG });
  const delivery = positionals[1];
  if (!delivery || !/^\d+$/.test(delivery)) {
    throw new UsageError(
      "give the webhook's id and the delivery's id (see dispatch webhooks deliveries <id>)",
    );
  }
  const again = await apiClient().post<Delivery>(
    `${webhookPath(positionals)}/deliveries/${delivery}/redeliver`,
  );
  if (values.json) printJSON(again);
  else
    process.stdout.write(
      `Delivery ${again.id} is pending again (${again.event_type} of run ${again.run_id}).\n`,
    );
  return EXIT_OK;
}

/** "HTTP 200", "HTTP 500: the excerpt…", or the error when there was no answer. */
function lastAnswer(d: Delivery): string {
  if (d.last_status !== undefined) {
    const excerpt = d.response_excerpt?.replace(/\s+/g, " ").trim().slice(0, 40);
    return excerpt && d.last_status >= 300 ? `HTTP ${d.last_status}: ${excerpt}` : `HTTP ${d.last_status}`;
  }
  return d.last_error?.slice(0, 60) ?? "-";
}

function printFields(fields: Array<[string, string | undefined]>): void {
  const width = Math.max(...fields.map(([k]) => k.length));
  for (const [key, value] of fields) {
    if (value) process.stdout.write(`${key.padEnd(width)}  ${value}\n`);
  }
}

function webhookPath(positionals: string[]): string {
  const id = positionals[0];
  if (!id) throw new UsageError("give the webhook's id (see dispatch webhooks list)");
  return `webhooks/${encodeURIComponent(id)}`;
}
