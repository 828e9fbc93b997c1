import { DatabaseSync } from "node:sqlite";
import { parentPort, workerData } from "node:worker_threads";

/**
 * The thread of WalCheckpointer (wal-checkpointer.ts): a connection of its own to the database, which on
 * each "checkpoint" message copies the write-ahead log into the database file and syncs it, so the
 * event loop's connection never does. It only reads and checkpoints; it never writes rows.
 */
const port = parentPort;
if (!port) throw new Error("wal-checkpoint-worker.ts runs as a worker thread");

const db = new DatabaseSync(String((workerData as { path: string }).path));
// FULL: the log is synced before its pages are copied and the database file after, before the log may
// be written over from its start (SQLite's own order for a checkpoint).
db.exec("PRAGMA synchronous = FULL");
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");

port.on("message", (message: "checkpoint" | "close") => {
  if (message === "close") {
    db.close();
    port.close();
    return;
  }
  try {
    // PASSIVE: copies what no reader still needs and never waits for a reader or the writer.
    const { busy, log, checkpointed } = checkpoint.get() as {
      busy: number;
      log: number;
      checkpointed: number;
    };
    port.postMessage({ ok: true, busy: Number(busy), log: Number(log), checkpointed: Number(checkpointed) });
  } catch (error) {
    // SQLITE_BUSY when another connection (another process) is checkpointing: the next one catches up.
    port.postMessage({ ok: false, error: error instanceof Error ? error.message : String(error) });
  }
});
