import { describe, expect, it } from "vitest";
import { type StoreSuite, waitPast } from "./suite.ts";

/** Run progress (stall detection): the time of a run's latest event, and runs in progress listed by it. */
export function progressConformance(t: StoreSuite): void {
  describe("run progress", () => {
    it("records the latest event's time, and lists runs in progress by it rather than by updated_at", async () => {
      const done = await t.runIn("SUCCEEDED");
      const quiet = await t.runIn("INPROGRESS");
      const busy = await t.runIn("INPROGRESS");
      const queued = await t.runIn("QUEUED");
      const before = await t.store.getRun("t1", busy.id);
      expect(before?.lastEventAt).toBeDefined();

      await waitPast(5);
      const mark = new Date().toISOString();
      await waitPast(5);
      const event = await t.store.appendEvent(busy.id, "message", { role: "assistant", text: "still here" });
      const after = await t.store.getRun("t1", busy.id);
      // An event is progress, yet it leaves updated_at alone: only last_event_at tells them apart.
      expect(after?.lastEventAt).toBe(event.at);
      expect(after?.updatedAt).toBe(before?.updatedAt);
      expect(after!.updatedAt < mark).toBe(true);

      const ids = async (range: Parameters<typeof t.store.listRunsByProgress>[0]) =>
        (await t.store.listRunsByProgress(range)).map((p) => p.runId);
      // Quiet since `mark`: the run whose last event is older, not the one whose updated_at is.
      expect(await ids({ before: mark, limit: 10 })).toEqual([quiet.id]);
      expect(await ids({ after: mark, limit: 10 })).toEqual([busy.id]);
      // Only runs in progress, oldest progress first, page by page.
      expect(await ids({ limit: 10 })).toEqual([quiet.id, busy.id]);
      const first = await t.store.listRunsByProgress({ limit: 1 });
      expect(first.map((p) => p.runId)).toEqual([quiet.id]);
      expect(await ids({ limit: 10, cursor: first[0]! })).toEqual([busy.id]);

      const progress = await t.store.getRunProgress([quiet.id, busy.id, queued.id, done.id, "no-such-run"]);
      expect(progress.get(busy.id)).toBe(event.at);
      expect(progress.get(quiet.id)).toBe((await t.store.getRun("t1", quiet.id))?.lastEventAt);
      expect(progress.has(queued.id)).toBe(true);
      expect(progress.has("no-such-run")).toBe(false);
      expect((await t.store.getRunProgress([])).size).toBe(0);
    });

    it("a state change is progress too: it appends a state event", async () => {
      const run = await t.runIn("INPROGRESS");
      const claimedAt = (await t.store.getRun("t1", run.id))?.lastEventAt;
      await waitPast(5);
      await t.store.transition(run.id, "cancel");
      const cancelled = await t.store.getRun("t1", run.id);
      expect(cancelled!.lastEventAt! > claimedAt!).toBe(true);
      expect(cancelled?.lastEventAt).toBe(cancelled?.updatedAt);
      // No longer in progress: never listed as stalled.
      expect(await t.store.listRunsByProgress({ limit: 10 })).toEqual([]);
    });
  });
}
