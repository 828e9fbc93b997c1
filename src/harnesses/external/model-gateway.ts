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
import { withoutSnapshot } from "../../model/pricing.ts";
import { type ObservedCall, ResponseUsage, type UsageDialect } from "./response-usage.ts";

/** The largest request body the gateway reads (to find its model) before forwarding it: Anthropic's limit. */
const MAX_REQUEST_BYTES = 32 * 2 ** 20;

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

/** Why the gateway does not forward a request: the status and message the agent gets instead. */
export interface Refusal {
  status: number;
  message: string;
}

export interface ModelGatewayOptions {
  /** Unix socket the gateway listens on; the sandbox sees it bound at the same path. */
  socketPath: string;
  route: ProviderRoute;
  /**
   * The provider's model names the agent may call (the run's model, and those the operator allows): a
   * call that names another model, or none, is refused. A dated snapshot of a listed model is the same
   * model (`claude-sonnet-4-5-20250929` for `claude-sonnet-4-5`).
   */
  models: readonly string[];
  /**
   * Asked before every request is forwarded, with the model a call names (undefined for a request that
   * is not a call, such as a model listing): a refusal (the step limit is reached, the model has no price
   * under the run's cost limit), or undefined to forward it. Counts every request the agent makes, like
   * the builtin harness counts its steps.
   */
  admit(model: string | undefined): Refusal | undefined;
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
    this.relay(req, res).catch((err) => {
      this.opts.log.warn({ err }, "model gateway failed to relay a request");
      if (!res.headersSent) refuse(res, 502, "Dispatch's model gateway failed to relay the request");
      else res.destroy();
    });
  }

  private async relay(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
    // The body is read whole before anything is forwarded: the model it names decides whether it may be.
    const body = await readBody(req);
    if (!Buffer.isBuffer(body)) {
      refuse(res, body.status, body.message);
      return;
    }
    const call = req.method !== "GET" && req.method !== "HEAD";
    const model = call ? modelOf(path, body) : undefined;
    const refusal = call ? this.modelRefusal(model) : undefined;
    if (refusal) {
      log.warn({ path, model }, "model gateway refused a call for a model the run may not use");
      refuse(res, refusal.status, refusal.message);
      return;
    }
    const admitted = this.opts.admit(model);
    if (admitted) {
      refuse(res, admitted.status, admitted.message);
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
    if (call) headers["content-length"] = String(body.length);
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
    upstream.end(call ? body : undefined);
  }

  /** Why a model call may not be forwarded: it names no model, or one the run may not use. */
  private modelRefusal(model: string | undefined): Refusal | undefined {
    const allowed = this.opts.models;
    const named = allowed.join(", ");
    if (!model) {
      return {
        status: 400,
        message: `Dispatch's model gateway forwards only calls that name their model (${named})`,
      };
    }
    const asked = withoutSnapshot(model).toLowerCase();
    if (allowed.some((m) => withoutSnapshot(m).toLowerCase() === asked)) return undefined;
    return {
      status: 403,
      message: `Dispatch's model gateway forwards only this run's model (${named}); ${model} is not allowed. The run's config.model_id chooses the model; the operator may allow others with models.gateway_allowed in dispatch.config.yaml`,
    };
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

/**
 * The request's body, or why it is not read: larger than MAX_REQUEST_BYTES, or compressed (the model it
 * names could not be read without inflating what the agent sent).
 */
function readBody(req: IncomingMessage): Promise<Buffer | Refusal> {
  const encoding = header(req.headers["content-encoding"])?.trim().toLowerCase();
  if (encoding && encoding !== "identity") {
    req.resume();
    return Promise.resolve({
      status: 415,
      message: "Dispatch's model gateway does not take compressed request bodies",
    });
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Read to the end either way (the connection stays usable for the answer), keeping at most the limit.
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_REQUEST_BYTES) chunks.push(chunk);
    });
    req.once("end", () => {
      if (size <= MAX_REQUEST_BYTES) resolve(Buffer.concat(chunks));
      else
        resolve({
          status: 413,
          message: `Dispatch's model gateway forwards requests of at most ${MAX_REQUEST_BYTES / 2 ** 20} MiB`,
        });
    });
    req.once("error", reject);
  });
}

/**
 * The model a call names: in its path (Gemini: `/v1beta/models/<model>:generateContent`), else its JSON
 * body's `model` (Anthropic Messages, OpenAI Responses). Undefined when it names none.
 */
function modelOf(path: string, body: Buffer): string | undefined {
  const inPath = /\/models\/([^/:]+)(?::|$)/.exec(decodeURIComponent(path))?.[1];
  if (inPath) return inPath;
  try {
    const parsed: unknown = JSON.parse(body.toString("utf8"));
    const model = (parsed as { model?: unknown } | null)?.model;
    return typeof model === "string" && model !== "" ? model : undefined;
  } catch {
    return undefined;
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
