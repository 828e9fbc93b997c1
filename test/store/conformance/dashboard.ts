import { describe, expect, it } from "vitest";
import type { StoreSuite } from "./suite.ts";

const day = (d: string, time = "10:00:00.000") => `2026-03-${d}T${time}Z`;

/** What the web dashboard reads besides the list: usage per day and per requester, and runs by id. */
export function dashboardConformance(t: StoreSuite): void {
  describe("dashboard reads", () => {
    const ada = { type: "user" as const, uid: "slack:T1:UADA", display_name: "Ada" };
    const bob = { type: "user" as const, uid: "slack:T1:UBOB", display_name: "Bob" };
    const usage = (tokens: number, cost?: number) => ({
      input_tokens: tokens / 2,
      output_tokens: tokens / 2,
      total_tokens: tokens,
      ...(cost === undefined ? {} : { inference_cost: cost }),
    });

    it("sums runs, tokens and cost per UTC day and per requester since an instant", async () => {
      const at = (createdAt: string) => ({ createdAt, updatedAt: createdAt });
      // Before the window: not counted.
      await t.create({ ...at(day("01", "23:59:59.999")), creator: ada, requestUsage: usage(1000, 5) });
      await t.create({ ...at(day("02", "00:00:00.000")), creator: ada, requestUsage: usage(100, 0.25) });
      await t.create({ ...at(day("02", "23:59:59.999")), creator: bob, requestUsage: usage(300) });
      await t.create({
        ...at(day("04")),
        creator: { ...ada, display_name: "Ada L." },
        requestUsage: usage(50, 0.5),
      });
      await t.create({ ...at(day("04", "11:00:00.000")), creator: bob, requestUsage: usage(0) });
      // Another team's runs are not this team's usage.
      await t.create({ ...at(day("04")), teamId: "t2", creator: ada, requestUsage: usage(7, 7) });

      const summary = await t.store.summarizeUsage("t1", day("02", "00:00:00.000"));
      expect(summary.days.map(({ cost, ...rest }) => rest)).toEqual([
        { day: "2026-03-02", runs: 2, tokens: 400 },
        { day: "2026-03-04", runs: 2, tokens: 50 },
      ]);
      expect(summary.days[0]!.cost).toBeCloseTo(0.25);
      expect(summary.days[1]!.cost).toBeCloseTo(0.5);
      expect(summary.people.map(({ cost, ...rest }) => rest)).toEqual([
        // Equal numbers of runs: ordered by uid. The name is the one of the latest run.
        { uid: ada.uid, displayName: "Ada L.", runs: 2, tokens: 150 },
        { uid: bob.uid, displayName: "Bob", runs: 2, tokens: 300 },
      ]);
      expect(summary.people[0]!.cost).toBeCloseTo(0.75);
      // No run of Bob's recorded a cost: none is made up.
      expect(summary.people[1]!.cost).toBeNull();

      expect(await t.store.summarizeUsage("t1", day("05"))).toEqual({ days: [], people: [] });
    });

    it("lists only the runs among given ids, with the other filters applied", async () => {
      const a = await t.create({ title: "alpha" });
      const b = await t.create({ title: "beta" });
      await t.create({ title: "gamma" });
      const other = await t.create({ teamId: "t2", title: "alpha elsewhere" });
      const list = (over: { ids: string[]; q?: string }) =>
        t.store.listRuns("t1", { limit: 10, sortBy: "updated_at", sortOrder: "desc", ...over });

      const both = await list({ ids: [a.id, b.id, other.id, "no-such-run"] });
      expect(new Set(both.runs.map((r) => r.id))).toEqual(new Set([a.id, b.id]));
      expect((await list({ ids: [a.id, b.id], q: "ALPH" })).runs.map((r) => r.id)).toEqual([a.id]);
      expect(await list({ ids: [] })).toEqual({ runs: [], hasMore: false });
    });
  });
}
