import { chmod, mkdir, mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { removeExpiredWorkspaces } from "../../src/workspace/workspace-retention.ts";
import { type StoreSuite, storeSuite, waitPast } from "../store/conformance/suite.ts";
import { startTestDispatch, waitFor, waitForState } from "../support/dispatch.ts";

const log = createLogger("silent");

describe("workspace retention", () => {
  let dir: string;
  let store: SqliteStore;
  let runs: StoreSuite;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "dispatch-retention-"));
    store = new SqliteStore(join(dir, "dispatch.db"));
    await store.migrate();
    await store.ensureTeam({ id: "t1", name: "Team one" });
    runs = storeSuite(() => store);
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const workspace = async (runId: string) => {
    const path = join(dir, "workspaces", runId);
    await mkdir(join(path, "src"), { recursive: true });
    await writeFile(join(path, "src", "main.c"), "int main() {}\n");
    return path;
  };

  it("removes the workspaces of runs finished before the cutoff and keeps recent and running ones", async () => {
    const old = await runs.runIn("SUCCEEDED");
    const oldFailed = await runs.runIn("FAILED");
    await waitPast(1);
    const cutoff = new Date().toISOString();
    await waitPast(1);
    const recent = await runs.runIn("SUCCEEDED");
    const running = await runs.runIn("INPROGRESS");
    for (const run of [old, oldFailed, recent, running]) await workspace(run.id);
    // The agent made part of its workspace unreadable and read-only: it goes all the same.
    await chmod(join(dir, "workspaces", oldFailed.id, "src"), 0o000);
    await chmod(join(dir, "workspaces", oldFailed.id), 0o500);

    const removed = await removeExpiredWorkspaces({ store, dataDir: dir, finishedBefore: cutoff, log });

    expect(removed.sort()).toEqual([old.id, oldFailed.id].sort());
    expect((await readdir(join(dir, "workspaces"))).sort()).toEqual([recent.id, running.id].sort());
  });

  it("removes the repository caches no run used since the cutoff and keeps the others", async () => {
    const caches = join(dir, "workspaces", ".repositories");
    await mkdir(join(caches, "unused.git", "objects"), { recursive: true });
    await mkdir(join(caches, "used.git", "objects"), { recursive: true });
    // Each use touches a cache: one last used two hours ago, one now; the cutoff an hour ago.
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    await utimes(join(caches, "unused.git"), twoHoursAgo, twoHoursAgo);
    const cutoff = new Date(Date.now() - 3_600_000).toISOString();
    const removed = await removeExpiredWorkspaces({ store, dataDir: dir, finishedBefore: cutoff, log });
    expect(removed).toEqual([]);
    expect(await readdir(caches)).toEqual(["used.git"]);
    expect(await readdir(join(dir, "workspaces"))).toEqual([".repositories"]);
  });

  it("keeps a workspace whose run a follow-up queued again", async () => {
    const run = await runs.runIn("SUCCEEDED");
    await workspace(run.id);
    await store.transition(run.id, "handoff");
    await waitPast(1);
    const removed = await removeExpiredWorkspaces({
      store,
      dataDir: dir,
      finishedBefore: new Date().toISOString(),
      log,
    });
    expect(removed).toEqual([]);
    expect(await readdir(join(dir, "workspaces"))).toEqual([run.id]);
  });

  /**
   * What Dispatch keeps next to a workspace: the environment marker, delivery's private mirror, and what
   * a crash during a checkpoint's restore left.
   */
  const siblings = async (runId: string) => {
    const root = join(dir, "workspaces");
    await mkdir(join(root, `${runId}.delivery`, "mirror.git", "objects"), { recursive: true });
    await writeFile(join(root, `${runId}.delivery`, "mirror.git", "HEAD"), "ref: refs/heads/main\n");
    await writeFile(join(root, `${runId}.environment-ready`), new Date().toISOString());
    await mkdir(join(root, `${runId}.restoring`, runId, "src"), { recursive: true });
  };

  it("removes a finished run's mirror and environment marker with its workspace, and keeps a running run's", async () => {
    const old = await runs.runIn("SUCCEEDED");
    const orphan = await runs.runIn("FAILED");
    await waitPast(1);
    const cutoff = new Date().toISOString();
    await waitPast(1);
    const running = await runs.runIn("INPROGRESS");
    for (const run of [old, running]) {
      await workspace(run.id);
      await siblings(run.id);
    }
    // Left from before siblings were removed: the mirror of a run whose workspace is already gone.
    await siblings(orphan.id);
    await chmod(join(dir, "workspaces", `${old.id}.delivery`, "mirror.git", "objects"), 0o500);
    const asked: string[] = [];
    const spy = {
      runsFinishedBefore: (ids: string[], before: string) => {
        asked.push(...ids);
        return store.runsFinishedBefore(ids, before);
      },
    };

    const removed = await removeExpiredWorkspaces({ store: spy, dataDir: dir, finishedBefore: cutoff, log });

    expect(removed.sort()).toEqual([old.id, orphan.id].sort());
    expect((await readdir(join(dir, "workspaces"))).sort()).toEqual(
      [
        running.id,
        `${running.id}.delivery`,
        `${running.id}.environment-ready`,
        `${running.id}.restoring`,
      ].sort(),
    );
    // Siblings are not mistaken for runs: the store is asked about each run once, by its id.
    expect(asked.sort()).toEqual([old.id, orphan.id, running.id].sort());
  });

  it("does nothing before any run had a workspace", async () => {
    expect(await removeExpiredWorkspaces({ store, dataDir: dir, finishedBefore: "9999", log })).toEqual([]);
  });
});

describe("a follow-up to a run whose workspace was removed", () => {
  it("starts in a new, empty workspace and says so in the transcript", async () => {
    const t = await startTestDispatch();
    try {
      const created = await t.api("POST", "/api/v1/agent/runs", { prompt: "$ echo draft > notes.txt" });
      const id = created.body.run_id as string;
      await waitForState(t, id, ["SUCCEEDED"]);
      // Retention comes hours later: by then the execution has finished with its workspace (its last
      // checkpoint and clean-up go on briefly after the state is visible).
      await waitFor(() => t.dispatch.executor!.activeRuns === 0, {
        what: "the execution to let go of its slot",
      });
      await waitPast(1);
      const removed = await removeExpiredWorkspaces({
        store: t.dispatch.store,
        dataDir: t.dataDir,
        finishedBefore: new Date().toISOString(),
        log,
      });
      expect(removed).toEqual([id]);

      await t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "$ test ! -e notes.txt && pwd" });
      const run = await waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR"]);
      expect(run.state).toBe("SUCCEEDED");
      const events = (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events as Array<{
        type: string;
        data: Record<string, unknown>;
      }>;
      const notice = events.find((e) => e.type === "log" && e.data.phase === "workspace");
      expect(notice?.data.message).toMatch(/earlier workspace of this run was cleaned up/);
      expect(notice?.data.message).toMatch(/DISPATCH_WORKSPACE_RETENTION_HOURS/);
      const result = events.filter((e) => e.type === "tool_result").at(-1);
      expect(String(result?.data.output)).toContain(`/workspaces/${id}`);
    } finally {
      await t.stop();
    }
  });
});
