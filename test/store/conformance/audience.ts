import { describe, expect, it } from "vitest";
import type { AudienceFilter } from "../../../src/model/audience.ts";
import type { StoreSuite } from "./suite.ts";

/**
 * The store's side of the access rule: the places a team's runs are bound to, and the list, counts and
 * usage of only the runs a viewer's audience filter admits (a Slack channel; a GitHub repository, every
 * issue of it; the unbound runs of the API).
 */
export function audienceConformance(t: StoreSuite): void {
  describe("audience filters", () => {
    const bind = (runId: string, platform: string, workspace: string, channel: string) =>
      t.store.bindThread({
        runId,
        platform,
        workspace,
        channel,
        thread: null,
        triggerRef: null,
        requester: "someone",
        createdAt: new Date().toISOString(),
      });

    it("lists, counts and sums only the runs a filter admits", async () => {
      await t.create({ title: "api" });
      const general = await t.create({ title: "general" });
      const secret = await t.create({ title: "secret" });
      const issue1 = await t.create({ title: "issue one" });
      const issue2 = await t.create({ title: "issue two" });
      const otherRepo = await t.create({ title: "other repo" });
      const otherTeam = await t.create({ teamId: "t2", title: "other team" });
      await bind(general.id, "slack", "T1", "CGENERAL");
      await bind(secret.id, "slack", "T1", "CSECRET");
      await bind(issue1.id, "github", "acme/app", "1");
      await bind(issue2.id, "github", "acme/app", "2");
      await bind(otherRepo.id, "github", "acme/private", "3");
      await bind(otherTeam.id, "slack", "T1", "CGENERAL");

      expect(
        (await t.store.listBoundPlaces("t1")).sort((a, b) => a.channel.localeCompare(b.channel)),
      ).toEqual([
        { platform: "github", workspace: "acme/app", channel: "1" },
        { platform: "github", workspace: "acme/app", channel: "2" },
        { platform: "github", workspace: "acme/private", channel: "3" },
        { platform: "slack", workspace: "T1", channel: "CGENERAL" },
        { platform: "slack", workspace: "T1", channel: "CSECRET" },
      ]);

      const filter: AudienceFilter = {
        unbound: true,
        places: [
          { platform: "slack", workspace: "T1", channel: "CGENERAL" },
          { platform: "github", workspace: "acme/app", channel: null },
        ],
      };
      const titles = async (audience: AudienceFilter) =>
        (await t.store.listRuns("t1", { limit: 50, sortBy: "title", sortOrder: "asc", audience })).runs.map(
          (r) => r.title,
        );
      expect(await titles(filter)).toEqual(["api", "general", "issue one", "issue two"]);
      // Without the unbound runs; with no place at all.
      expect(await titles({ ...filter, unbound: false })).toEqual(["general", "issue one", "issue two"]);
      expect(await titles({ unbound: true, places: [] })).toEqual(["api"]);
      // Combined with the other filters and keyset pages.
      const page = await t.store.listRuns("t1", {
        limit: 1,
        sortBy: "title",
        sortOrder: "asc",
        audience: filter,
        after: { value: "general", id: general.id },
        q: "issue",
      });
      expect(page.runs.map((r) => r.title)).toEqual(["issue one"]);
      expect(page.hasMore).toBe(true);

      expect((await t.store.countRunsByState("t1", filter)).QUEUED).toBe(4);
      expect((await t.store.countRunsByState("t1")).QUEUED).toBe(6);
      const usage = await t.store.summarizeUsage("t1", "2000-01-01T00:00:00.000Z", filter);
      expect(usage.days.reduce((n, d) => n + d.runs, 0)).toBe(4);
    });

    it("binds threads of any surface that registers a platform, not a fixed list", async () => {
      const run = await t.create({ title: "from a tracker" });
      await bind(run.id, "linear", "ACME", "session-1");
      expect((await t.store.getThreadBinding(run.id))?.platform).toBe("linear");
      expect(await t.store.listBoundPlaces("t1")).toEqual([
        { platform: "linear", workspace: "ACME", channel: "session-1" },
      ]);
    });
  });
}
