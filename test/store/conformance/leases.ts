import { v7 as uuidv7 } from "uuid";
import { describe, expect, it } from "vitest";
import { type StoreSuite, W, waitPast } from "./suite.ts";

export function leasesConformance(t: StoreSuite): void {
  const { create, runIn } = t;

  it("claims the oldest queued run once, and never the same run twice", async () => {
    const a = await create();
    const b = await create();
    const claims = await Promise.all([
      t.store.claimNextRun("w1", 60_000),
      t.store.claimNextRun("w2", 60_000),
      t.store.claimNextRun("w3", 60_000),
    ]);
    // Which of the concurrent claimers comes away empty is up to the backend (PostgreSQL's SKIP LOCKED lets
    // them race); that each run goes to exactly one of them is not.
    const claimed = claims.filter((run) => run !== undefined);
    expect(claimed.map((run) => run.id).sort()).toEqual([a.id, b.id].sort());
    const first = claimed[0];
    expect(first).toMatchObject({ state: "INPROGRESS" });
    expect(first?.startedAt).not.toBeNull();
    expect(first?.leaseExpiresAt).not.toBeNull();
  });

  it("renewing a lease fails once the run is cancelled", async () => {
    const run = await runIn("INPROGRESS");
    expect(await t.store.renewLease(run.id, W, 60_000)).toBe(true);
    await t.store.transition(run.id, "cancel");
    expect(await t.store.renewLease(run.id, W, 60_000)).toBe(false);
    expect(await t.store.startAgent(run.id, W)).toBeUndefined();
  });

  it("records usage whatever the run's state", async () => {
    const run = await runIn("CANCELLED");
    const usage = { input_tokens: 7, output_tokens: 3, total_tokens: 10 };
    await t.store.recordUsage(run.id, usage);
    expect((await t.store.getRun("t1", run.id))?.requestUsage).toEqual(usage);
  });

  it("records a skill resolved at execution on the run its worker holds", async () => {
    const run = await runIn("INPROGRESS");
    const skill = { name: "triage", full_path: "acme/skills:skills/triage/SKILL.md" };
    const config = { ...run.agentConfig, name: "triage", base_prompt: "Triage issues." };
    expect(await t.store.recordSkill(run.id, "someone-else", config, skill)).toBe(false);
    expect(await t.store.recordSkill(run.id, W, config, skill)).toBe(true);
    expect(await t.store.getRun("t1", run.id)).toMatchObject({ agentSkill: skill, agentConfig: config });
    const listed = await t.store.listRuns("t1", {
      limit: 10,
      sortBy: "created_at",
      sortOrder: "asc",
      name: "triage",
    });
    expect(listed.runs.map((r) => r.id)).toEqual([run.id]);
  });

  describe("lease recovery", () => {
    it("re-queues once a run whose agent had not started, then errors it", async () => {
      const run = await create();
      await t.store.claimNextRun(W, 1);
      await waitPast(2);
      const first = await t.store.recoverExpiredLeases();
      expect(first.map((r) => [r.id, r.state])).toEqual([[run.id, "QUEUED"]]);
      await t.store.claimNextRun(W, 1);
      await waitPast(2);
      const second = await t.store.recoverExpiredLeases();
      expect(second[0]).toMatchObject({
        id: run.id,
        state: "ERROR",
        statusMessage: { error_code: "worker_lost" },
      });
    });

    it("errors a run whose agent had started", async () => {
      const run = await create();
      await t.store.claimNextRun(W, 1);
      expect(await t.store.startAgent(run.id, W)).toEqual([]);
      await waitPast(2);
      const [recovered] = await t.store.recoverExpiredLeases();
      expect(recovered).toMatchObject({
        state: "ERROR",
        statusMessage: { error_code: "worker_lost", retryable: true },
      });
    });

    it("never drops an undelivered follow-up: it starts the next execution", async () => {
      const run = await create();
      await t.store.claimNextRun(W, 1);
      await t.store.startAgent(run.id, W);
      const added = await t.store.addFollowup("t1", run.id, {
        id: uuidv7(),
        message: "more",
        mode: "normal",
      });
      expect(added?.kind === "created" && added.value.followup.outcome).toBe("live_session");
      await waitPast(2);
      const [recovered] = await t.store.recoverExpiredLeases();
      expect(recovered).toMatchObject({ state: "QUEUED", execution: 2 });
      await t.store.claimNextRun(W, 60_000);
      const delivered = await t.store.startAgent(run.id, W);
      expect(delivered?.map((f) => f.message)).toEqual(["more"]);
    });

    it("leaves runs with a live lease alone", async () => {
      await create();
      await t.store.claimNextRun(W, 60_000);
      expect(await t.store.recoverExpiredLeases()).toEqual([]);
    });
  });
}
