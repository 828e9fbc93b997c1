import type { RunEvent, RunEventsResponse, RunItem } from "./api-types.ts";
import {
  backoffMs,
  parseJSON,
  type RequestOptions,
  type SentResponse,
  sleep,
  type Transport,
} from "./core.ts";
import { APIConnectionError, APIError, APIUserAbortError, DispatchError } from "./errors.ts";

/** The server sends a keepalive comment every 15 s; silence for twice that means a dead connection. */
const MIN_IDLE_MS = 30_000;

const TERMINAL = new Set(["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"]);

/**
 * A run's transcript as it happens (GET /agent/runs/{id}/events, Accept: text/event-stream): every
 * event once, in order. When the connection drops, goes silent or the server closes it, the stream
 * reconnects with `Last-Event-ID` and continues after the last event it delivered, so nothing is lost
 * or repeated. By default it ends after the `state` event that finished the run, unless something
 * already came after it (a follow-up restarted the run); with `untilTerminal: false` it follows the
 * transcript until you `break` or abort with the request's `signal`.
 *
 * Reconnecting gives up, with APIConnectionError, after `maxRetries` consecutive reconnects that
 * delivered nothing (each itself retried like any request); errors of the first connection (404,
 * 401, …) and non-transient ones later are thrown as they are.
 */
export class RunEventStream implements AsyncIterable<RunEvent> {
  /** `seq` of the last event delivered; a new stream given `{ after: lastEventId }` continues here. */
  lastEventId: number | undefined;
  readonly #transport: Transport;
  readonly #runPath: string;
  readonly #path: string;
  readonly #options: RequestOptions;
  readonly #untilTerminal: boolean;
  #iterated = false;

  constructor(
    transport: Transport,
    runPath: string,
    params: { after?: number | undefined; untilTerminal?: boolean | undefined },
    options: RequestOptions = {},
  ) {
    this.#transport = transport;
    this.#runPath = runPath;
    this.#path = `${runPath}/events`;
    this.#options = options;
    this.#untilTerminal = params.untilTerminal ?? true;
    this.lastEventId = params.after;
  }

  /** Whether the transcript has events after `seq` (a follow-up restarted the run). */
  async #hasEventsAfter(seq: number): Promise<boolean> {
    const { signal, headers, timeout, maxRetries } = this.#options;
    const sent = await this.#transport.send("GET", this.#path, {
      ...(signal ? { signal } : {}),
      ...(headers ? { headers } : {}),
      ...(timeout !== undefined ? { timeout } : {}),
      ...(maxRetries !== undefined ? { maxRetries } : {}),
      query: { after: seq, limit: 1 },
    });
    try {
      return (await parseJSON<RunEventsResponse>(sent.response)).events.length > 0;
    } finally {
      sent.release();
    }
  }

  /** Started after the run's last event while it is finished: no terminal state event would come. */
  async #finishedBefore(after: number): Promise<boolean> {
    const sent = await this.#transport.send("GET", this.#runPath, {
      ...(this.#options.signal ? { signal: this.#options.signal } : {}),
    });
    let run: RunItem;
    try {
      run = await parseJSON<RunItem>(sent.response);
    } finally {
      sent.release();
    }
    return TERMINAL.has(run.state) && !(await this.#hasEventsAfter(after));
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<RunEvent, void, undefined> {
    if (this.#iterated) throw new DispatchError("a RunEventStream can be iterated only once");
    this.#iterated = true;
    const signal = this.#options.signal ?? undefined;
    const maxRetries = this.#options.maxRetries ?? this.#transport.options.maxRetries;
    const idleMs = Math.max(this.#options.timeout ?? this.#transport.options.timeout, MIN_IDLE_MS);
    let silentConnections = 0;
    let dropsWithoutEvents = 0;
    let serverRetryMs: number | undefined;
    let connected = false;
    if (
      this.#untilTerminal &&
      this.lastEventId !== undefined &&
      (await this.#finishedBefore(this.lastEventId))
    ) {
      return;
    }

    for (;;) {
      const connection = new AbortController();
      const onAbort = () => connection.abort(signal?.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      let idle: ReturnType<typeof setTimeout> | undefined;
      const resetIdle = () => {
        clearTimeout(idle);
        idle = setTimeout(() => connection.abort(new Error("event stream idle")), idleMs);
      };
      let receivedBytes = false;
      let release = () => {};
      try {
        let sent: SentResponse;
        try {
          sent = await this.#transport.send("GET", this.#path, {
            ...this.#options,
            signal: connection.signal,
            query: this.lastEventId === undefined ? {} : { after: this.lastEventId },
            headers: withStreamHeaders(this.#options.headers, this.lastEventId),
          });
        } catch (err) {
          if (signal?.aborted) throw new APIUserAbortError();
          // Reconnecting through a server restart: keep trying within the budget below.
          if (connected && isTransient(err)) throw new StreamDropped();
          throw err;
        }
        connected = true;
        // The request timeout covers connecting; the open stream is watched for silence instead.
        sent.stopTimeout();
        release = sent.release;
        const { response } = sent;
        const type = response.headers.get("content-type") ?? "";
        if (!type.includes("text/event-stream") || !response.body) {
          await response.body?.cancel().catch(() => {});
          throw new DispatchError(`expected an event stream, got ${type || "no content type"}`);
        }
        resetIdle();
        const onBytes = () => {
          receivedBytes = true;
          resetIdle();
        };
        for await (const message of readServerSentEvents(response.body, onBytes)) {
          if (message.retry !== undefined) serverRetryMs = message.retry;
          if (message.data === undefined) continue;
          const event = parseEvent(message.data);
          const id = message.id !== undefined && /^\d+$/.test(message.id) ? Number(message.id) : event.seq;
          this.lastEventId = id;
          dropsWithoutEvents = -1;
          yield event;
          if (
            this.#untilTerminal &&
            event.type === "state" &&
            TERMINAL.has(String(event.data.state)) &&
            !(await this.#hasEventsAfter(event.seq))
          ) {
            return;
          }
        }
      } catch (err) {
        if (signal?.aborted) throw new APIUserAbortError();
        if (err instanceof DispatchError && !(err instanceof StreamDropped)) throw err;
        // otherwise the connection broke mid-stream: resume below
      } finally {
        clearTimeout(idle);
        signal?.removeEventListener("abort", onAbort);
        connection.abort(); // also when the consumer stopped iterating: hang up
        release();
      }
      silentConnections = receivedBytes ? 0 : silentConnections + 1;
      if (silentConnections > maxRetries) {
        throw new APIConnectionError({ message: "The event stream dropped and could not be resumed." });
      }
      // Straight back after a connection that delivered events; backing off while none arrive.
      dropsWithoutEvents += 1;
      const delay = serverRetryMs ?? (dropsWithoutEvents === 0 ? 0 : backoffMs(dropsWithoutEvents - 1));
      await sleep(delay, signal);
    }
  }
}

class StreamDropped extends DispatchError {}

/** Errors worth another reconnect: no connection, or a status the server says is temporary. */
function isTransient(err: unknown): boolean {
  if (err instanceof APIConnectionError) return true;
  const status = err instanceof APIError ? err.status : undefined;
  return status !== undefined && (status === 408 || status === 409 || status === 429 || status >= 500);
}

function parseEvent(data: string): RunEvent {
  try {
    return JSON.parse(data) as RunEvent;
  } catch (err) {
    throw new DispatchError(`an event stream message was not JSON: ${data.slice(0, 200)}`, { cause: err });
  }
}

function withStreamHeaders(
  headers: RequestOptions["headers"],
  lastEventId: number | undefined,
): RequestOptions["headers"] {
  const merged = new Headers();
  if (headers) {
    const entries =
      headers instanceof Headers
        ? [...headers.entries()]
        : Array.isArray(headers)
          ? headers
          : Object.entries(headers).filter(([, v]) => typeof v === "string");
    for (const [k, v] of entries) merged.set(k, String(v));
  }
  merged.set("accept", "text/event-stream");
  if (lastEventId !== undefined) merged.set("last-event-id", String(lastEventId));
  return merged;
}

interface ServerSentEvent {
  /** Undefined for a block without data lines (a comment, or only `retry:`). */
  data: string | undefined;
  id: string | undefined;
  event: string | undefined;
  retry: number | undefined;
}

/** The text/event-stream format of the HTML standard, over any fetch body. */
export async function* readServerSentEvents(
  body: ReadableStream<Uint8Array>,
  onBytes: () => void = () => {},
): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let data: string[] = [];
  let id: string | undefined;
  let event: string | undefined;
  let retry: number | undefined;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onBytes();
      buffer += decoder.decode(value, { stream: true });
      for (;;) {
        const end = buffer.search(/[\r\n]/);
        // A lone \r at the end may be the first half of \r\n: wait for the next chunk.
        if (end < 0 || (buffer[end] === "\r" && end === buffer.length - 1)) break;
        const line = buffer.slice(0, end);
        buffer = buffer.slice(buffer.startsWith("\r\n", end) ? end + 2 : end + 1);
        if (line === "") {
          if (data.length > 0 || retry !== undefined) {
            yield { data: data.length > 0 ? data.join("\n") : undefined, id, event, retry };
          }
          data = [];
          event = undefined;
          retry = undefined;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const fieldValue = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") data.push(fieldValue);
        else if (field === "id" && !fieldValue.includes("\0")) id = fieldValue;
        else if (field === "event") event = fieldValue;
        else if (field === "retry" && /^\d+$/.test(fieldValue)) retry = Number(fieldValue);
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
