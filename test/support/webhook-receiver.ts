import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

/** A webhook as the receiver got it: verified with standardwebhooks against the endpoint's secret. */
export interface ReceivedWebhook {
  id: string;
  type: string;
  // biome-ignore lint/suspicious/noExplicitAny: bodies are asserted field by field
  body: any;
  /** What the receiver answered it. */
  status: number;
}

/**
 * A loopback webhook receiver, as a user would write one: every request is verified with the
 * `standardwebhooks` package (signature, timestamp) before anything in it is believed; one that does not
 * verify is answered 400 and kept in `refused`. `answer` decides the status of each verified request
 * (200 by default); `received` lists them in arrival order.
 */
export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  refused: Array<{ headers: IncomingHttpHeaders; reason: string }>;
  /** The endpoint's secret, as POST /webhooks answered it: set before anything is sent. */
  secret: string | undefined;
  answer: (webhook: Omit<ReceivedWebhook, "status">, attempt: number) => number;
  /** Received webhooks of one run, in arrival order. */
  forRun(runId: string): ReceivedWebhook[];
  close(): Promise<void>;
}

export async function startWebhookReceiver(path = "/hooks"): Promise<WebhookReceiver> {
  const attempts = new Map<string, number>();
  const receiver: WebhookReceiver = {
    url: "",
    received: [],
    refused: [],
    secret: undefined,
    answer: () => 200,
    forRun: (runId) => receiver.received.filter((r) => r.body?.data?.run_id === runId),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body: unknown;
      try {
        if (!receiver.secret) throw new Error("no secret yet");
        body = new Webhook(receiver.secret).verify(raw, req.headers as Record<string, string>);
      } catch (err) {
        receiver.refused.push({ headers: req.headers, reason: String(err) });
        res.writeHead(400).end("signature did not verify");
        return;
      }
      const id = String(req.headers["webhook-id"]);
      const attempt = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, attempt);
      const webhook = { id, type: (body as { type: string }).type, body };
      const status = receiver.answer(webhook, attempt);
      receiver.received.push({ ...webhook, status });
      res
        .writeHead(status, { "content-type": "text/plain" })
        .end(status < 300 ? "ok" : `no thanks (${status})`);
    });
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  return receiver;
}
