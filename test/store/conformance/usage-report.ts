import { describe, expect, it } from "vitest";
import type { Creator, ModelUsage, RequestUsage } from "../../../src/model/run.ts";
import type { UsageGroup, UsageReport } from "../../../src/store/usage-report.ts";
import type { StoreSuite } from "./suite.ts";

/**
 * GET /api/v1/usage's store query: a period's runs grouped in SQL by requester, repository, origin
 * thread, schedule and model, with runs whose cost is unknown counted apart, and totals that count each
 * run once whatever the grouping.
 */
export function usageReportConformance(t: StoreSuite): void {
  describe("usage report", () => {
    const ada: Creator = { type: "user", uid: "u-ada", display_name: "Ada" };
    const bob: Creator = { type: "user", uid: "u-bob", display_name: "Bob" };
    const FROM = "2026-03-01T00:00:00.000Z";
    const TO = "2026-04-01T00:00:00.000Z";
    const at = (day: string) => {
      const createdAt = `2026-03-${day}T10:00:00.000Z`;
      return { createdAt, updatedAt: createdAt };
    };
    const model = (input: number, output: number, cost?: number): ModelUsage => ({
      input_tokens: input,
      cached_input_tokens: 0,
      output_tokens: output,
      ...(cost === undefined
        ? { unpriced: true as const }
        : { cost: { input: cost / 2, cached_input: 0, output: cost / 2 } }),
    });
    const usage = (models: Record<string, ModelUsage>): RequestUsage => {
      const entries = Object.values(models);
      const input = entries.reduce((n, m) => n + m.input_tokens, 0);
      const output = entries.reduce((n, m) => n + m.output_tokens, 0);
      const known = entries.every((m) => m.cost);
      const cost = entries.reduce((n, m) => n + (m.cost ? m.cost.input + m.cost.output : 0), 0);
      return {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        ...(known ? { inference_cost: cost } : {}),
        models,
      };
    };
    const bind = (runId: string, channel: string, over: { adopted?: boolean; createdAt?: string } = {}) =>
      t.store.bindThread({
        runId,
        platform: "slack",
        workspace: "T1",
        channel,
        thread: "1.2",
        triggerRef: null,
        requester: "U1",
        createdAt: over.createdAt ?? new Date().toISOString(),
        ...(over.adopted ? { adopted: true } : {}),
      });
    const report = (groupBy: UsageGroup[], over: Partial<{ from: string; to: string }> = {}) =>
      t.store.reportUsage("t1", { from: FROM, to: TO, groupBy, ...over });
    const keysOf = (r: UsageReport) => r.rows.map((row) => row.keys);

    /**
     * Ada: a $0.30 run on acme/app asked in #general that called two models, and a $0.10 scheduled run.
     * Bob: a run on acme/app asked through the API whose local model has no price, and one that called no
     * model yet. Outside the period or the team: runs that must not count.
     */
    const fill = async () => {
      const opus = await t.create({
        ...at("02"),
        creator: { ...ada, display_name: "Ada L." },
        agentConfig: { harness: { type: "oz" }, repository: "acme/app" },
        requestUsage: usage({
          "anthropic/opus": model(1000, 100, 0.2),
          "openai/gpt-mini": model(500, 50, 0.1),
        }),
      });
      await bind(opus.id, "CGENERAL", { createdAt: "2026-03-02T10:00:01.000Z" });
      // The pull request it opened: a thread it delivered to, not one it was asked in.
      await t.store.bindThread({
        runId: opus.id,
        platform: "github",
        workspace: "acme/app",
        channel: "7",
        thread: null,
        triggerRef: null,
        requester: "U1",
        createdAt: "2026-03-02T09:00:00.000Z",
        adopted: true,
      });
      await t.create({
        ...at("20"),
        creator: ada,
        schedule: { scheduleId: "sch_1", scheduleName: "nightly", cronSchedule: "0 3 * * *", fireTime: "x" },
        requestUsage: usage({ "anthropic/opus": model(200, 20, 0.1) }),
      });
      await t.create({
        ...at("10"),
        creator: bob,
        agentConfig: { harness: { type: "oz" }, repository: "acme/app" },
        requestUsage: usage({ "openai-compatible/local": model(300, 30) }),
      });
      await t.create({ ...at("11"), creator: bob });
      // Before and at the end of the period; another team.
      await t.create({
        createdAt: "2026-02-28T23:59:59.999Z",
        creator: bob,
        requestUsage: usage({ "anthropic/opus": model(9, 9, 9) }),
      });
      await t.create({
        createdAt: TO,
        creator: bob,
        requestUsage: usage({ "anthropic/opus": model(9, 9, 9) }),
      });
      await t.create({
        ...at("05"),
        teamId: "t2",
        creator: ada,
        requestUsage: usage({ "anthropic/opus": model(9, 9, 9) }),
      });
      return opus;
    };

    it("sums the period's runs once each, with an unknown cost counted apart", async () => {
      await fill();
      const all = await report([]);
      const totals = { runs: 4, inputTokens: 2000, outputTokens: 200, cost: null, unpricedRuns: 1 };
      expect(all.totals).toMatchObject(totals);
      expect(all.totals.knownCost).toBeCloseTo(0.4, 9);
      expect(all.rows).toEqual([{ keys: {}, ...all.totals }]);
      // Grouping never changes the totals, by model neither (a run of two models is one run).
      for (const by of [["person"], ["model"], ["person", "model", "channel"]] as UsageGroup[][]) {
        expect((await report(by)).totals).toEqual(all.totals);
      }
      expect(await report([], { from: "2026-05-01T00:00:00.000Z", to: "2026-06-01T00:00:00.000Z" })).toEqual({
        rows: [],
        totals: { runs: 0, inputTokens: 0, outputTokens: 0, cost: 0, knownCost: 0, unpricedRuns: 0 },
      });
    });

    it("groups by person with the name of their latest run, most cost first", async () => {
      await fill();
      const byPerson = await report(["person"]);
      expect(byPerson.rows).toEqual([
        {
          keys: { person: "u-ada" },
          personName: "Ada",
          runs: 2,
          inputTokens: 1700,
          outputTokens: 170,
          cost: expect.closeTo(0.4, 9),
          knownCost: expect.closeTo(0.4, 9),
          unpricedRuns: 0,
        },
        // A run that used no token yet cost nothing: it is not unpriced.
        {
          keys: { person: "u-bob" },
          personName: "Bob",
          runs: 2,
          inputTokens: 300,
          outputTokens: 30,
          cost: null,
          knownCost: 0,
          unpricedRuns: 1,
        },
      ]);
    });

    it("groups by repository, origin thread and schedule; a run without one is under null", async () => {
      await fill();
      expect(
        (await report(["repository"])).rows.map((r) => [r.keys.repository, r.runs, r.unpricedRuns]),
      ).toEqual([
        ["acme/app", 2, 1],
        [null, 2, 0],
      ]);
      // The origin is where the run was asked, not the pull request it opened (bound earlier here).
      expect((await report(["channel"])).rows.map((r) => [r.keys.channel, r.runs])).toEqual([
        ["slack:T1:CGENERAL", 1],
        [null, 3],
      ]);
      const bySchedule = await report(["schedule"]);
      expect(bySchedule.rows.map((r) => [r.keys.schedule, r.scheduleName, r.runs])).toEqual([
        [null, undefined, 3],
        ["sch_1", "nightly", 1],
      ]);
    });

    it("groups by the models each run called, one group per model of a run", async () => {
      await fill();
      const byModel = await report(["model"]);
      expect(
        byModel.rows.map((r) => ({
          ...r,
          knownCost: Number(r.knownCost.toFixed(9)),
          cost: r.cost === null ? null : Number(r.cost.toFixed(9)),
        })),
      ).toEqual([
        {
          keys: { model: "anthropic/opus" },
          runs: 2,
          inputTokens: 1200,
          outputTokens: 120,
          cost: 0.3,
          knownCost: 0.3,
          unpricedRuns: 0,
        },
        {
          keys: { model: "openai/gpt-mini" },
          runs: 1,
          inputTokens: 500,
          outputTokens: 50,
          cost: 0.1,
          knownCost: 0.1,
          unpricedRuns: 0,
        },
        {
          keys: { model: "openai-compatible/local" },
          runs: 1,
          inputTokens: 300,
          outputTokens: 30,
          cost: null,
          knownCost: 0,
          unpricedRuns: 1,
        },
        // Bob's run that called no model: its own figures, under no model.
        {
          keys: { model: null },
          runs: 1,
          inputTokens: 0,
          outputTokens: 0,
          cost: 0,
          knownCost: 0,
          unpricedRuns: 0,
        },
      ]);
      const both = await report(["model", "person"]);
      expect(keysOf(both)).toEqual([
        { model: "anthropic/opus", person: "u-ada" },
        { model: "openai/gpt-mini", person: "u-ada" },
        { model: "openai-compatible/local", person: "u-bob" },
        { model: null, person: "u-bob" },
      ]);
    });

    it("counts only the runs an audience filter admits", async () => {
      await fill();
      const channelOnly = await t.store.reportUsage("t1", {
        from: FROM,
        to: TO,
        groupBy: ["person"],
        audience: { unbound: false, places: [{ platform: "slack", workspace: "T1", channel: "CGENERAL" }] },
      });
      expect(channelOnly.totals.runs).toBe(1);
      expect(channelOnly.rows.map((r) => [r.keys.person, r.runs])).toEqual([["u-ada", 1]]);
      const apiOnly = await t.store.reportUsage("t1", {
        from: FROM,
        to: TO,
        groupBy: ["person"],
        audience: { unbound: true, places: [] },
      });
      expect(apiOnly.totals.runs).toBe(3);
      expect(apiOnly.rows.flatMap((r) => r.keys.person)).toEqual(["u-ada", "u-bob"]);
    });
  });
}
