import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { storeConformance } from "./conformance/index.ts";

storeConformance("sqlite", async () => {
  const dir = await mkdtemp(join(tmpdir(), "dispatch-store-"));
  return {
    store: new SqliteStore(join(dir, "test.db")),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

describe("SQLite migrations", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "dispatch-migrate-"));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  /**
   * A database as an install before migration 004 left it, holding these notifier cursors: migrated,
   * then 004 struck from schema_migrations so that the next migrate() applies it as an upgrade would.
   */
  const before004 = async (cursors: Array<[name: string, updatedAt: string, runId: string]>) => {
    const path = join(dir, "old.db");
    const store = new SqliteStore(path);
    await store.migrate();
    await store.close();
    const db = new DatabaseSync(path);
    db.prepare("DELETE FROM schema_migrations WHERE version = 4").run();
    const insert = db.prepare("INSERT INTO notifier_cursors (name, updated_at, run_id) VALUES (?, ?, ?)");
    for (const cursor of cursors) insert.run(...cursor);
    db.close();
    return new SqliteStore(path);
  };

  it("004 carries the notifier's read position over from its old name 'slack' to 'notifier'", async () => {
    const store = await before004([["slack", "2026-01-01T00:00:01.000Z", "r1"]]);
    try {
      await store.migrate();
      expect(await store.getNotifierCursor("notifier")).toEqual({
        updatedAt: "2026-01-01T00:00:01.000Z",
        runId: "r1",
      });
      expect(await store.getNotifierCursor("slack")).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it("004 keeps a 'notifier' row that exists already and drops the 'slack' one", async () => {
    const store = await before004([
      ["slack", "2026-01-01T00:00:01.000Z", "r1"],
      ["notifier", "2026-01-01T00:00:02.000Z", "r2"],
    ]);
    try {
      await store.migrate();
      expect(await store.getNotifierCursor("notifier")).toEqual({
        updatedAt: "2026-01-01T00:00:02.000Z",
        runId: "r2",
      });
      expect(await store.getNotifierCursor("slack")).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});
