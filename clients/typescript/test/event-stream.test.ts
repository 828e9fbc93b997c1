import { afterEach, describe, expect, it, vi } from "vitest";
import { readServerSentEvents } from "../src/event-stream.ts";
import { APIConnectionError, Dispatch, type RunEvent } from "../src/index.ts";
import { connectionRefused, mockFetch, type SentRequest } from "./support/mock-fetch.ts";

// The SSE reader and the reconnect rules of client.runs.events, against scripted streams.

const encoder = new TextEncoder();

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

function event(seq: number, type = "log"): RunEvent {
  return { seq, at: "2026-01-01T00:00:00.000Z", type, data: { message: `event ${seq}` } };
}

function sse(...events: RunEvent[]): string {
  return events.map((e) => `id: ${e.seq}\ndata: ${JSON.stringify(e)}\n\n`).join("");
}

/** An event-stream response that sends `text` and then stays open (silent) until the request aborts. */
function openStream(req: SentRequest, text: string): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(text));
      req.signal?.addEventListener("abort", () =>
        controller.error(new DOMException("aborted", "AbortError")),
      );
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

const KEY = `dsp_${"a".repeat(40)}`;

afterEach(() => {
  vi.useRealTimers();
});

describe("readServerSentEvents", () => {
  it("parses messages split anywhere across chunks, with CRLF, comments and multi-line data", async () => {
    const text =
      ': stream open\r\n\r\nid: 1\r\ndata: {"a":\ndata: 1}\r\n\r\n: keepalive\n\nretry: 250\nid: 2\ndata:plain\n\n';
    // every possible split point, including between \r and \n
    for (let cut = 0; cut <= text.length; cut++) {
      const messages = [];
      for await (const m of readServerSentEvents(streamOf([text.slice(0, cut), text.slice(cut)])))
        messages.push(m);
      expect(messages).toEqual([
        { data: '{"a":\n1}', id: "1", event: undefined, retry: undefined },
        { data: "plain", id: "2", event: undefined, retry: 250 },
      ]);
    }
  });
});

describe("client.runs.events reconnects", () => {
  it("after a silent connection (no keepalive within the idle window), with Last-Event-ID", async () => {
    vi.useFakeTimers();
    const m = mockFetch(
      (req) => openStream(req, `: stream open\n\n${sse(event(1), event(2))}`),
      (req) => openStream(req, sse(event(3))),
    );
    const dispatch = new Dispatch({
      apiKey: KEY,
      baseURL: "http://127.0.0.1:9",
      fetch: m.fetch,
      timeout: 1_000,
    });
    const seen: number[] = [];
    const iterating = (async () => {
      for await (const e of dispatch.runs.events("r1")) {
        seen.push(e.seq);
        if (e.seq === 3) break;
      }
    })();
    await vi.advanceTimersByTimeAsync(29_000);
    expect(seen).toEqual([1, 2]);
    expect(m.requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(2_000); // idle window is max(timeout, 30 s)
    await iterating;
    expect(seen).toEqual([1, 2, 3]);
    expect(m.requests[0]!.headers.get("accept")).toBe("text/event-stream");
    expect(m.requests[0]!.headers.has("last-event-id")).toBe(false);
    expect(m.requests[1]!.headers.get("last-event-id")).toBe("2");
    expect(m.requests[0]!.signal?.aborted).toBe(true); // the silent connection was hung up
  });

  it("starts after a given event and gives up after maxRetries connections that deliver nothing", async () => {
    vi.useFakeTimers();
    const empty = () => new Response(streamOf([]), { headers: { "content-type": "text/event-stream" } });
    const m = mockFetch((req) => openStream(req, sse(event(6))), empty, empty, empty);
    const dispatch = new Dispatch({
      apiKey: KEY,
      baseURL: "http://127.0.0.1:9",
      fetch: m.fetch,
      maxRetries: 2,
    });
    const seen: number[] = [];
    const iterating = (async () => {
      // (untilTerminal: false — this fake only speaks the stream, not the run's state)
      for await (const e of dispatch.runs.events("r1", { after: 5, untilTerminal: false })) seen.push(e.seq);
    })().catch((err: unknown) => err);
    // the first connection goes silent after event 6 (idle window 60 s), then three deliver nothing
    await vi.advanceTimersByTimeAsync(60_000 + 10_000);
    const err = await iterating;
    expect(err).toBeInstanceOf(APIConnectionError);
    expect(seen).toEqual([6]);
    expect(m.requests[0]!.url.searchParams.get("after")).toBe("5");
    expect(m.requests.slice(1).map((r) => r.headers.get("last-event-id"))).toEqual(["6", "6", "6"]);
  });

  it("through a restart of the server: refused connections on reconnect are retried", async () => {
    vi.useFakeTimers();
    const ended = (text: string) =>
      new Response(streamOf([text]), { headers: { "content-type": "text/event-stream" } });
    const m = mockFetch(
      ended(sse(event(1))),
      connectionRefused(),
      connectionRefused(),
      connectionRefused(),
      (req) => openStream(req, sse(event(2))),
    );
    const dispatch = new Dispatch({
      apiKey: KEY,
      baseURL: "http://127.0.0.1:9",
      fetch: m.fetch,
      maxRetries: 2,
    });
    const seen: number[] = [];
    const iterating = (async () => {
      for await (const e of dispatch.runs.events("r1")) {
        seen.push(e.seq);
        if (e.seq === 2) break;
      }
    })();
    await vi.advanceTimersByTimeAsync(10_000);
    await iterating;
    expect(seen).toEqual([1, 2]);
    expect(m.requests.at(-1)!.headers.get("last-event-id")).toBe("1");
  });

  it("but the first connection's failure is the caller's to see", async () => {
    vi.useFakeTimers();
    const m = mockFetch(connectionRefused(), connectionRefused());
    const dispatch = new Dispatch({
      apiKey: KEY,
      baseURL: "http://127.0.0.1:9",
      fetch: m.fetch,
      maxRetries: 1,
    });
    const iterating = (async () => {
      for await (const _ of dispatch.runs.events("r1")) break;
    })().catch((err: unknown) => err);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await iterating).toBeInstanceOf(APIConnectionError);
    expect(m.requests).toHaveLength(2);
  });

  it("refuses a response that is not an event stream, and a second iteration", async () => {
    const m = mockFetch(new Response("{}", { headers: { "content-type": "application/json" } }));
    const dispatch = new Dispatch({ apiKey: KEY, baseURL: "http://127.0.0.1:9", fetch: m.fetch });
    const stream = dispatch.runs.events("r1");
    const iterate = async () => {
      for await (const _ of stream) break;
    };
    await expect(iterate()).rejects.toThrow(/expected an event stream, got application\/json/);
    await expect(iterate()).rejects.toThrow(/iterated only once/);
    expect(m.requests).toHaveLength(1);
  });
});
