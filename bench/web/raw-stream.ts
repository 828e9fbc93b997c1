import { type ClientRequest, request } from "node:http";

/** A frame as read, and performance.now() when its last byte was read. */
export interface Frame {
  event: string;
  data: string;
  at: number;
}

/**
 * A minimal Server-Sent Events reader on node:http, for holding hundreds of streams in one process: fetch's
 * web streams cost enough per chunk that, with 500 streams, this process reading them would dominate the
 * latency measured. Each frame is matched against the waiting predicates once, when it arrives.
 */
export class RawStream {
  status = 0;
  comments = 0;
  readonly frames: Frame[] = [];
  private req: ClientRequest | undefined;
  private waiting: Array<{ match: (f: Frame) => boolean; resolve: (f: Frame) => void }> = [];

  static open(url: string, headers: Record<string, string>): Promise<RawStream> {
    const stream = new RawStream();
    return new Promise((resolve, reject) => {
      stream.req = request(
        url,
        { headers: { accept: "text/event-stream", ...headers }, agent: false },
        (res) => {
          stream.status = res.statusCode ?? 0;
          res.setEncoding("utf8");
          let buffer = "";
          res.on("data", (chunk: string) => {
            buffer += chunk;
            let end = buffer.indexOf("\n\n");
            while (end >= 0) {
              stream.frame(buffer.slice(0, end));
              buffer = buffer.slice(end + 2);
              end = buffer.indexOf("\n\n");
            }
          });
          res.on("error", () => {});
          resolve(stream);
        },
      );
      stream.req.on("error", reject);
      stream.req.end();
    });
  }

  /** The first frame (already read or to come) that `match` accepts. */
  waitFor(match: (f: Frame) => boolean): Promise<Frame> {
    const found = this.frames.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve) => this.waiting.push({ match, resolve }));
  }

  close(): void {
    this.req?.destroy();
  }

  private frame(text: string): void {
    const at = performance.now();
    if (text.startsWith(":")) {
      this.comments += 1;
      return;
    }
    let event = "message";
    let data = "";
    for (const line of text.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data = line.slice(6);
    }
    const frame = { event, data, at };
    this.frames.push(frame);
    this.waiting = this.waiting.filter((w) => {
      if (!w.match(frame)) return true;
      w.resolve(frame);
      return false;
    });
  }
}
