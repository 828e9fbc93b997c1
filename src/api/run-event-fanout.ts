import { once } from "node:events";
import type { ServerResponse } from "node:http";
import type { FastifyBaseLogger } from "fastify";
import type { RunService } from "../runs/run-service.ts";
import { EVENT_DATA_MAX_BYTES } from "../store/event-cap.ts";

/** What a stream reads: the transcript after a seq, and the signal that a transcript grew. */
export type RunTranscript = Pick<RunService, "transcript" | "onEventAppended">;

/**
 * What one read of the transcript may hold: events are at most EVENT_DATA_MAX_BYTES each, so a batch of
 * this many is bounded in bytes whatever the run printed, and a client that stops reading pins no more.
 */
export const STREAM_BATCH_BYTES = 2 * 1024 * 1024;
const BATCH = Math.floor(STREAM_BATCH_BYTES / EVENT_DATA_MAX_BYTES);
const KEEPALIVE_MS = 15_000;
const BACKSTOP_MS = 2_000;
const KEEPALIVE = ": keepalive\n\n";

/**
 * The watchers of every run's event stream in this process, over one transcript source. Watchers of the
 * same run share one reader: an append is read from the store once, each event is serialised once, and
 * the same frame is written to every watcher that is caught up. A watcher that is behind (it resumed from
 * an earlier cursor, or its socket stopped taking data) reads the store by itself, one bounded batch per
 * drained socket, until it reaches the shared tail and joins it. Nothing is queued per watcher: one whose
 * socket is full leaves the shared tail and later catches up from the store.
 */
export class RunEventFanout {
  readonly #runs: RunTranscript;
  readonly #groups = new Map<string, RunWatchers>();
  #unsubscribe: (() => void) | undefined;

  constructor(runs: RunTranscript) {
    this.#runs = runs;
  }

  /**
   * Streams `runId`'s events after `after` to `res` (headers already sent) until `res` closes. The caller
   * has checked that whoever asked may see this run: watchers are grouped by run id alone, so a group only
   * ever reads and writes the one run its members were allowed to watch.
   */
  watch(runId: string, res: ServerResponse, after: number, log: FastifyBaseLogger): void {
    // A client that hung up before its stream opened has nothing to watch (and no `close` left to come).
    if (res.destroyed) return;
    let group = this.#groups.get(runId);
    if (!group) {
      const created = new RunWatchers(this.#runs, runId, () => this.#forget(runId, created));
      group = created;
      this.#groups.set(runId, group);
      // One listener for all streams of this process, not one per watcher: an append to any run would
      // otherwise call every open stream's listener.
      this.#unsubscribe ??= this.#runs.onEventAppended((id) => void this.#groups.get(id)?.read());
    }
    group.add(new Watcher(group, res, after, log));
  }

  #forget(runId: string, group: RunWatchers): void {
    // A newer group of the same run may have replaced this one already.
    if (this.#groups.get(runId) !== group) return;
    this.#groups.delete(runId);
    if (this.#groups.size === 0) {
      this.#unsubscribe?.();
      this.#unsubscribe = undefined;
    }
  }
}

/** The watchers of one run, and the reader they share. */
class RunWatchers {
  /** The seq of the last event written to every live watcher; undefined until someone is live. */
  tail: number | undefined;
  /** Caught up with `tail`: they get the shared reader's frames. */
  readonly live = new Set<Watcher>();
  /** Reached the end of the store ahead of `tail`: they join when the shared reader gets there. */
  readonly waiting = new Set<Watcher>();
  readonly #members = new Set<Watcher>();
  #reading = false;
  #again = false;
  readonly #keepalive: NodeJS.Timeout;
  readonly #backstop: NodeJS.Timeout;

  readonly runs: RunTranscript;
  readonly runId: string;
  readonly #onEmpty: () => void;

  constructor(runs: RunTranscript, runId: string, onEmpty: () => void) {
    this.runs = runs;
    this.runId = runId;
    this.#onEmpty = onEmpty;
    this.#keepalive = setInterval(() => {
      for (const w of this.#members) w.write(KEEPALIVE);
    }, KEEPALIVE_MS);
    // Backstop for signals that cannot reach this process (another replica wrote the event).
    this.#backstop = setInterval(() => void this.read(), BACKSTOP_MS);
  }

  add(w: Watcher): void {
    this.#members.add(w);
    void w.catchUp();
  }

  /** Forgets `w` (once, when its stream closes or fails); the last one out stops the group's timers. */
  remove(w: Watcher): void {
    this.#members.delete(w);
    this.live.delete(w);
    this.waiting.delete(w);
    if (this.#members.size === 0) {
      clearInterval(this.#keepalive);
      clearInterval(this.#backstop);
      this.#onEmpty();
    }
  }

  /**
   * A watcher that read the store to its end offers to join the shared tail. Returns false when the tail
   * has already moved past it: it reads on by itself.
   */
  offer(w: Watcher): boolean {
    if (this.#reading) {
      if (this.tail !== undefined && w.lastSent < this.tail) return false;
      // The read under way may stop short of w's cursor; make sure another follows.
      this.waiting.add(w);
      this.#again = true;
      return true;
    }
    if (this.live.size === 0 || this.tail === undefined) {
      this.tail = w.lastSent;
      this.live.add(w);
      return true;
    }
    if (w.lastSent === this.tail) {
      this.live.add(w);
      return true;
    }
    if (w.lastSent < this.tail) return false;
    // w saw events the shared reader has not read yet: wait for it to read them.
    this.waiting.add(w);
    void this.read();
    return true;
  }

  /**
   * Reads what was appended after the tail, once for all live watchers. A signal that arrives while a read
   * is under way asks for another, so a missed or coalesced signal can delay an event but never drop or
   * repeat it.
   */
  async read(): Promise<void> {
    if (this.#reading) {
      this.#again = true;
      return;
    }
    this.#reading = true;
    try {
      do {
        this.#again = false;
        for (;;) {
          const from = this.tail;
          if (from === undefined || (this.live.size === 0 && this.waiting.size === 0)) break;
          const events = await this.runs.transcript(this.runId, from, BATCH);
          for (const event of events) {
            this.#admitWaiting(event.seq);
            const frame = eventFrame(event);
            for (const w of this.live) {
              if (!w.write(frame)) {
                // Its socket is full: it leaves the tail and catches up from the store once drained.
                this.live.delete(w);
                void w.resumeWhenDrained();
              }
              w.lastSent = event.seq;
            }
            this.tail = event.seq;
          }
          if (events.length < BATCH) break;
        }
      } while (this.#again);
    } catch (err) {
      // Every watcher of the tail ends; each reconnects with Last-Event-ID and resumes where it was.
      for (const w of [...this.live, ...this.waiting]) w.fail(err);
    } finally {
      this.#reading = false;
    }
    if (this.tail !== undefined) this.#admitWaiting(Number.POSITIVE_INFINITY, true);
  }

  /**
   * Moves waiting watchers that have everything up to `tail` (and nothing at or after `nextSeq`) into
   * the live set; ones the tail has passed read on by themselves.
   */
  #admitWaiting(nextSeq: number, settled = false): void {
    const tail = this.tail!;
    for (const w of this.waiting) {
      if (w.lastSent < tail) {
        this.waiting.delete(w);
        void w.catchUp();
      } else if (w.lastSent < nextSeq && (!settled || w.lastSent === tail)) {
        this.waiting.delete(w);
        this.live.add(w);
      }
    }
  }
}

/** One open event stream. */
class Watcher {
  lastSent: number;
  /** Closed, or ended after a failed read: nothing more is written. */
  #closed = false;

  readonly group: RunWatchers;
  readonly #res: ServerResponse;
  readonly #log: FastifyBaseLogger;

  constructor(group: RunWatchers, res: ServerResponse, after: number, log: FastifyBaseLogger) {
    this.group = group;
    this.#res = res;
    this.#log = log;
    this.lastSent = after;
    res.on("close", () => this.#close());
  }

  /** Writes unless the stream has closed or was ended; false when the socket wants draining first. */
  write(chunk: string): boolean {
    if (this.#over) return true;
    return this.#res.write(chunk);
  }

  /** Closed, or ended by its route (its viewer left the run's audience): a write now would throw. */
  get #over(): boolean {
    return this.#closed || this.#res.writableEnded;
  }

  /**
   * Reads the store after this watcher's cursor, one bounded batch at a time and not again until the socket
   * has taken the previous one, until it reaches the end; then joins the shared tail.
   */
  async catchUp(): Promise<void> {
    const { runs, runId } = this.group;
    try {
      for (;;) {
        if (this.#over) return;
        const events = await runs.transcript(runId, this.lastSent, BATCH);
        for (const event of events) {
          if (this.#over) return;
          const ok = this.#res.write(eventFrame(event));
          this.lastSent = event.seq;
          if (!ok) await this.#drained();
        }
        if (events.length < BATCH && !this.#over && this.group.offer(this)) return;
      }
    } catch (err) {
      this.fail(err);
    }
  }

  async resumeWhenDrained(): Promise<void> {
    await this.#drained();
    await this.catchUp();
  }

  fail(err: unknown): void {
    if (this.#closed) return;
    this.#log.warn({ err, runId: this.group.runId }, "event stream read failed; closing the stream");
    this.#close();
    this.#res.end();
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.group.remove(this);
  }

  /** Resolves once the response has flushed what it buffered, or has closed (then nothing more is written). */
  async #drained(): Promise<void> {
    if (this.#closed) return;
    const ac = new AbortController();
    try {
      await Promise.race([
        once(this.#res, "drain", { signal: ac.signal }),
        once(this.#res, "close", { signal: ac.signal }),
      ]);
    } finally {
      ac.abort();
    }
  }
}

function eventFrame(event: { seq: number }): string {
  return `id: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`;
}
