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

    it("stores a delivery once under its keys; a duplicate of any key stores nothing", async () => {
      const delivery = (keys: string[], deliveryId = keys[0]!) => ({
        source: "github",
        kind: "issue_comment",
        deliveryId,
        payload: JSON.stringify({ n: deliveryId }),
        keys: keys.map((key) => ({ key })),
      });
      const results = await Promise.all(
        Array.from({ length: 5 }, () => t.store.acceptInbound(delivery(["github:delivery:D1", "c:1"]))),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      // A redelivery of the same comment under a new delivery id is a duplicate too, and records nothing:
      // its own new key stays unclaimed.
      expect(await t.store.acceptInbound(delivery(["github:delivery:D2", "c:1"]))).toBe(false);
      expect(await t.store.claimInbound("github:delivery:D2", "github")).toBe(true);

      const claimed = await t.store.claimInboundDeliveries("a", {
        source: "github",
        limit: 10,
        leaseMs: 60_000,
        maxAttempts: 3,
      });
      expect(claimed).toEqual([
        expect.objectContaining({
          source: "github",
          kind: "issue_comment",
          deliveryId: "github:delivery:D1",
          payload: JSON.stringify({ n: "github:delivery:D1" }),
          attempts: 1,
        }),
      ]);
      expect(
        await t.store.claimInboundDeliveries("b", { source: "slack", limit: 10, leaseMs: 1, maxAttempts: 3 }),
      ).toEqual([]);
    });

    it("hands a delivery out under a lease until it is done; an expired lease hands it out again", async () => {
      const opts = { source: "slack", limit: 10, leaseMs: 60_000, maxAttempts: 3 };
      await t.store.acceptInbound({
        source: "slack",
        kind: "slack",
        deliveryId: "E1",
        payload: "{}",
        keys: [{ key: "slack:event:E1" }],
      });
      const [first] = await t.store.claimInboundDeliveries("a", { ...opts, leaseMs: 1 });
      expect(first?.attempts).toBe(1);
      // Its owner died: once the lease expires another owner takes it.
      await waitPast(5);
      const [again] = await t.store.claimInboundDeliveries("b", opts);
      expect(again).toMatchObject({ id: first!.id, attempts: 2 });
      expect(await t.store.claimInboundDeliveries("c", opts)).toEqual([]);
      expect(await t.store.finishInboundDelivery(first!.id, "a")).toBe(false);
      // A failed attempt is due again at its retry time.
      await t.store.releaseInboundDelivery(first!.id, "b", new Date(Date.now() - 1).toISOString());
      const [third] = await t.store.claimInboundDeliveries("b", opts);
      expect(third?.attempts).toBe(3);
      expect(await t.store.finishInboundDelivery(first!.id, "b")).toBe(true);
      await waitPast(5);
      expect(await t.store.claimInboundDeliveries("c", { ...opts, maxAttempts: 10 })).toEqual([]);
      // A handled delivery is gone at once; its dedupe key stays until the inbox is pruned.
      expect(await t.store.pruneInbox(new Date(Date.now() + 1000).toISOString())).toBe(1);
    });

    it("stops handing out a delivery after its last attempt", async () => {
      const opts = { source: "slack", limit: 10, leaseMs: 1, maxAttempts: 1 };
      await t.store.acceptInbound({
        source: "slack",
        kind: "slack",
        deliveryId: "E2",
        payload: "{}",
        keys: [],
      });
      expect(await t.store.claimInboundDeliveries("a", opts)).toHaveLength(1);
      await waitPast(5);
      expect(await t.store.claimInboundDeliveries("a", opts)).toEqual([]);
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
      await t.store.setBindingThread(b.id, "slack:T1:C1", "111.1");
      expect(
        await t.store.findLatestBinding({
          platform: "slack",
          workspace: "T1",
          channel: "C1",
          thread: "111.1",
        }),
      ).toMatchObject({ runId: b.id });
      await t.store.setBindingThread(b.id, "slack:T1:C1", "999.9"); // only a binding without a thread gets one
      expect((await t.store.getThreadBinding(b.id))?.thread).toBe("111.1");
      expect(
        await t.store.findLatestBinding({ platform: "github", workspace: "T1", channel: "C1", thread: null }),
      ).toBeUndefined();
    });

    it("lists a channel's bindings across its threads, newest first, and none of another channel", async () => {
      const [a, b, c, d] = [await create(), await create(), await create(), await create()];
      const bind = (runId: string, workspace: string, channel: string, thread: string | null, at: string) =>
        t.store.bindThread({
          runId,
          platform: "slack",
          workspace,
          channel,
          thread,
          triggerRef: null,
          requester: "U1",
          createdAt: `2026-02-01T00:00:0${at}.000Z`,
        });
      await bind(a.id, "T1", "CLIST", "1.1", "1");
      await bind(b.id, "T1", "CLIST", null, "2");
      await bind(c.id, "T1", "COTHER", "1.1", "3");
      await bind(d.id, "T2", "CLIST", "1.1", "4");
      const where = { platform: "slack" as const, workspace: "T1", channel: "CLIST" };
      expect((await t.store.listChannelBindings(where, 10)).map((x) => x.runId)).toEqual([b.id, a.id]);
      expect((await t.store.listChannelBindings(where, 1)).map((x) => x.runId)).toEqual([b.id]);
      expect(await t.store.listChannelBindings({ ...where, platform: "github" }, 10)).toEqual([]);
    });
  });
}
