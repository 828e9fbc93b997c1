/**
 * The client's private HTTP machinery: URL and header building, timeouts, retries with backoff,
 * idempotency keys, and turning error responses into error classes. Everything a resource does goes
 * through `Transport.send`; nothing here knows about runs. Uses only what every fetch runtime has.
 */
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  DispatchError,
} from "./errors.ts";

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Header values; `null` removes a header the client would otherwise send. */
export type HeadersLike =
  | Headers
  | Array<[string, string]>
  | Record<string, string | null | undefined | readonly string[]>;

export type QueryValue =
  | string
  | number
  | boolean
  | null
  | undefined
  | ReadonlyArray<string | number | boolean>
  /** Sent as `name[key]=value` pairs (e.g. the runs list's `metadata` filter). */
  | Readonly<Record<string, string | number | boolean>>;

export interface RequestOptions {
  /** Milliseconds before one attempt is abandoned (and retried, or APIConnectionTimeoutError). */
  timeout?: number;
  /** Retries after the first attempt (connection errors, 408, 409, 429, ≥ 500). */
  maxRetries?: number;
  headers?: HeadersLike;
  signal?: AbortSignal | null;
  /** Idempotency-Key of a POST; generated once per call and reused by its retries when not given. */
  idempotencyKey?: string;
  query?: Record<string, QueryValue>;
  /** A JSON value (serialised), or a string/Blob/ArrayBuffer/typed array/URLSearchParams/FormData. */
  body?: unknown;
}

export interface TransportOptions {
  apiKey: string;
  baseURL: string;
  timeout: number;
  maxRetries: number;
  fetch: Fetch;
  defaultHeaders: HeadersLike | undefined;
}

/** A response whose status was 2xx, its body unread. */
export interface SentResponse {
  response: Response;
  /** Stops the timeout but keeps the caller's signal able to abort the body (a stream's). */
  stopTimeout: () => void;
  /** Stops the timeout and lets go of the caller's signal: call once the body is consumed. */
  release: () => void;
  /** Why the request's signal fired, if it did (a body read then fails). */
  abortedBy: () => "timeout" | "caller" | undefined;
}

/** Retry-After values above this are not waited for: the error is raised at once. */
const MAX_RETRY_AFTER_MS = 60_000;
const INITIAL_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 8_000;

export class Transport {
  readonly options: TransportOptions;

  constructor(options: TransportOptions) {
    this.options = options;
  }

  /** `path` relative to baseURL ("agent/runs" or "/agent/runs"), or an absolute URL used as it is. */
  buildURL(path: string | URL, query?: Record<string, QueryValue>): URL {
    const url =
      path instanceof URL
        ? new URL(path)
        : /^[a-z][a-z0-9+.-]*:\/\//i.test(path)
          ? new URL(path)
          : new URL(`${this.options.baseURL.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value === undefined || value === null) continue;
      if (typeof value === "object" && !Array.isArray(value)) {
        for (const [sub, v] of Object.entries(value)) url.searchParams.append(`${key}[${sub}]`, String(v));
        continue;
      }
      for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(key, String(v));
    }
    return url;
  }

  /**
   * Sends one logical request, retrying as the options allow, and resolves with the first 2xx response
   * (body unread). Error responses become the error class for their status, with the problem body.
   */
  async send(method: string, path: string | URL, options: RequestOptions = {}): Promise<SentResponse> {
    const maxRetries = options.maxRetries ?? this.options.maxRetries;
    const timeout = options.timeout ?? this.options.timeout;
    const url = this.buildURL(path, options.query);
    const { body, contentType } = encodeBody(options.body);
    // One key for the whole logical request: a retry after a lost response replays, never duplicates.
    const idempotencyKey =
      method.toUpperCase() === "POST" ? (options.idempotencyKey ?? newIdempotencyKey()) : undefined;
    const headers = this.buildHeaders(url, contentType, idempotencyKey, options.headers);

    for (let attempt = 0; ; attempt++) {
      const retriesLeft = maxRetries - attempt;
      const signal = options.signal ?? undefined;
      if (signal?.aborted) throw new APIUserAbortError();
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(new TimeoutSignal()), timeout);
      const onAbort = () => controller.abort(signal?.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      const stopTimeout = () => clearTimeout(timer);
      const release = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const init: RequestInit = { method, headers, signal: controller.signal };
      if (body !== undefined) init.body = body;

      let response: Response;
      try {
        response = await this.options.fetch(url, init);
      } catch (err) {
        release();
        if (signal?.aborted) throw new APIUserAbortError();
        const timedOut = controller.signal.reason instanceof TimeoutSignal;
        if (retriesLeft > 0) {
          await sleep(backoffMs(attempt), signal);
          continue;
        }
        if (timedOut) throw new APIConnectionTimeoutError();
        throw new APIConnectionError({ cause: err });
      }

      if (response.ok) {
        const abortedBy = () =>
          signal?.aborted
            ? ("caller" as const)
            : controller.signal.reason instanceof TimeoutSignal
              ? ("timeout" as const)
              : undefined;
        return { response, stopTimeout, release, abortedBy };
      }

      const retryDelay =
        retriesLeft > 0 && shouldRetry(response) ? retryDelayMs(response, attempt) : undefined;
      if (retryDelay !== undefined) {
        release();
        await response.body?.cancel().catch(() => {});
        await sleep(retryDelay, signal);
        continue;
      }
      let text: string;
      try {
        text = await response.text();
      } catch (err) {
        if (signal?.aborted) throw new APIUserAbortError();
        if (controller.signal.reason instanceof TimeoutSignal) throw new APIConnectionTimeoutError();
        throw new APIConnectionError({ cause: err });
      } finally {
        release();
      }
      throw APIError.generate(response.status, parseMaybeJSON(text), response.statusText, response.headers);
    }
  }

  private buildHeaders(
    url: URL,
    contentType: string | undefined,
    idempotencyKey: string | undefined,
    extra: HeadersLike | undefined,
  ): Headers {
    const headers = new Headers({ accept: "application/json" });
    if (contentType) headers.set("content-type", contentType);
    // The key goes only to the API's own origin, never to an absolute URL elsewhere.
    if (url.origin === new URL(this.options.baseURL).origin) {
      headers.set("authorization", `Bearer ${this.options.apiKey}`);
    }
    if (idempotencyKey) headers.set("idempotency-key", idempotencyKey);
    mergeHeaders(headers, this.options.defaultHeaders);
    mergeHeaders(headers, extra);
    return headers;
  }
}

class TimeoutSignal extends Error {
  override name = "TimeoutError";
}

function mergeHeaders(into: Headers, from: HeadersLike | undefined): void {
  if (!from) return;
  const entries: Array<[string, unknown]> =
    from instanceof Headers ? [...from.entries()] : Array.isArray(from) ? from : Object.entries(from);
  for (const [name, value] of entries) {
    if (value === null) into.delete(name);
    else if (Array.isArray(value)) {
      into.delete(name);
      for (const v of value) into.append(name, String(v));
    } else if (value !== undefined) into.set(name, String(value));
  }
}

function encodeBody(body: unknown): { body: BodyInit | undefined; contentType: string | undefined } {
  if (body === undefined) return { body: undefined, contentType: undefined };
  if (
    typeof body === "string" ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) ||
    (typeof Blob !== "undefined" && body instanceof Blob) ||
    (typeof FormData !== "undefined" && body instanceof FormData) ||
    body instanceof URLSearchParams
  ) {
    // fetch picks the content type for these (a string goes as text/plain unless headers say otherwise)
    return { body: body as BodyInit, contentType: undefined };
  }
  return { body: JSON.stringify(body), contentType: "application/json" };
}

/** docs/api.md: 409, 429 and ≥ 500 are safe to retry; 408 by HTTP; the server may override either way. */
function shouldRetry(response: Response): boolean {
  const hint = response.headers.get("x-should-retry");
  if (hint === "true") return true;
  if (hint === "false") return false;
  const s = response.status;
  return s === 408 || s === 409 || s === 429 || s >= 500;
}

/** How long to wait before the next attempt; undefined when the server asks for more than we wait. */
function retryDelayMs(response: Response, attempt: number): number | undefined {
  const asked = retryAfterMs(response.headers);
  if (asked === undefined) return backoffMs(attempt);
  if (asked > MAX_RETRY_AFTER_MS) return undefined;
  return Math.max(0, asked);
}

export function retryAfterMs(headers: Headers): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && ms.trim() !== "" && Number.isFinite(Number(ms))) return Number(ms);
  const after = headers.get("retry-after");
  if (after === null || after.trim() === "") return undefined;
  if (Number.isFinite(Number(after))) return Number(after) * 1000;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : date - Date.now();
}

/** Exponential backoff with jitter: 0.5 s, 1 s, 2 s … capped at 8 s, each up to 25 % shorter. */
export function backoffMs(attempt: number): number {
  const base = Math.min(INITIAL_BACKOFF_MS * 2 ** attempt, MAX_BACKOFF_MS);
  return base * (1 - Math.random() * 0.25);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new APIUserAbortError());
    const onAbort = () => {
      clearTimeout(timer);
      reject(new APIUserAbortError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function parseMaybeJSON(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function newIdempotencyKey(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID) return `dispatch-ts-${c.randomUUID()}`;
  let s = "";
  for (let i = 0; i < 32; i++) s += Math.floor(Math.random() * 16).toString(16);
  return `dispatch-ts-${s}`;
}

/** Reads an environment variable on runtimes that have them (Node, Bun, Deno), else undefined. */
export function readEnv(name: string): string | undefined {
  const g = globalThis as {
    process?: { env?: Record<string, string | undefined> };
    Deno?: { env?: { get?: (name: string) => string | undefined } };
  };
  try {
    const value = g.process?.env?.[name] ?? g.Deno?.env?.get?.(name);
    return value?.trim() || undefined;
  } catch {
    return undefined; // Deno without --allow-env
  }
}

/**
 * The promise every typed call returns: awaiting it gives the parsed body; `.asResponse()` the raw
 * Response (body unread); `.withResponse()` both. The request starts when the call is made.
 */
export class APIPromise<T> extends Promise<T> {
  #sent: Promise<SentResponse>;
  #parse: (response: Response) => Promise<T>;
  #parsed: Promise<{ data: T; response: Response }> | undefined;

  constructor(sent: Promise<SentResponse>, parse: (response: Response) => Promise<T>) {
    super((resolve) => resolve(null as T));
    this.#sent = sent;
    this.#parse = parse;
  }

  /** The raw Response of the successful attempt, its body not yet read. */
  asResponse(): Promise<Response> {
    return this.#sent.then(({ response, release }) => {
      release();
      return response;
    });
  }

  /** The parsed body together with the raw Response (status, headers). */
  withResponse(): Promise<{ data: T; response: Response }> {
    this.#parsed ??= this.#sent.then(async ({ response, release, abortedBy }) => {
      try {
        return { data: await this.#parse(response), response };
      } catch (err) {
        if (err instanceof DispatchError) throw err;
        const why = abortedBy();
        if (why === "caller") throw new APIUserAbortError();
        if (why === "timeout") throw new APIConnectionTimeoutError();
        if (err instanceof SyntaxError) {
          throw new DispatchError(`the response was not the JSON expected: ${err.message}`, { cause: err });
        }
        throw new APIConnectionError({ cause: err });
      } finally {
        release();
      }
    });
    return this.#parsed;
  }

  // biome-ignore lint/suspicious/noThenProperty: awaiting it must parse lazily, after asResponse() had its chance
  override then<R1 = T, R2 = never>(
    onfulfilled?: ((value: T) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.withResponse()
      .then((r) => r.data)
      .then(onfulfilled, onrejected);
  }

  override catch<R = never>(onrejected?: ((reason: unknown) => R | PromiseLike<R>) | null): Promise<T | R> {
    return this.then(undefined, onrejected);
  }

  override finally(onfinally?: (() => void) | null): Promise<T> {
    return this.withResponse()
      .then((r) => r.data)
      .finally(onfinally);
  }
}

/** Parses a JSON body; an empty body is `undefined`. */
export async function parseJSON<T>(response: Response): Promise<T> {
  const text = await response.text();
  return (text === "" ? undefined : JSON.parse(text)) as T;
}
