import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { Database } from "../../src/store/sqlite/database.ts";
import { BACKSTOP_AUTOCHECKPOINT_PAGES } from "../../src/store/sqlite/wal-checkpointer.ts";
import { waitFor } from "../support/dispatch.ts";

/**
 * The write-ahead log is checkpointed on a thread of its own (WalCheckpointer), not by the COMMIT of a
 * request on the event loop: what was committed reaches the database file itself, the event loop's
 * connection checkpoints only past a backstop, and another process's commit is still what moves
 * data_version.
 */
describe("SQLite WAL checkpoint off the event loop", () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  async function open(): Promise<{ db: Database; path: string }> {
    dir ??= await mkdtemp(join(tmpdir(), "dispatch-wal-checkpoint-"));
    const path = join(dir, "d.db");
    const db = new Database(path);
    db.handle.exec("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
    return { db, path };
  }

  it("copies group commits into the database file without the event loop's connection doing it", async () => {
    const { db, path } = await open();
    expect(db.sql("PRAGMA wal_autocheckpoint").get()).toEqual({
      wal_autocheckpoint: BACKSTOP_AUTOCHECKPOINT_PAGES,
    });
    const payload = "x".repeat(4000);
    await Promise.all(
      Array.from({ length: 300 }, (_, id) =>
        db.grouped(() => db.sql("INSERT INTO t (id, v) VALUES (?, ?)").run(id, payload)),
      ),
    );
    await waitFor(() => (db.checkpointer?.completed ?? 0) > 0, { what: "a checkpoint by the thread" });

    // The database file alone, without its log, holds every committed row.
    const copy = join(dir!, "copy.db");
    await copyFile(path, copy);
    const reader = new DatabaseSync(copy, { readOnly: true });
    const { n } = reader.prepare("SELECT count(*) AS n FROM t").get() as { n: number };
    reader.close();
    await db.close();
    expect(Number(n)).toBe(300);
  });

  it("leaves data_version to other processes' commits: a checkpoint does not move it", async () => {
    const { db, path } = await open();
    const before = db.dataVersion();
    await db.grouped(() => db.sql("INSERT INTO t (id, v) VALUES (1, 'a')").run());
    await waitFor(() => (db.checkpointer?.completed ?? 0) > 0, { what: "a checkpoint by the thread" });
    // Read again in a later event-loop turn, as the next request would.
    await new Promise((resolve) => setImmediate(resolve));
    expect(db.dataVersion()).toBe(before);

    const other = new DatabaseSync(path);
    other.exec("INSERT INTO t (id, v) VALUES (2, 'b')");
    other.close();
    // Within the turn the value read is kept; from the next turn on, the other commit is seen.
    expect(db.dataVersion()).toBe(before);
    await new Promise((resolve) => setImmediate(resolve));
    expect(db.dataVersion()).not.toBe(before);
    await db.close();
  });
});
