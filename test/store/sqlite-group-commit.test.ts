import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Database } from "../../src/store/sqlite/database.ts";

/**
 * Group commit (Database.grouped): in WAL mode the COMMIT only writes the log and the log is synced off
 * the event loop; each caller is answered after that sync, with its own outcome.
 */
describe("SQLite group commit", () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  async function open(): Promise<{ db: Database; path: string }> {
    dir ??= await mkdtemp(join(tmpdir(), "dispatch-group-commit-"));
    const path = join(dir, "d.db");
    const db = new Database(path);
    db.handle.exec("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
    return { db, path };
  }

  it("answers each write of a group with its own outcome, and keeps the others when one fails", async () => {
    const { db, path } = await open();
    const insert = (id: number) => () =>
      db.sql("INSERT INTO t (id, v) VALUES (?, ?)").run(id, `v${id}`).changes;
    const writes = [
      db.grouped(insert(1)),
      db.grouped(insert(2)),
      db.grouped(insert(1)), // the same key again: only this write fails
      db.grouped(insert(3)),
    ];
    const outcomes = await Promise.allSettled(writes);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    // Later groups (while the first group's sync may still be under way) are answered too.
    await Promise.all([4, 5, 6].map((id) => db.grouped(insert(id))));
    await db.close();

    const reopened = new Database(path);
    const ids = reopened
      .sql("SELECT id FROM t ORDER BY id")
      .all()
      .map((row) => row.id);
    await reopened.close();
    expect(ids).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("commits with synchronous=FULL outside group commits", async () => {
    const { db } = await open();
    await db.grouped(() => db.sql("INSERT INTO t (id, v) VALUES (1, 'a')").run());
    // The NORMAL of a group commit does not leak into the connection's other writes.
    expect(db.sql("PRAGMA synchronous").get()).toEqual({ synchronous: 2 });
    await db.close();
  });

  it("refuses a write once the database is closed instead of leaving it unanswered", async () => {
    const { db } = await open();
    const write = db.grouped(() => db.sql("INSERT INTO t (id, v) VALUES (1, 'a')").run());
    await db.close();
    await expect(write).rejects.toThrow();
  });
});
