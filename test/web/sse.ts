/**
 * A Server-Sent Events reader as a browser's EventSource sees a stream: named events with their data and
 * id, comments apart. Used by the dashboard's tests and its benchmark (bench/web/run.ts).
 */
export interface SseEvent {
  event: string;
  data: string;
  id?: string;
  /** performance.now() when the event was read. */
  at: number;
}

export class SseStream {
  readonly status: number;
  readonly headers: Headers;
  readonly events: SseEvent[] = [];
  comments = 0;
  /** Why reading stopped, when it was not the server ending the stream or close(). */
  error: unknown;
  /** Resolves when the server ends the stream (or it is aborted). */
  readonly ended: Promise<void>;
  private readonly abort: AbortController;
  private waiters: Array<() => void> = [];
  private done = false;

  private constructor(res: Response, abort: AbortController) {
    this.status = res.status;
    this.headers = res.headers;
    this.abort = abort;
    this.ended = this.read(res).finally(() => {
      this.done = true;
      this.wake();
    });
  }

  /** Opens `url`; a response that is not an event stream is returned for the caller to look at. */
  static async open(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
    const abort = new AbortController();
    const res = await fetch(url, {
      headers: { accept: "text/event-stream", ...headers },
      signal: abort.signal,
    });
    return new SseStream(res, abort);
  }

  get isEnded(): boolean {
    return this.done;
  }

  close(): void {
    this.abort.abort();
  }

  /** The first event (from the start of the stream) that `match` accepts, waiting up to `timeoutMs`. */
  async waitFor(match: (e: SseEvent) => boolean, what: string, timeoutMs = 10_000): Promise<SseEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.find(match);
      if (found) return found;
      if (this.done) throw new Error(`stream ended before ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`timed out waiting for ${what}; got ${this.events.map((e) => e.event).join(", ")}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private async read(res: Response): Promise<void> {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end = buffer.indexOf("\n\n");
        while (end >= 0) {
          this.parse(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf("\n\n");
        }
        this.wake();
      }
    } catch (err) {
      // A reset connection ends the stream as an EventSource sees it; the error is kept for a test to show.
      if (!this.abort.signal.aborted) this.error = err;
    }
  }

  private parse(frame: string): void {
    let event = "message";
    const data: string[] = [];
    let id: string | undefined;
    let comment = false;
    for (const line of frame.split("\n")) {
      if (line.startsWith(":")) comment = true;
      else if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
      else if (line.startsWith("id: ")) id = line.slice(4);
    }
    if (data.length === 0) {
      if (comment) this.comments += 1;
      return;
    }
    this.events.push({ event, data: data.join("\n"), ...(id ? { id } : {}), at: performance.now() });
  }
}
