import { chmod } from "node:fs/promises";
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from "node:http";
import { request as httpsRequest } from "node:https";
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import type { Logger } from "pino";
import { type ObservedCall, ResponseUsage, type UsageDialect } from "./response-usage.ts";

/** How a provider is reached and authenticated: what the gateway adds to every forwarded request. */
export interface ProviderRoute {
  /** Provider name for logs and error messages ("anthropic", "openai", "gemini"). */
  name: string;
  /** The configured base URL (ANTHROPIC_BASE_URL…); a request's path is appended to it. */
  baseUrl: string;
  /** The paths (after the base URL, query excluded) an agent may call: its model endpoints only. */
  allow: RegExp[];
  /** The headers that carry the real key, set on every forwarded request (the agent's are dropped). */
  credentials: Record<string, string>;
  /** Query parameters that could carry a key and are dropped from what the agent sends (Gemini's `key`). */
  dropQuery?: string[];
}

export interface ModelGatewayOptions {
  /** Unix socket the gateway listens on; the sandbox sees it bound at the same path. */
  socketPath: string;
  route: ProviderRoute;
  /**
   * Asked before every model call is forwarded: false refuses it (the step limit is reached). Counts
   * every call the agent makes, like the builtin harness counts its steps.
   */
  admit(): boolean;
  /**
   * Told each answered model call's usage, read from the provider's response as it is relayed (the run's
   * cost, counted per call so that a run over its cost limit is stopped mid-turn). Not read when absent.
   */
  observe?: { dialect: UsageDialect; call(call: ObservedCall): void };
  log: Logger;
}

/** Headers that describe one hop, or carry credentials the agent holds (placeholders): never forwarded. */
const DROPPED_REQUEST_HEADERS = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "authorization",
  "x-api-key",
  "x-goog-api-key",
  "api-key",
  "cookie",
]);

/**
 * The only way out of a run's sandbox for an external agent: an HTTP server on a unix socket (bound into
 * the sandbox, which has no network of its own) that forwards the agent's model calls to the configured
 * provider with the real key. The agent holds a placeholder key; Dispatch's key never enters the sandbox.
 * Only the provider's model endpoints are reachable (ProviderRoute.allow); responses, event streams
 * included, are relayed as they arrive. One gateway per execution; closing it ends its connections.
 */
export class ModelGateway {
  private readonly server: Server;
  private readonly opts: ModelGatewayOptions;
  private readonly base: URL;

  private constructor(opts: ModelGatewayOptions) {
    this.opts = opts;
    this.base = new URL(opts.route.baseUrl.replace(/\/+$/, ""));
    this.server = createServer((req, res) => this.forward(req, res));
  }

  static async start(opts: ModelGatewayOptions): Promise<ModelGateway> {
    const gateway = new ModelGateway(opts);
    await new Promise<void>((resolve, reject) => {
      gateway.server.once("error", reject);
      gateway.server.listen(opts.socketPath, () => resolve());
    });
    // The agent runs under another uid in its user namespace: it must be able to connect.
    await chmod(opts.socketPath, 0o666);
    return gateway;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private forward(req: IncomingMessage, res: ServerResponse): void {
    const { route, log } = this.opts;
    const incoming = new URL(req.url ?? "/", "http://gateway");
    const path = incoming.pathname;
    if (!route.allow.some((pattern) => pattern.test(path))) {
      log.warn({ method: req.method, path }, "model gateway refused a request outside the model endpoints");
      refuse(
        res,
        403,
        `Dispatch's model gateway forwards only ${route.name} model calls; ${path} is not one`,
      );
      req.resume();
      return;
    }
    if (!this.opts.admit()) {
      refuse(res, 429, "Dispatch's step limit for this run is reached");
      req.resume();
      return;
    }
    const target = new URL(this.base.href);
    target.pathname = `${this.base.pathname.replace(/\/$/, "")}${path}`;
    for (const [name, value] of incoming.searchParams) {
      if (!route.dropQuery?.includes(name)) target.searchParams.append(name, value);
    }
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !DROPPED_REQUEST_HEADERS.has(name)) headers[name] = value;
    }
    Object.assign(headers, route.credentials);
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    const upstream = send(target, { method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, answer.headers);
      const status = answer.statusCode ?? 502;
      if (this.opts.observe && status >= 200 && status < 300) this.observe(answer, path);
      answer.pipe(res);
      answer.on("error", () => res.destroy());
    });
    upstream.on("error", (err) => {
      log.warn({ err: err.message, path }, `model gateway could not reach ${route.name}`);
      if (!res.headersSent) refuse(res, 502, `Dispatch could not reach ${route.name}: ${err.message}`);
      else res.destroy();
    });
    // The agent went away (cancelled, killed): so does its call.
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }

  /** Reads the usage of a relayed answer beside the relay (decompressed when it is), reporting it once. */
  private observe(answer: IncomingMessage, path: string): void {
    const observe = this.opts.observe!;
    const reader = new ResponseUsage(observe.dialect, path, header(answer.headers["content-type"]));
    const decoder = decoderFor(header(answer.headers["content-encoding"]));
    const source: Readable = decoder ? answer.pipe(decoder) : answer;
    // Decoded here, not on the answer: what the agent receives stays byte for byte what the provider sent.
    const text = new StringDecoder("utf8");
    let reported = false;
    const report = () => {
      if (reported) return;
      reported = true;
      const call = reader.end();
      if (!call) return;
      try {
        observe.call(call);
      } catch (err) {
        this.opts.log.warn({ err }, "counting a model call's usage failed");
      }
    };
    source.on("data", (chunk: Buffer) => reader.push(text.write(chunk)));
    source.on("end", () => {
      reader.push(text.end());
      report();
    });
    // A call cut off (the agent stopped, the run cancelled) was billed for what it used so far.
    answer.on("close", () => {
      // A complete compressed answer is reported when its decoder ends (later than this).
      if (!(decoder && answer.complete)) setImmediate(report);
    });
    decoder?.on("error", () => report());
  }
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function decoderFor(encoding: string | undefined) {
  switch (encoding?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return createGunzip();
    case "deflate":
      return createInflate();
    case "br":
      return createBrotliDecompress();
    default:
      return undefined;
  }
}

function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  // Shaped like the providers' own errors, which the CLIs print.
  res.end(
    JSON.stringify({ type: "error", error: { type: "dispatch_gateway_error", message, code: status } }),
  );
}
