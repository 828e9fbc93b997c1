import { describe, expect, it } from "vitest";
import { type StoreSuite, waitPast } from "./suite.ts";

export function inboundConformance(t: StoreSuite): void {
  const { create } = t;

  describe("integrations", () => {
    it("claims an inbound key once; with a window, an old key counts as new again", async () => {
      const results = await Promise.all(
        Array.from({ length: 5 }, () => t.store.claimInbound("slack:event:E1", "slack")),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await t.store.claimInbound("slack:event:E1", "slack")).toBe(false);
      expect(await t.store.claimInbound("slack:cmd:x", "slack", 60_000)).toBe(true);
      expect(await t.store.claimInbound("slack:cmd:x", "slack", 60_000)).toBe(false);
      await waitPast(5);
      expect(await t.store.claimInbound("slack:cmd:x", "slack", 1)).toBe(true);
    });

    it("binds runs to threads and finds a thread's latest run", async () => {
      const a = await create();
      const b = await create();
      const base = {
        platform: "slack" as const,
        workspace: "T1",
        channel: "C1",
        triggerRef: null,
        requester: "U1",
      };
      await t.store.bindThread({
        ...base,
        runId: a.id,
        thread: "111.1",
        createdAt: "2026-01-01T00:00:00.000Z",
      });
      await t.store.bindThread({ ...base, runId: b.id, thread: null, createdAt: "2026-01-01T00:00:01.000Z" });
      expect(
        await t.store.findLatestBinding({
          platform: "slack",
          workspace: "T1",
          channel: "C1",
          thread: "111.1",
        }),
      ).toMatchObject({ runId: a.id });
      await t.store.setBindingThread(b.id, "111.1");
      expect(
        await t.store.findLatestBinding({
          platform: "slack",
          workspace: "T1",
          channel: "C1",
          thread: "111.1",
        }),
      ).toMatchObject({ runId: b.id });
      await t.store.setBindingThread(b.id, "999.9"); // only a binding without a thread gets one
      expect((await t.store.getThreadBinding(b.id))?.thread).toBe("111.1");
      expect(
        await t.store.findLatestBinding({ platform: "github", workspace: "T1", channel: "C1", thread: null }),
      ).toBeUndefined();
    });
  });
}
