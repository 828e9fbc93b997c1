import type { DatabaseSync } from "node:sqlite";
import { Worker } from "node:worker_threads";

/** How long after a commit the log is checkpointed: the commits of those milliseconds share one. */
const CHECKPOINT_DELAY_MS = 200;
/** With no commit for this long, the thread and its connection are let go (idle memory). */
const IDLE_MS = 10_000;
/**
 * The event loop's connection still checkpoints by itself once the log holds this many pages (SQLite's
 * default is 1,000): only if the thread falls that far behind or cannot run, so the log stays bounded.
 */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 10_000;

/**
 * Checkpoints the write-ahead log on a thread of its own (wal-checkpoint-worker.ts). SQLite's automatic
 * checkpoint ran inside the COMMIT that crossed 1,000 pages: on the event loop, copying the log into the
 * database file and syncing both while every request waited (bench/README.md, "Third round: the API
 * path"). Here the connection of the event loop checkpoints only as a backstop, and a commit asks for a
 * checkpoint a little later on the thread, which SQLite coordinates with the writer through the WAL's
 * shared memory, as it does for another process: a checkpoint never copies a page a reader still needs,
 * and the log is reused from its start only once everything in it is in the synced database file.
 *
 * The thread is started on the first commit and stopped after IDLE_MS without one. If it fails, the
 * connection goes back to SQLite's default automatic checkpoint.
 */
export class WalCheckpointer {
  private readonly path: string;
  private readonly handle: DatabaseSync;
  private worker: Worker | undefined;
  private timer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private running = false;
  /** A commit came while a checkpoint was under way: another one follows it. */
  private dirty = false;
  private failed = false;
  private closed = false;
  /** Checkpoints the thread completed (for tests and benches). */
  completed = 0;

  constructor(path: string, handle: DatabaseSync) {
    this.path = path;
    this.handle = handle;
    handle.exec(`PRAGMA wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT_PAGES}`);
  }

  /** A transaction committed to the log: checkpoint it soon. */
  committed(): void {
    if (this.closed || this.failed) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    if (this.running) {
      this.dirty = true;
      return;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => this.start(), CHECKPOINT_DELAY_MS);
    this.timer.unref();
  }

  /**
   * Stops the thread; a checkpoint under way finishes first. Resolves once its connection is closed, so
   * that nothing of it touches the database's files afterwards (a caller may remove them).
   */
  close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    clearTimeout(this.idleTimer);
    return this.stopWorker();
  }

  private start(): void {
    this.timer = undefined;
    if (this.closed || this.failed) return;
    this.running = true;
    this.dirty = false;
    this.thread().postMessage("checkpoint");
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL("./wal-checkpoint-worker.ts", import.meta.url), {
      workerData: { path: this.path },
    });
    // Never what keeps the process alive.
    worker.unref();
    worker.on("message", (result: { ok: boolean }) => this.finished(result.ok));
    worker.on("error", () => this.fail());
    worker.on("exit", () => {
      if (this.worker === worker) this.worker = undefined;
      if (this.running && !this.closed) this.fail();
    });
    this.worker = worker;
    return worker;
  }

  private finished(ok: boolean): void {
    this.running = false;
    if (ok) this.completed += 1;
    if (this.closed) return;
    if (this.dirty) {
      this.committed();
      return;
    }
    this.idleTimer = setTimeout(() => void this.stopWorker(), IDLE_MS);
    this.idleTimer.unref();
  }

  private fail(): void {
    this.running = false;
    this.failed = true;
    void this.stopWorker();
    if (this.handle.isOpen) this.handle.exec("PRAGMA wal_autocheckpoint = 1000");
  }

  private stopWorker(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return Promise.resolve();
    const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
    // Held until its connection is closed: a caller awaiting this must not see the process end first.
    worker.ref();
    worker.postMessage("close");
    return exited;
  }
}
