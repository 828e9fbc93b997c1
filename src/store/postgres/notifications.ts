import pg from "pg";
import type { StoreSignalMap, StoreSignals } from "../signals.ts";

/**
 * The store's signals across replicas: a transaction that changes something sends its signals with
 * pg_notify on one channel (delivered by PostgreSQL only if it commits), and every store keeps one
 * connection that LISTENs there and re-emits what other stores sent on its own `StoreSignals`. A store
 * emits its own signals directly after the commit (they must be seen before the write's promise settles),
 * so it ignores the copies that come back with its own origin.
 *
 * A notification sent while a listener was disconnected is lost; every waiter keeps a polling backstop,
 * and after a reconnect the listener wakes the waiters once so that they re-read the store at once.
 */

export const SIGNAL_CHANNEL = "dispatch_signals";

/** One signal as it travels: its name and its arguments. */
export type SignalNote = { [K in keyof StoreSignalMap]: [K, ...StoreSignalMap[K]] }[keyof StoreSignalMap];

/** PostgreSQL refuses payloads of 8000 bytes or more. */
const PAYLOAD_MAX_BYTES = 7_000;

/** A signal's name: what a store may emit, whichever version of Dispatch sent it (unknown ones find no listener). */
const NAME = /^[a-z][a-z_]{0,63}$/;

/** The payloads carrying `notes` from `origin`, each under PostgreSQL's limit: `{"o": origin, "s": [[name, ...args]]}`. */
export function encodeSignals(origin: string, notes: SignalNote[]): string[] {
  const payloads: string[] = [];
  let batch: SignalNote[] = [];
  let size = 0;
  const flush = () => {
    if (batch.length > 0) payloads.push(JSON.stringify({ o: origin, s: batch }));
    batch = [];
    size = 0;
  };
  for (const note of notes) {
    const bytes = Buffer.byteLength(JSON.stringify(note)) + 1;
    if (size + bytes > PAYLOAD_MAX_BYTES - origin.length - 16) flush();
    batch.push(note);
    size += bytes;
  }
  flush();
  return payloads;
}

/** The notes of a payload sent by another store; undefined for our own or for anything malformed. */
export function decodeSignals(payload: string, ownOrigin: string): SignalNote[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return undefined;
  }
  const { o, s } = (parsed ?? {}) as { o?: unknown; s?: unknown };
  if (typeof o !== "string" || o === ownOrigin || !Array.isArray(s)) return undefined;
  const notes: SignalNote[] = [];
  for (const note of s) {
    if (!Array.isArray(note) || typeof note[0] !== "string" || !NAME.test(note[0])) continue;
    const args = note.slice(1);
    if (!args.every((arg) => typeof arg === "string" || typeof arg === "number")) continue;
    notes.push(note as SignalNote);
  }
  return notes;
}

export function emitNote(signals: StoreSignals, note: SignalNote): void {
  const [name, ...args] = note as [string, ...unknown[]];
  (signals.emit as (name: string, ...args: unknown[]) => boolean).call(signals, name, ...args);
}

/** The LISTEN side: one dedicated connection, reconnected with a growing delay while the store is open. */
export class SignalListener {
  private client: pg.Client | undefined;
  /** Bumped at each LISTEN in place; undefined while not listening (signals of other stores are lost). */
  generation: number | undefined;
  private connections = 0;
  private closed = false;
  private connectedOnce = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = 100;
  private readonly listening: Promise<void>;
  private markListening!: () => void;
  private readonly config: pg.ClientConfig;
  private readonly signals: StoreSignals;
  private readonly origin: string;
  private readonly onError: (err: unknown) => void;

  constructor(
    config: pg.ClientConfig,
    signals: StoreSignals,
    origin: string,
    onError: (err: unknown) => void,
  ) {
    this.config = config;
    this.signals = signals;
    this.origin = origin;
    this.onError = onError;
    this.listening = new Promise((resolve) => {
      this.markListening = resolve;
    });
    void this.connect();
  }

  /** Resolves once the first LISTEN is in place (signals of other stores reach this one from then on). */
  ready(): Promise<void> {
    return this.listening;
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    // keepAlive: a connection that died silently (a replica's network, a failover) is noticed and replaced.
    const client = new pg.Client({ ...this.config, keepAlive: true });
    this.client = client;
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      if (this.client === client) {
        this.client = undefined;
        this.generation = undefined;
      }
      client.removeAllListeners("notification");
      void client.end().catch(() => {});
      if (!this.closed) {
        this.onError(err);
        this.scheduleReconnect();
      }
    };
    client.on("error", fail);
    client.on("end", () => fail(new Error("the LISTEN connection ended")));
    client.on("notification", (msg) => {
      if (msg.channel !== SIGNAL_CHANNEL || !msg.payload) return;
      for (const note of decodeSignals(msg.payload, this.origin) ?? []) emitNote(this.signals, note);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${SIGNAL_CHANNEL}`);
    } catch (err) {
      fail(err);
      return;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.retryDelayMs = 100;
    this.generation = ++this.connections;
    if (this.connectedOnce) this.wakeWaiters();
    this.connectedOnce = true;
    this.markListening();
  }

  private scheduleReconnect(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.connect(), this.retryDelayMs);
    this.retryDelayMs = Math.min(this.retryDelayMs * 2, 5_000);
  }

  /**
   * What was sent while disconnected is lost: wake every kind of waiter once (an id no run has), so that
   * executors claim, notifiers and deliverers tick, the scheduler re-reads, and caches of API keys are
   * dropped now rather than at their next poll.
   */
  private wakeWaiters(): void {
    this.signals.emit("run_queued", "");
    this.signals.emit("run_changed", "");
    this.signals.emit("outbox_enqueued", "");
    this.signals.emit("api_key_revoked", "");
    this.signals.emit("schedule_changed");
    this.signals.emit("webhook_queued");
  }

  async close(): Promise<void> {
    this.closed = true;
    this.generation = undefined;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners("notification");
      await client.end().catch(() => {});
    }
  }
}
