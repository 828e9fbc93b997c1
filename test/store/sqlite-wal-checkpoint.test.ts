import { copyFile, mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { Database } from "../../src/store/sqlite/database.ts";
import {
  BACKSTOP_AUTOCHECKPOINT_PAGES,
  CHECKPOINT_PAGES,
  HOLD_PAGES,
} from "../../src/store/sqlite/wal-checkpointer.ts";
import { waitFor } from "../support/dispatch.ts";

/**
 * The write-ahead log is checkpointed on a thread of its own (WalCheckpointer), not by the COMMIT of a
 * request on the event loop: what was committed reaches the database file itself, the log restarts from
 * its start under continuous writes (so it stays bounded well below the event loop's backstop), a server
 * that wrote little starts no thread, and another process's commit is still what moves data_version.
 */
describe("SQLite WAL checkpoint off the event loop", () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  // About one page of the table per row.
  const payload = "x".repeat(3000);

  async function open(): Promise<{ db: Database; path: string }> {
    dir ??= await mkdtemp(join(tmpdir(), "dispatch-wal-checkpoint-"));
    const path = join(dir, "d.db");
    const db = new Database(path);
    db.handle.exec("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
    return { db, path };
  }

  function insert(db: Database, id: number): Promise<unknown> {
    return db.grouped(() => db.sql("INSERT INTO t (id, v) VALUES (?, ?)").run(id, payload));
  }

  it("copies group commits into the database file without the event loop's connection doing it", async () => {
    const { db, path } = await open();
    expect(db.sql("PRAGMA wal_autocheckpoint").get()).toEqual({
      wal_autocheckpoint: BACKSTOP_AUTOCHECKPOINT_PAGES,
    });
    const rows = CHECKPOINT_PAGES + 200;
    await Promise.all(Array.from({ length: rows }, (_, id) => insert(db, id)));
    // The checkpoint starts with the next commit after the log passed the threshold.
    await insert(db, rows);
    await waitFor(() => (db.checkpointer?.completed ?? 0) > 0, { what: "a checkpoint by the thread" });

    // The database file alone, without its log, holds every row committed before the checkpoint.
    const copy = join(dir!, "copy.db");
    await copyFile(path, copy);
    const reader = new DatabaseSync(copy, { readOnly: true });
    const { n } = reader.prepare("SELECT count(*) AS n FROM t").get() as { n: number };
    reader.close();
    await db.close();
    expect(Number(n)).toBeGreaterThanOrEqual(rows);
  });

  it("keeps the log bounded under continuous writes: it restarts from its start, not at the backstop", async () => {
    const { db, path } = await open();
    // The thread is started by the first checkpoint; what follows does not wait for it to start.
    let next = 0;
    await Promise.all(Array.from({ length: CHECKPOINT_PAGES + 100 }, () => insert(db, next++)));
    await insert(db, next++);
    await waitFor(() => (db.checkpointer?.completed ?? 0) > 0, { what: "a first checkpoint by the thread" });

    // Writers that each send their next row as soon as the last one is committed: at no moment are
    // group commits absent for long, so the log never empties between them by itself.
    const writers = 16;
    const perWriter = Math.ceil((2 * BACKSTOP_AUTOCHECKPOINT_PAGES) / writers);
    const checkpointsBefore = db.checkpointer?.fullyCopied ?? 0;
    let largestLog = 0;
    await Promise.all(
      Array.from({ length: writers }, async () => {
        for (let i = 0; i < perWriter; i++) {
          await insert(db, next++);
          largestLog = Math.max(largestLog, (await stat(`${path}-wal`)).size);
        }
      }),
    );
    const { n } = db.sql("SELECT count(*) AS n FROM t").get() as { n: number };
    expect(Number(n)).toBe(next);
    expect(db.checkpointer?.fullyCopied).toBeGreaterThan(checkpointsBefore);
    // Twice as many pages were written as the backstop allows in the log, yet the log never reached it:
    // the thread's checkpoints let it restart. (Without the restart it grows to the backstop, where the
    // event loop's connection checkpoints, and the log's file is then at least that long.) However slowly
    // the thread copies (a loaded machine), group commits wait for its round from HOLD_PAGES on.
    const pageBytes = 4096 + 24;
    expect(HOLD_PAGES).toBeLessThan(BACKSTOP_AUTOCHECKPOINT_PAGES);
    expect(largestLog / pageBytes).toBeLessThan(BACKSTOP_AUTOCHECKPOINT_PAGES);
    await db.close();
  });

  it("starts no thread for a few commits (an idle server keeps no checkpoint thread)", async () => {
    const { db } = await open();
    for (let id = 0; id < 20; id++) await insert(db, id);
    db.tx(() => db.sql("INSERT INTO t (id, v) VALUES (?, ?)").run(100, payload));
    expect(db.checkpointer?.threadAlive).toBe(false);
    expect(db.checkpointer?.completed).toBe(0);
    await db.close();
  });

  it("leaves data_version to other processes' commits: a checkpoint does not move it", async () => {
    const { db, path } = await open();
    const before = db.dataVersion();
    await Promise.all(Array.from({ length: CHECKPOINT_PAGES + 10 }, (_, id) => insert(db, id)));
    await insert(db, CHECKPOINT_PAGES + 10);
    await waitFor(() => (db.checkpointer?.completed ?? 0) > 0, { what: "a checkpoint by the thread" });
    // Read again in a later event-loop turn, as the next request would.
    await new Promise((resolve) => setImmediate(resolve));
    expect(db.dataVersion()).toBe(before);

    const other = new DatabaseSync(path);
    other.exec("INSERT INTO t (id, v) VALUES (-1, 'b')");
    other.close();
    // Within the turn the value read is kept; from the next turn on, the other commit is seen.
    expect(db.dataVersion()).toBe(before);
    await new Promise((resolve) => setImmediate(resolve));
    expect(db.dataVersion()).not.toBe(before);
    await db.close();
  });
});
