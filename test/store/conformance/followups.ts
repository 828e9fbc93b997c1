import { v7 as uuidv7 } from "uuid";
import { describe, expect, it } from "vitest";
import { RUN_STATES, type RunState } from "../../../src/model/run-state.ts";
import { type StoreSuite, W } from "./suite.ts";

export function followupsConformance(t: StoreSuite): void {
  const { create, runIn } = t;

  describe("follow-ups", () => {
    const outcomes: Record<RunState, string> = {
      QUEUED: "queued_prompt",
      INPROGRESS: "live_session",
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
        const expectedState = state === "INPROGRESS" ? "INPROGRESS" : "QUEUED";
        expect((await t.store.getRun("t1", run.id))?.state).toBe(expectedState);
        const events = await t.store.listEvents(run.id, 0, 100);
        expect(events.some((e) => e.type === "followup" && e.data.message === "next")).toBe(true);
      });
    }

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
