import type { DatabaseSync } from "node:sqlite";
import { Worker } from "node:worker_threads";
import { WalIndex } from "./wal-index.ts";

/**
 * A checkpoint starts once the log holds this many pages not yet in the database file (16 MiB of 4 KiB
 * pages). SQLite's automatic one starts at 1,000, but each round copies the log's hot pages (the ends of
 * the indexes that grow in order) again: at 1,000 the thread cost ≈ 5 µs more CPU per create than at
 * 4,000 (bench/README.md, "Fourth round").
 */
export const CHECKPOINT_PAGES = 4_000;
/** With no checkpoint asked for this long, the thread and its connection are let go (idle memory). */
const IDLE_MS = 10_000;
/**
 * The event loop's connection still checkpoints by itself once the log holds this many pages: only if
 * the thread cannot run (or another process keeps the log from restarting), so the log stays bounded.
 */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 10_000;
/**
 * Group commits wait for the round under way once the log holds this many uncopied pages, so the log
 * stays below the backstop however slowly the thread copies: a thread starved of CPU on a loaded machine
 * (measured: 10,900–12,200 pages with it niced beside busy processes, bench/README.md "Fifth round") or
 * still loading, a slow disk's syncs.
 */
export const HOLD_PAGES = 2 * CHECKPOINT_PAGES;

/** Lets the checkpointer keep group commits from starting for a moment (Database's `grouped`). */
export interface WriteGate {
  hold(): void;
  release(): void;
}

interface CheckpointResult {
  ok: boolean;
}

/**
 * Checkpoints the write-ahead log on a thread of its own (wal-checkpoint-worker.ts). SQLite's automatic
 * checkpoint ran inside the COMMIT that crossed 1,000 pages: on the event loop, copying the log into the
 * database file and syncing both while every request waited (bench/README.md, "Third round: the API
 * path"). Here the event loop's connection checkpoints only as a backstop.
 *
 * Once the log holds CHECKPOINT_PAGES uncopied pages, the thread copies them (PASSIVE: it never blocks
 * the writer). Under continuous writes that copy never ends with the whole log copied — frames are
 * appended while it runs — and SQLite reuses the log from its start only when a write transaction begins
 * with everything in it copied and synced into the database file. So if frames were appended meanwhile,
 * group commits are held and the thread copies that tail (a few milliseconds: the tail and two syncs);
 * the first group let through then restarts the log. Reads go on during the hold; a plain transaction
 * (`tx`) is not held and at worst postpones the restart to the next round. Writers faster than the copy
 * are held too, once the log reaches HOLD_PAGES, until the round ends: a slow round delays writes rather
 * than letting the log grow to the backstop, where the event loop's connection would copy it while
 * nothing else (no read either) runs.
 *
 * The thread starts with the first checkpoint (a server that wrote little never starts it) and stops
 * after IDLE_MS without one. If it fails, the connection goes back to SQLite's default automatic
 * checkpoint.
 */
export class WalCheckpointer {
  private readonly path: string;
  private readonly handle: DatabaseSync;
  private readonly writes: WriteGate;
  private readonly index: WalIndex;
  private worker: Worker | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  /** What the thread is doing: nothing, copying the log, or copying its tail while writes are held. */
  private phase: "idle" | "copying" | "restarting" = "idle";
  /** Group commits are held (while restarting, or while copying a log that reached HOLD_PAGES). */
  private holding = false;
  private failed = false;
  private closed = false;
  /** Checkpoints the thread completed, and of those the ones after which the log could restart. */
  completed = 0;
  fullyCopied = 0;

  constructor(path: string, handle: DatabaseSync, writes: WriteGate) {
    this.path = path;
    this.handle = handle;
    this.writes = writes;
    this.index = new WalIndex(path);
    handle.exec(`PRAGMA wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT_PAGES}`);
  }

  /** Whether the thread (an isolate and a connection, ≈ 29 MB) is alive. */
  get threadAlive(): boolean {
    return this.worker !== undefined;
  }

  /** A transaction committed to the log: checkpoint if the log has grown enough. */
  committed(): void {
    if (this.closed || this.failed) return;
    if (this.phase === "copying" && !this.holding) {
      if (this.index.uncheckpointedPages() >= HOLD_PAGES) this.hold();
      return;
    }
    if (this.phase !== "idle") return;
    if (this.index.uncheckpointedPages() < CHECKPOINT_PAGES) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    this.phase = "copying";
    this.thread().postMessage("checkpoint");
  }

  /**
   * Stops the thread; a checkpoint under way finishes first. Resolves once its connection is closed, so
   * that nothing of it touches the database's files afterwards (a caller may remove them).
   */
  close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    this.release();
    this.phase = "idle";
    this.index.close();
    return this.stopWorker();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL("./wal-checkpoint-worker.ts", import.meta.url), {
      workerData: { path: this.path },
    });
    // Never what keeps the process alive.
    worker.unref();
    worker.on("message", (result: CheckpointResult) => this.finished(result));
    // A thread that was let go (stopWorker) is no longer `this.worker`: only the current one can fail.
    worker.on("error", () => {
      if (this.worker === worker) this.fail();
    });
    worker.on("exit", () => {
      if (this.worker === worker && !this.closed) this.fail();
    });
    this.worker = worker;
    return worker;
  }

  private finished(result: CheckpointResult): void {
    if (this.closed) return;
    // What the thread reports is the log as it stood when it began; the wal-index tells whether frames
    // were appended since.
    const whole = result.ok && this.index.uncheckpointedPages() === 0;
    if (result.ok) this.completed += 1;
    if (whole) this.fullyCopied += 1;
    if (this.phase === "copying" && result.ok && !whole) {
      this.phase = "restarting";
      this.hold();
      this.worker?.postMessage("checkpoint");
      return;
    }
    this.release();
    this.phase = "idle";
    this.idleTimer = setTimeout(() => void this.stopWorker(), IDLE_MS);
    this.idleTimer.unref();
  }

  private fail(): void {
    this.release();
    this.phase = "idle";
    this.failed = true;
    void this.stopWorker();
    if (this.handle.isOpen) this.handle.exec("PRAGMA wal_autocheckpoint = 1000");
  }

  private hold(): void {
    if (this.holding) return;
    this.holding = true;
    this.writes.hold();
  }

  private release(): void {
    if (!this.holding) return;
    this.holding = false;
    this.writes.release();
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
