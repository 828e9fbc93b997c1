import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { NewRunCheckpoint } from "../../../src/store/store.ts";
import { type StoreSuite, W, waitPast } from "./suite.ts";

export function checkpointsConformance(t: StoreSuite): void {
  const checkpoint = (over: Partial<NewRunCheckpoint> = {}): NewRunCheckpoint => {
    const snapshot = randomBytes(70_000);
    return {
      takenAt: new Date().toISOString(),
      sizeBytes: snapshot.length + 1234,
      refSha: "0123456789abcdef0123456789abcdef01234567",
      snapshot,
      ...over,
    };
  };

  describe("run checkpoints", () => {
    it("keeps the latest checkpoint of a run, bytes intact, with the execution and worker that took it", async () => {
      const run = await t.runIn("INPROGRESS");
      expect(await t.store.loadCheckpoint(run.id)).toBeUndefined();
      const first = checkpoint();
      expect(await t.store.saveCheckpoint(run.id, W, first)).toBe(true);
      const second = checkpoint({ refSha: null });
      expect(await t.store.saveCheckpoint(run.id, W, second)).toBe(true);
      const loaded = await t.store.loadCheckpoint(run.id);
      expect(loaded).toMatchObject({
        runId: run.id,
        execution: 1,
        workerId: W,
        takenAt: second.takenAt,
        sizeBytes: second.sizeBytes,
        refSha: null,
      });
      expect(Buffer.from(loaded!.snapshot).equals(Buffer.from(second.snapshot))).toBe(true);
    });

    it("is fenced: only the worker holding the run in progress writes, a stale one never overwrites", async () => {
      const run = await t.create();
      await t.store.claimNextRun(W, 1);
      const mine = checkpoint();
      expect(await t.store.saveCheckpoint(run.id, W, mine)).toBe(true);
      expect(await t.store.saveCheckpoint(run.id, "someone-else", checkpoint())).toBe(false);
      expect(await t.store.holdsRun(run.id, W)).toBe(true);
      expect(await t.store.holdsRun(run.id, "someone-else")).toBe(false);

      // The lease expires and another worker takes the run over.
      await waitPast(2);
      await t.store.recoverExpiredLeases();
      expect((await t.store.claimNextRun("worker-b", 60_000))?.id).toBe(run.id);
      const theirs = checkpoint({ refSha: "fedcba9876543210fedcba9876543210fedcba98" });
      expect(await t.store.saveCheckpoint(run.id, W, checkpoint())).toBe(false);
      expect(await t.store.holdsRun(run.id, W)).toBe(false);
      expect(await t.store.holdsRun(run.id, "worker-b")).toBe(true);
      expect(await t.store.saveCheckpoint(run.id, "worker-b", theirs)).toBe(true);
      expect(await t.store.saveCheckpoint(run.id, W, checkpoint())).toBe(false);
      expect(await t.store.loadCheckpoint(run.id)).toMatchObject({
        workerId: "worker-b",
        refSha: theirs.refSha,
        takenAt: theirs.takenAt,
      });

      // A finished run takes no checkpoint, not even from the worker that finished it.
      await t.store.transition(run.id, "succeed", {}, { workerId: "worker-b" });
      expect(await t.store.holdsRun(run.id, "worker-b")).toBe(false);
      expect(await t.store.saveCheckpoint(run.id, "worker-b", checkpoint())).toBe(false);
      expect((await t.store.loadCheckpoint(run.id))?.takenAt).toBe(theirs.takenAt);
    });

    it("drops the checkpoints of runs finished before the retention cutoff, and one asked for", async () => {
      const finished = await t.runIn("INPROGRESS");
      const running = await t.runIn("INPROGRESS");
      const deleted = await t.runIn("INPROGRESS");
      for (const run of [finished, running, deleted]) {
        expect(await t.store.saveCheckpoint(run.id, W, checkpoint())).toBe(true);
      }
      await t.store.transition(finished.id, "fail", {}, { workerId: W });
      expect(await t.store.pruneCheckpoints(new Date(Date.now() - 60_000).toISOString())).toBe(0);
      expect(await t.store.pruneCheckpoints(new Date(Date.now() + 60_000).toISOString())).toBe(1);
      await t.store.deleteCheckpoint(deleted.id);
      expect(await t.store.loadCheckpoint(finished.id)).toBeUndefined();
      expect(await t.store.loadCheckpoint(deleted.id)).toBeUndefined();
      expect(await t.store.loadCheckpoint(running.id)).toBeDefined();
    });
  });
}
