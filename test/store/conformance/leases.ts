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
    it("re-queues once a run whose agent had not started, then resumes it", async () => {
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
        state: "INPROGRESS",
        workerId: null,
        resuming: "worker_lost",
      });
    });

    it("resumes a run whose agent had started on another worker, up to maxResumes times, then errors it", async () => {
      const run = await create();
      await t.store.claimNextRun(W, 1);
      expect(await t.store.startAgent(run.id, W)).toEqual({ followups: [], attachments: [] });
      for (let resume = 1; resume <= 2; resume++) {
        await waitPast(2);
        const [recovered] = await t.store.recoverExpiredLeases(2);
        expect(recovered).toMatchObject({
          state: "INPROGRESS",
          workerId: null,
          resuming: "worker_lost",
          resumes: resume,
        });
        const claimed = await t.store.claimNextRun(`other-${resume}`, 1);
        expect(claimed).toMatchObject({
          id: run.id,
          state: "INPROGRESS",
          resuming: "worker_lost",
          agentStarted: true,
        });
        expect((await t.store.getRun("t1", run.id))?.resuming).toBeUndefined();
      }
      await waitPast(2);
      const [ended] = await t.store.recoverExpiredLeases(2);
      expect(ended).toMatchObject({
        state: "ERROR",
        statusMessage: { error_code: "worker_lost", retryable: true },
      });
      expect(ended?.statusMessage?.message).toContain("resumed 2 times");
      const transcript = await t.store.listEvents(run.id, 0, 100);
      expect(transcript.filter((e) => e.type === "log").map((e) => e.data.message)).toEqual([
        expect.stringContaining("resume 1 of 2"),
        expect.stringContaining("resume 2 of 2"),
      ]);
      // Another execution starts with its own count.
      const followed = await t.store.addFollowup("t1", run.id, {
        id: uuidv7(),
        message: "again",
        mode: "normal",
      });
      expect(followed?.kind === "created" && followed.value.run).toMatchObject({
        state: "QUEUED",
        execution: 2,
      });
      expect((await t.store.getRun("t1", run.id))?.resumes).toBeUndefined();
    });

    it("a hand-back keeps the run INPROGRESS for the next claim, which resumes it before queued runs", async () => {
      const run = await create();
      const queued = await create();
      await t.store.claimNextRun(W, 60_000);
      await t.store.startAgent(run.id, W);
      expect(await t.store.handBackRun(run.id, "someone-else", "moving")).toBe(false);
      expect(await t.store.handBackRun(run.id, W, "moving")).toBe(true);
      expect(await t.store.getRun("t1", run.id)).toMatchObject({
        state: "INPROGRESS",
        workerId: null,
        resuming: "shutdown",
      });
      expect(await t.store.handBackRun(run.id, W, "moving")).toBe(false);
      const claimed = await t.store.claimNextRun("W2", 60_000);
      expect(claimed).toMatchObject({ id: run.id, workerId: "W2", resuming: "shutdown" });
      expect((await t.store.claimNextRun("W3", 60_000))?.id).toBe(queued.id);
      // The claim of a resume adds no state event: the run stayed INPROGRESS throughout.
      const states = (await t.store.listEvents(run.id, 0, 100)).filter((e) => e.type === "state");
      expect(states.map((e) => e.data.state)).toEqual(["QUEUED", "INPROGRESS"]);
    });

    it("fences a worker that lost the run: no events, follow-ups or usage from it", async () => {
      const run = await create();
      await t.store.claimNextRun(W, 60_000);
      await t.store.startAgent(run.id, W);
      expect(
        await t.store.appendWorkerEvents(run.id, W, [{ type: "log", data: { message: "mine" } }]),
      ).toMatchObject([{ type: "log" }]);
      await t.store.handBackRun(run.id, W, "moving");
      await t.store.claimNextRun("W2", 60_000);
      expect(
        await t.store.appendWorkerEvents(run.id, W, [{ type: "log", data: { message: "stale" } }]),
      ).toBeUndefined();
      await t.store.addFollowup("t1", run.id, { id: uuidv7(), message: "steer", mode: "normal" });
      expect(await t.store.takePendingFollowups(run.id, 1, W)).toEqual([]);
      await t.store.recordUsage(run.id, { input_tokens: 9, output_tokens: 9, total_tokens: 18 }, W);
      expect((await t.store.getRun("t1", run.id))?.requestUsage.total_tokens).toBe(0);
      const taken = await t.store.takePendingFollowups(run.id, 1, "W2");
      expect(taken.map((f) => f.message)).toEqual(["steer"]);
      expect((await t.store.listDeliveredFollowups(run.id, 1)).map((f) => f.message)).toEqual(["steer"]);
      const messages = (await t.store.listEvents(run.id, 0, 100)).map((e) => e.data.message);
      expect(messages).toContain("mine");
      expect(messages).not.toContain("stale");
    });

    it("never drops an undelivered follow-up of a run whose resumes ran out: it starts the next execution", async () => {
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
      const [recovered] = await t.store.recoverExpiredLeases(0);
      expect(recovered).toMatchObject({ state: "QUEUED", execution: 2 });
      await t.store.claimNextRun(W, 60_000);
      const delivered = await t.store.startAgent(run.id, W);
      expect(delivered?.followups.map((f) => f.message)).toEqual(["more"]);
    });

    it("leaves runs with a live lease alone", async () => {
      await create();
      await t.store.claimNextRun(W, 60_000);
      expect(await t.store.recoverExpiredLeases()).toEqual([]);
    });
  });
}
