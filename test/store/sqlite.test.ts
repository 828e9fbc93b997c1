import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { constants, DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Database, migrate } from "../../src/store/sqlite/database.ts";
import { listEvents } from "../../src/store/sqlite/events.ts";
import { listQueuedPrompts } from "../../src/store/sqlite/followups.ts";
import { countActiveRuns, listRuns } from "../../src/store/sqlite/runs.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import type { RunListQuery } from "../../src/store/store.ts";
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
    await db.close();
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

  it("018 keeps apart the head of every patch stored before it", async () => {
    const path = join(dir, "old.db");
    const store = new SqliteStore(path);
    await store.migrate();
    await store.ensureTeam({ id: "t1", name: "Team one" });
    const runId = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
    const now = new Date().toISOString();
    await store.createRun({
      id: runId,
      teamId: "t1",
      title: "a run",
      prompt: "do it",
      state: "QUEUED",
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
      runTimeMs: 0,
      executionStartedAt: null,
      execution: 1,
      sessionId: "s".repeat(32),
      triggerUrl: null,
      source: "API",
      creator: { type: "user", uid: "u1", display_name: "U One" },
      agentConfig: {},
      agentSkill: null,
      statusMessage: null,
      artifacts: [],
      requestUsage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
      metadata: {},
      workerId: null,
      leaseExpiresAt: null,
      agentStarted: false,
      requeueCount: 0,
    });
    const content = Buffer.alloc(1024 * 1024, "+a line\n");
    const uid = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a60";
    await store.recordArtifact(
      runId,
      { artifact_type: "FILE", created_at: now, data: { artifact_uid: uid } },
      { uid, contentType: "text/x-diff", content },
    );
    await store.close();
    // As an install before 018 left it: the patch without its head.
    const db = new DatabaseSync(path);
    db.exec("DROP TABLE artifact_heads; DELETE FROM schema_migrations WHERE version = 18");
    await db.close();

    const upgraded = new SqliteStore(path);
    try {
      await upgraded.migrate();
      const head = await upgraded.readArtifactHead("t1", uid, 4096);
      expect(head?.sizeBytes).toBe(content.length);
      expect(Buffer.from(head!.head).equals(content.subarray(0, 4096))).toBe(true);
    } finally {
      await upgraded.close();
    }
  });
});

describe("SQLite plans and journals", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "dispatch-plans-"));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it("a savepoint's journal of a group commit is kept in memory, not written to a temporary file", async () => {
    const db = new Database(join(dir, "journal.db"));
    try {
      // 2 is MEMORY: SQLite then keeps every savepoint (statement) journal in memory.
      expect(db.handle.prepare("PRAGMA temp_store").get()).toEqual({ temp_store: 2 });
    } finally {
      await db.close();
    }
  });

  it("a statement with a LIMIT (list page, transcript page, active count) is compiled once, not again for every call", async () => {
    const db = new Database(join(dir, "list.db"));
    try {
      migrate(db);
      const pages: RunListQuery[] = [
        { limit: 20, sortBy: "updated_at", sortOrder: "desc" },
        { limit: 5, sortBy: "created_at", sortOrder: "asc", states: ["QUEUED"] },
        { limit: 50, sortBy: "agent", sortOrder: "desc", after: { value: "fixer", id: "r1" } },
      ];
      for (const page of pages) await listRuns(db, "t1", page);
      // SQLite asks the authorizer about every table and column a statement reads while compiling it: a
      // page read from the cached statement asks nothing.
      let compiled = 0;
      db.handle.setAuthorizer(() => {
        compiled += 1;
        return constants.SQLITE_OK;
      });
      for (const page of pages) await listRuns(db, "t1", page); // setting an authorizer expires statements
      compiled = 0;
      for (const page of pages) {
        await listRuns(db, "t1", page);
        await listRuns(db, "t1", { ...page, limit: page.limit + 1 });
      }
      expect(compiled).toBe(0);
      // The same for the other statements with a LIMIT on a hot path: a transcript page (every event
      // stream's catch-up) and the count of active runs (every create).
      await listEvents(db, "r1", 0, 10);
      await countActiveRuns(db, 100);
      expect(compiled).toBeGreaterThan(0); // compiled once each
      compiled = 0;
      for (const limit of [10, 11, 12]) await listEvents(db, "r1", 0, limit);
      for (const upTo of [100, 101, 102]) await countActiveRuns(db, upTo);
      expect(compiled).toBe(0);
      db.handle.setAuthorizer(null);
    } finally {
      await db.close();
    }
  });

  it("a run's queued prompts are found through their index, not by reading every follow-up", async () => {
    const db = new Database(join(dir, "plans.db"));
    try {
      migrate(db);
      // The statements listQueuedPrompts prepares, for one run (a GET) and for a list page.
      const prepared: string[] = [];
      const prepare = db.handle.prepare.bind(db.handle);
      db.handle.prepare = (text: string) => {
        prepared.push(text);
        return prepare(text);
      };
      await listQueuedPrompts(db, ["r1"]);
      await listQueuedPrompts(db, ["r1", "r2"]);
      expect(prepared).toHaveLength(2);
      for (const text of prepared) {
        const plan = (
          prepare(`EXPLAIN QUERY PLAN ${text}`).all(
            ...text
              .split("?")
              .slice(1)
              .map(() => "[]"),
          ) as Array<{
            detail: string;
          }>
        ).map((step) => step.detail);
        expect(plan).toContain("SEARCH followups USING INDEX followups_queued_prompts (run_id=?)");
        expect(plan.filter((step) => step.startsWith("SCAN followups"))).toEqual([]);
      }
    } finally {
      await db.close();
    }
  });
});
