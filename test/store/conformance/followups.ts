import { v7 as uuidv7 } from "uuid";
import { describe, expect, it } from "vitest";
import { RUN_STATES, type RunState } from "../../../src/model/run-state.ts";
import { type StoreSuite, W } from "./suite.ts";

export function followupsConformance(t: StoreSuite): void {
  const { create, runIn } = t;

  describe("follow-ups", () => {
    const outcomes: Record<RunState, string> = {
      QUEUED: "queued_prompt",
      // Its agent has not started yet (its workspace is being prepared).
      INPROGRESS: "queue_pending",
      // The answer the run waits for.
      BLOCKED: "live_session",
      SUCCEEDED: "handoff_execution",
      FAILED: "handoff_execution",
      ERROR: "handoff_execution",
      CANCELLED: "handoff_execution",
    };
    for (const state of RUN_STATES) {
      it(`to a ${state} run → ${outcomes[state]}`, async () => {
        const run = await runIn(state);
        const result = await t.store.addFollowup("t1", run.id, {
          id: uuidv7(),
          message: "next",
          mode: "normal",
        });
        expect(result?.kind).toBe("created");
        if (result?.kind !== "created") return;
        expect(result.value.followup.outcome).toBe(outcomes[state]);
        const expectedState = state === "INPROGRESS" || state === "BLOCKED" ? "INPROGRESS" : "QUEUED";
        expect((await t.store.getRun("t1", run.id))?.state).toBe(expectedState);
        const events = await t.store.listEvents(run.id, 0, 100);
        expect(events.some((e) => e.type === "followup" && e.data.message === "next")).toBe(true);
      });
    }

    it("to an INPROGRESS run whose agent started → live_session", async () => {
      const run = await runIn("INPROGRESS");
      await t.store.startAgent(run.id, W);
      const result = await t.store.addFollowup("t1", run.id, {
        id: uuidv7(),
        message: "now",
        mode: "normal",
      });
      expect(result?.kind === "created" && result.value.followup.outcome).toBe("live_session");
    });

    it("a follow-up held for an agent that has not started is what it gets when it starts", async () => {
      const run = await runIn("INPROGRESS");
      await t.store.addFollowup("t1", run.id, { id: uuidv7(), message: "held", mode: "normal" });
      expect((await t.store.startAgent(run.id, W))?.followups.map((f) => f.message)).toEqual(["held"]);
    });

    it("listQueuedPrompts: the messages added to each run's prompt before it started, oldest first", async () => {
      const [a, b, c] = [await create(), await create(), await create()];
      for (const [run, message] of [
        [a, "a1"],
        [b, "b1"],
        [a, "a2"],
      ] as const) {
        await t.store.addFollowup("t1", run.id, { id: uuidv7(), message, mode: "normal" });
      }
      await t.store.claimNextRun(W, 60_000); // a: later follow-ups are not part of its prompt
      await t.store.addFollowup("t1", a.id, { id: uuidv7(), message: "a3", mode: "normal" });
      const queued = await t.store.listQueuedPrompts([a.id, b.id, c.id]);
      expect(queued.get(a.id)).toEqual(["a1", "a2"]);
      expect(queued.get(b.id)).toEqual(["b1"]);
      expect(queued.get(c.id)).toBeUndefined();
      // One run, as GET /runs/{id} asks.
      expect((await t.store.listQueuedPrompts([a.id])).get(a.id)).toEqual(["a1", "a2"]);
      expect((await t.store.listQueuedPrompts([c.id])).size).toBe(0);
    });

    it("interruptRun: counts an interrupt of a run whose agent started, refuses any other", async () => {
      const queued = await create();
      expect(await t.store.interruptRun("t1", queued.id, "Ann")).toEqual({
        kind: "refused",
        state: "QUEUED",
        agentStarted: false,
      });
      await t.store.claimNextRun(W, 60_000);
      expect((await t.store.interruptRun("t1", queued.id, "Ann"))?.kind).toBe("refused");
      await t.store.startAgent(queued.id, W);
      const result = await t.store.interruptRun("t1", queued.id, "Ann");
      expect(result?.kind === "interrupted" && result.run.interrupts).toBe(1);
      expect((await t.store.getRun("t1", queued.id))?.interrupts).toBe(1);
      const events = await t.store.listEvents(queued.id, 0, 100);
      expect(events.at(-1)?.data).toMatchObject({ phase: "interrupt", interrupted_by: "Ann" });
      expect(await t.store.interruptRun("t2", queued.id, "Ann")).toBeUndefined();
    });

    it("is refused for another team's run", async () => {
      const run = await create();
      expect(
        await t.store.addFollowup("t2", run.id, { id: uuidv7(), message: "x", mode: "normal" }),
      ).toBeUndefined();
    });

    it("a finishing worker cannot lose a live follow-up: it gets it back instead of finishing", async () => {
      const run = await runIn("INPROGRESS");
      await t.store.startAgent(run.id, W);
      await t.store.addFollowup("t1", run.id, { id: uuidv7(), message: "late", mode: "normal" });
      const first = await t.store.finishExecution(run.id, W, "succeed", {});
      expect(first.run).toBeUndefined();
      expect(first.pending.map((f) => f.message)).toEqual(["late"]);
      const second = await t.store.finishExecution(run.id, W, "succeed", {});
      expect(second.run?.state).toBe("SUCCEEDED");
    });

    it("takePendingFollowups hands each follow-up over once, oldest first", async () => {
      const run = await runIn("INPROGRESS");
      for (const m of ["one", "two"])
        await t.store.addFollowup("t1", run.id, { id: uuidv7(), message: m, mode: "normal" });
      expect((await t.store.takePendingFollowups(run.id, 1)).map((f) => f.message)).toEqual(["one", "two"]);
      expect(await t.store.takePendingFollowups(run.id, 1)).toEqual([]);
    });
  });
}
