import { type ClientRequest, type IncomingHttpHeaders, type IncomingMessage, request } from "node:http";

/** One Server-Sent Event as it came over the wire: `event` only when the frame named one. */
export interface SseEvent {
  event?: string;
  data: string;
  id?: string;
}

/**
 * The one Server-Sent Events reader of the tests: an event stream as a client holds it, on a connection of
 * its own (from a chosen loopback address when `from` is given, as another machine would connect). It
 * keeps every event in order (`events`), counts comment-only frames (keep-alives), and can be read in order
 * (`next()`, `for await`), searched (`waitFor`), paused like a client that stops reading, and closed.
 */
export class SseStream implements AsyncIterable<SseEvent> {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** A refusal's body (a stream that was not accepted). */
  text = "";
  readonly events: SseEvent[] = [];
  comments = 0;
  /** Why reading stopped, when it was not the server ending the stream or close(). */
  error: unknown;
  /** Resolves when the stream ends: the server ended it, the connection broke, or close(). */
  readonly ended: Promise<void>;
  #done = false;
  #closed = false;
  #buffer = "";
  /** How many events next() has handed out. */
  #taken = 0;
  #waiters: Array<() => void> = [];
  readonly #req: ClientRequest;
  readonly #res: IncomingMessage;

  private constructor(req: ClientRequest, res: IncomingMessage) {
    this.#req = req;
    this.#res = res;
    this.status = res.statusCode ?? 0;
    this.headers = res.headers;
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => this.#receive(chunk));
    res.on("error", (err) => {
      // A reset connection ends the stream as an EventSource sees it; the error is kept for a test to show.
      if (!this.#closed) this.error = err;
    });
    this.ended = new Promise((resolve) =>
      res.on("close", () => {
        this.#done = true;
        this.#wake();
        resolve();
      }),
    );
  }

  /**
   * Opens `url` as an EventSource would. Resolves once an accepted stream's headers have arrived, or once a
   * refusal's whole body has (in `text`).
   */
  static open(
    url: string,
    opts: { headers?: Record<string, string>; from?: string } = {},
  ): Promise<SseStream> {
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          headers: { accept: "text/event-stream", ...opts.headers },
          agent: false,
          ...(opts.from ? { localAddress: opts.from } : {}),
        },
        (res) => {
          const stream = new SseStream(req, res);
          if (stream.status === 200) resolve(stream);
          else void stream.ended.then(() => resolve(stream));
        },
      );
      req.on("error", reject);
      req.end();
    });
  }

  get isEnded(): boolean {
    return this.#done;
  }

  close(): void {
    this.#closed = true;
    this.#req.destroy();
  }

  /** Stops reading, as a client that falls behind: the server's writes fill the socket. */
  pause(): void {
    this.#res.pause();
  }

  resume(): void {
    this.#res.resume();
  }

  /** The next event not yet handed out by next(), waiting for it; undefined once the stream has ended. */
  async next(timeoutMs = 30_000): Promise<SseEvent | undefined> {
    await this.#until(() => this.events.length > this.#taken || this.#done, "the next event", timeoutMs);
    return this.events[this.#taken++];
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SseEvent> {
    for (;;) {
      const event = await this.next();
      if (!event) return;
      yield event;
    }
  }

  /** The first event (from the start of the stream) that `match` accepts, waiting up to `timeoutMs`. */
  async waitFor(match: (e: SseEvent) => boolean, what: string, timeoutMs = 10_000): Promise<SseEvent> {
    await this.#until(() => this.events.some(match) || this.#done, what, timeoutMs);
    const found = this.events.find(match);
    if (!found) throw new Error(`stream ended before ${what}`);
    return found;
  }

  async #until(done: () => boolean, what: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      const left = deadline - Date.now();
      if (left <= 0) {
        const got = this.events.map((e) => e.event ?? "message").join(", ");
        throw new Error(`timed out waiting for ${what}; got ${got || "no event"}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  #receive(chunk: string): void {
    if (this.status !== 200) {
      this.text += chunk;
      return;
    }
    this.#buffer += chunk.replaceAll("\r\n", "\n");
    let end = this.#buffer.indexOf("\n\n");
    while (end >= 0) {
      this.#parse(this.#buffer.slice(0, end));
      this.#buffer = this.#buffer.slice(end + 2);
      end = this.#buffer.indexOf("\n\n");
    }
    this.#wake();
  }

  /** One frame, field by field as the SSE spec reads them (one space after the colon is not the value). */
  #parse(frame: string): void {
    let event: string | undefined;
    let id: string | undefined;
    const data: string[] = [];
    let comment = false;
    for (const line of frame.split("\n")) {
      if (line.startsWith(":")) {
        comment = true;
        continue;
      }
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
      else if (field === "id") id = value;
    }
    if (data.length === 0) {
      if (comment) this.comments += 1;
      return;
    }
    this.events.push({
      data: data.join("\n"),
      ...(event !== undefined ? { event } : {}),
      ...(id !== undefined ? { id } : {}),
    });
  }
}
