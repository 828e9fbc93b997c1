import { APIPromise, type Fetch, type HeadersLike, type RequestOptions, readEnv, Transport } from "./core.ts";
import { DispatchError } from "./errors.ts";
import { Agents } from "./resources/agents.ts";
import { Artifacts } from "./resources/artifacts.ts";
import { Environments } from "./resources/environments.ts";
import { Identities } from "./resources/identities.ts";
import { Models } from "./resources/models.ts";
import { Runs } from "./resources/runs.ts";
import { Schedules } from "./resources/schedules.ts";
import { Usage } from "./resources/usage.ts";
import { Webhooks } from "./resources/webhooks.ts";

export interface ClientOptions {
  /** Defaults to the DISPATCH_API_KEY environment variable. */
  apiKey?: string | undefined;
  /**
   * The API base, e.g. `https://dispatch.example.com/api/v1`; defaults to DISPATCH_BASE_URL, else
   * `http://127.0.0.1:8080/api/v1` (what `dispatch serve` listens on). A bare origin such as
   * `http://127.0.0.1:8080` gets `/api/v1` appended.
   */
  baseURL?: string | undefined;
  /** Milliseconds per attempt before it is abandoned; default 60 000. */
  timeout?: number | undefined;
  /** Retries after the first attempt for connection errors, 408, 409, 429 and ≥ 500; default 2. */
  maxRetries?: number | undefined;
  /** A fetch implementation; defaults to the global fetch. */
  fetch?: Fetch | undefined;
  /** Headers sent with every request; `null` removes one the client would send. */
  defaultHeaders?: HeadersLike | undefined;
}

export const DEFAULT_BASE_URL = "http://127.0.0.1:8080/api/v1";
export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_RETRIES = 2;

/**
 * The Dispatch API v1 client. Typed calls live on resources that mirror the URL paths
 * (`client.runs` is /agent/runs); `get`/`post`/… reach any other route with the same retries,
 * timeouts, authentication and errors.
 */
export class Dispatch {
  readonly apiKey: string;
  /** The API base, ending in /api/v1 for a Dispatch server. */
  readonly baseURL: string;
  readonly timeout: number;
  readonly maxRetries: number;
  readonly runs: Runs;
  /** /agent/models. */
  readonly models: Models;
  /** /agent/environments. */
  readonly environments: Environments;
  /** /agent: skills as agents. */
  readonly agents: Agents;
  /** /agent/identities (admin keys). */
  readonly identities: Identities;
  /** /agent/artifacts: runs' FILE artifacts (the delivered patch). */
  readonly artifacts: Artifacts;
  /** /agent/schedules: cron-driven agents. */
  readonly schedules: Schedules;
  /** /webhooks: signed run events sent to the team's URLs (admin keys). */
  readonly webhooks: Webhooks;
  /** /usage: spend by person, repository, channel, schedule and model. */
  readonly usage: Usage;
  readonly #options: ClientOptions;
  readonly #transport: Transport;

  constructor(options: ClientOptions = {}) {
    const apiKey = options.apiKey ?? readEnv("DISPATCH_API_KEY");
    if (!apiKey) {
      throw new DispatchError(
        "No API key: set the DISPATCH_API_KEY environment variable or pass apiKey to new Dispatch({ apiKey }).",
      );
    }
    const baseURL = normaliseBaseURL(options.baseURL ?? readEnv("DISPATCH_BASE_URL") ?? DEFAULT_BASE_URL);
    const fetchImpl = options.fetch ?? (globalThis.fetch ? globalThis.fetch.bind(globalThis) : undefined);
    if (!fetchImpl) throw new DispatchError("This runtime has no global fetch: pass one as options.fetch.");
    this.apiKey = apiKey;
    this.baseURL = baseURL;
    this.timeout = nonNegative("timeout", options.timeout ?? DEFAULT_TIMEOUT_MS);
    this.maxRetries = nonNegative("maxRetries", options.maxRetries ?? DEFAULT_MAX_RETRIES);
    this.#options = options;
    this.#transport = new Transport({
      apiKey,
      baseURL,
      timeout: this.timeout,
      maxRetries: this.maxRetries,
      fetch: fetchImpl,
      defaultHeaders: options.defaultHeaders,
    });
    this.runs = new Runs(this.#transport);
    this.models = new Models(this.#transport);
    this.environments = new Environments(this.#transport);
    this.agents = new Agents(this.#transport);
    this.identities = new Identities(this.#transport);
    this.artifacts = new Artifacts(this.#transport);
    this.schedules = new Schedules(this.#transport);
    this.webhooks = new Webhooks(this.#transport);
    this.usage = new Usage(this.#transport);
  }

  /**
   * The server's root (baseURL without /api/v1), for routes outside the API such as
   * `client.get(`${client.serverURL}/healthz`)`.
   */
  get serverURL(): string {
    return this.baseURL.replace(/\/api\/v1$/, "");
  }

  /** A client with some options changed, sharing nothing mutable with this one. */
  withOptions(options: ClientOptions): Dispatch {
    return new Dispatch({
      ...this.#options,
      apiKey: this.apiKey,
      baseURL: this.baseURL,
      timeout: this.timeout,
      maxRetries: this.maxRetries,
      ...options,
    });
  }

  /**
   * Any route: `path` is relative to baseURL (`"agent/runs"` and `"/agent/runs"` alike) or an absolute
   * URL. The body is parsed as JSON when the response says so, else returned as text.
   */
  request<T = unknown>(method: string, path: string | URL, options: RequestOptions = {}): APIPromise<T> {
    return new APIPromise(this.#transport.send(method, path, options), parseByContentType<T>);
  }

  get<T = unknown>(path: string | URL, options?: RequestOptions): APIPromise<T> {
    return this.request("GET", path, options);
  }

  post<T = unknown>(path: string | URL, options?: RequestOptions): APIPromise<T> {
    return this.request("POST", path, options);
  }

  put<T = unknown>(path: string | URL, options?: RequestOptions): APIPromise<T> {
    return this.request("PUT", path, options);
  }

  patch<T = unknown>(path: string | URL, options?: RequestOptions): APIPromise<T> {
    return this.request("PATCH", path, options);
  }

  delete<T = unknown>(path: string | URL, options?: RequestOptions): APIPromise<T> {
    return this.request("DELETE", path, options);
  }
}

function normaliseBaseURL(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new DispatchError(`baseURL is not a URL: ${JSON.stringify(raw)}`);
  }
  if (url.pathname === "/" || url.pathname === "") url.pathname = "/api/v1";
  return url.toString().replace(/\/+$/, "");
}

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new DispatchError(`${name} must be a number ≥ 0`);
  return value;
}

async function parseByContentType<T>(response: Response): Promise<T> {
  const text = await response.text();
  const type = response.headers.get("content-type") ?? "";
  if (text !== "" && /[/+]json\b/.test(type)) return JSON.parse(text) as T;
  return (text === "" ? undefined : text) as T;
}
