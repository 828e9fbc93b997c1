import { describe, expect, it } from "vitest";
import type { NewAuditEvent } from "../../../src/model/audit.ts";
import type { StoreSuite } from "./suite.ts";

export function auditConformance(t: StoreSuite): void {
  const entry = (over: Partial<NewAuditEvent> = {}): NewAuditEvent => ({
    teamId: "t1",
    at: "2030-01-01T00:00:00.000Z",
    actor: "u1",
    actorName: "U One",
    action: "run.created",
    target: "r1",
    details: { source: "API" },
    ...over,
  });

  describe("audit log", () => {
    it("lists a team's entries newest first, filtered by actor, action and time, a page at a time", async () => {
      await t.store.appendAuditEvent(entry());
      await t.store.appendAuditEvent(entry({ at: "2030-01-02T00:00:00.000Z", action: "run.cancelled" }));
      await t.store.appendAuditEvent(
        entry({ at: "2030-01-03T00:00:00.000Z", actor: "slack:T1:U2", actorName: null, target: null }),
      );
      await t.store.appendAuditEvent(entry({ teamId: "t2", actor: "other" }));

      const all = await t.store.listAuditEvents("t1", { limit: 10 });
      expect(all.hasMore).toBe(false);
      expect(all.events.map((e) => e.at)).toEqual([
        "2030-01-03T00:00:00.000Z",
        "2030-01-02T00:00:00.000Z",
        "2030-01-01T00:00:00.000Z",
      ]);
      expect(all.events[2]).toMatchObject({ ...entry(), id: expect.any(Number) });
      expect(all.events[0]).toMatchObject({ actor: "slack:T1:U2", actorName: null, target: null });

      const byActor = await t.store.listAuditEvents("t1", { actor: "u1", limit: 10 });
      expect(byActor.events.map((e) => e.action)).toEqual(["run.cancelled", "run.created"]);
      const byAction = await t.store.listAuditEvents("t1", { action: "run.cancelled", limit: 10 });
      expect(byAction.events).toHaveLength(1);
      const window = await t.store.listAuditEvents("t1", {
        since: "2030-01-02T00:00:00.000Z",
        until: "2030-01-03T00:00:00.000Z",
        limit: 10,
      });
      expect(window.events.map((e) => e.action)).toEqual(["run.cancelled"]);

      const first = await t.store.listAuditEvents("t1", { limit: 2 });
      expect(first.hasMore).toBe(true);
      const rest = await t.store.listAuditEvents("t1", { limit: 2, before: first.events[1]!.id });
      expect(rest).toEqual({ events: [all.events[2]], hasMore: false });
    });

    it("a run's creation appends its entry with the run, and a replayed create none", async () => {
      const claim = {
        principalId: "p1",
        key: "k-audit",
        requestHash: "h1",
        respond: (r: unknown) => ({ id: (r as { id: string }).id }),
        notBefore: new Date(Date.now() - 60_000).toISOString(),
      };
      const run = t.newRun();
      const audit = entry({ target: run.id });
      expect((await t.store.createRun(run, claim, [], { audit })).kind).toBe("created");
      expect((await t.store.createRun(t.newRun(), claim, [], { audit })).kind).toBe("replayed");
      const { events } = await t.store.listAuditEvents("t1", { limit: 10 });
      expect(events).toEqual([{ ...audit, id: expect.any(Number) }]);
    });

    it("a run whose audit entry cannot be stored is not created: one transaction holds both", async () => {
      const run = t.newRun();
      const unstorable = { ...entry({ target: run.id }), actor: null as unknown as string };
      await expect(t.store.createRun(run, undefined, [], { audit: unstorable })).rejects.toThrow();
      expect(await t.store.getRun("t1", run.id)).toBeUndefined();
    });

    it("prunes entries older than the retention", async () => {
      await t.store.appendAuditEvent(entry({ at: "2020-01-01T00:00:00.000Z" }));
      await t.store.appendAuditEvent(entry({ at: "2030-01-01T00:00:00.000Z" }));
      expect(await t.store.pruneAuditEvents("2025-01-01T00:00:00.000Z")).toBe(1);
      expect((await t.store.listAuditEvents("t1", { limit: 10 })).events.map((e) => e.at)).toEqual([
        "2030-01-01T00:00:00.000Z",
      ]);
    });
  });
}
