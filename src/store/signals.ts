import { EventEmitter } from "node:events";

/**
 * Change notifications published by a store after a commit. On SQLite (one process) an in-process
 * emitter carries them; a networked backend publishes them across replicas (PostgreSQL LISTEN/NOTIFY).
 * Listeners must treat a signal as a hint to re-read the store, never as the data itself, and every
 * waiter keeps a polling backstop.
 */
export interface StoreSignalMap {
  /** A run entered QUEUED (created, handed off, re-queued). */
  run_queued: [runId: string];
  /** A run's row changed (state, follow-up, artifact). */
  run_changed: [runId: string];
  /** A transcript event was appended. */
  event_appended: [runId: string, seq: number];
  /** A follow-up was accepted for the run. */
  followup_added: [runId: string];
  /** An API key was revoked (caches of callers must forget it). */
  api_key_revoked: [keyId: string];
  /** The notifier enqueued outbox messages for the run (deliverers wake up). */
  outbox_enqueued: [runId: string];
  /** A schedule was created, changed or deleted (the scheduler re-reads when it is due next). */
  schedule_changed: [];
  /** A webhook delivery was queued or redelivered (the webhook sender wakes up). */
  webhook_queued: [];
}

/** The signals that carry no arguments. */
export type BareSignal = {
  [K in keyof StoreSignalMap]: StoreSignalMap[K] extends [] ? K : never;
}[keyof StoreSignalMap];

export class StoreSignals extends EventEmitter<StoreSignalMap> {
  constructor() {
    super();
    // Every open event stream and running execution listens; the default cap of 10 is far too low.
    this.setMaxListeners(0);
  }
}
