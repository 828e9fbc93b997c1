import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { WEBHOOK_EXCERPT_CHARS } from "../model/webhook.ts";
import { guardedLookup, refusalOf, TargetRefused } from "./safe-target.ts";

/** A receiver's answer: its status and the start of its body. */
export interface WebhookAnswer {
  status: number;
  excerpt: string;
}

/** Read of an answer's body, at most: enough for the excerpt in any encoding. */
const EXCERPT_BYTES = WEBHOOK_EXCERPT_CHARS * 4;

/**
 * POSTs one webhook: no redirect is followed (a 3xx is an answer like any other), the connection goes only
 * to addresses safe-target.ts allows, and the whole exchange ends after `timeoutMs`. Only the start of the
 * answer's body is read. Throws, with a message fit to show, when there is no answer.
 */
export function postWebhook(
  url: URL,
  headers: Record<string, string>,
  body: string,
  opts: { timeoutMs: number; allowPrivate: boolean; signal: AbortSignal },
): Promise<WebhookAnswer> {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  // An address written in the URL is connected to without a lookup: it is checked here instead.
  const why = isIP(host) ? refusalOf(host, opts.allowPrivate) : undefined;
  if (why) return Promise.reject(new TargetRefused(`refused: ${why}`));
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = AbortSignal.any([timeout, opts.signal]);
  const client = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      url,
      {
        method: "POST",
        headers: {
          ...headers,
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(body)),
          "user-agent": "Dispatch-Webhooks/1",
        },
        lookup: guardedLookup(opts.allowPrivate),
        agent: false,
        signal,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let answered = false;
        const done = () => {
          if (answered) return;
          answered = true;
          const excerpt = Buffer.concat(chunks).toString("utf8").slice(0, WEBHOOK_EXCERPT_CHARS);
          resolve({ status: res.statusCode ?? 0, excerpt });
          res.destroy();
        };
        res.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= EXCERPT_BYTES) done();
        });
        res.on("end", done);
        res.on("error", () => done());
      },
    );
    req.on("error", (err) => {
      if (timeout.aborted) reject(new Error(`no answer within ${opts.timeoutMs / 1000} s`));
      else if (err instanceof TargetRefused) reject(new TargetRefused(`refused: ${err.message}`));
      else reject(new Error(describe(err)));
    });
    req.end(body);
  });
}

function describe(err: NodeJS.ErrnoException): string {
  if (err.name === "AbortError") return "stopped: Dispatch is shutting down";
  return err.code ? `${err.code}: ${err.message}` : err.message;
}
