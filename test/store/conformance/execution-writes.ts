import { randomBytes } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import { describe, expect, it } from "vitest";
import type { NewRunCheckpoint } from "../../../src/store/store.ts";
import { type StoreSuite, W } from "./suite.ts";

/**
 * What an execution writes together (docs/architecture.md, "A run's life"): several events in one
 * append, the events it starts from with the agent's start, and its last words with its end, each in one
 * step and fenced by the worker's claim.
 */
export function executionWritesConformance(t: StoreSuite): void {
  const checkpoint = (): NewRunCheckpoint => ({
    takenAt: new Date().toISOString(),
    sizeBytes: 3,
    refSha: null,
    snapshot: randomBytes(3),
  });
  const kinds = async (runId: string) =>
    (await t.store.listEvents(runId, 0, 100)).map((e) =>
      e.type === "state" ? `state:${e.data.state}` : e.type,
    );

  describe("an execution's writes", () => {
    it("appends several events in order, numbered one after the other, and none for a worker that lost the run", async () => {
      const run = await t.runIn("INPROGRESS");
      const written = await t.store.appendWorkerEvents(run.id, W, [
        { type: "tool_call", data: { tool: "shell", command: "ls" } },
        { type: "tool_result", data: { tool: "shell", command: "ls", exit_code: 0, output: "a\n" } },
        { type: "message", data: { role: "assistant", text: "done" } },
      ]);
      expect(written?.map((e) => e.type)).toEqual(["tool_call", "tool_result", "message"]);
      expect(written?.map((e) => e.seq)).toEqual([3, 4, 5]);
      const listed = await t.store.listEvents(run.id, 2, 10);
      expect(listed.map((e) => [e.seq, e.type, e.data])).toEqual(
        written?.map((e) => [e.seq, e.type, e.data]),
      );
      expect(
        await t.store.appendWorkerEvents(run.id, "someone-else", [{ type: "log", data: {} }]),
      ).toBeUndefined();
      expect((await t.store.listEvents(run.id, 0, 100)).length).toBe(5);
      // The run's latest progress moved with them (stall detection).
      expect((await t.store.getRun("t1", run.id))?.lastEventAt).toBe(written?.[2]?.at);
    });

    it("starts the agent with its opening events and the follow-ups waiting, in one step; a stale worker writes nothing", async () => {
      const run = await t.create();
      await t.store.claimNextRun(W, 60_000);
      await t.store.addFollowup("t1", run.id, { id: uuidv7(), message: "also this", mode: "normal" });
      expect(
        await t.store.startAgent(run.id, "someone-else", [{ type: "log", data: { m: "x" } }]),
      ).toBeUndefined();
      const taken = await t.store.startAgent(run.id, W, [
        { type: "log", data: { level: "warn", phase: "sandbox", message: "no sandbox" } },
        { type: "message", data: { role: "user", text: run.prompt } },
      ]);
      expect(taken?.followups.map((f) => f.message)).toEqual(["also this"]);
      expect(await kinds(run.id)).toEqual(["state:QUEUED", "state:INPROGRESS", "followup", "log", "message"]);
      expect((await t.store.getRun("t1", run.id))?.agentStarted).toBe(true);
    });

    it("ends the execution with its last words before the state event, and drops the run's checkpoint", async () => {
      const run = await t.runIn("INPROGRESS");
      await t.store.startAgent(run.id, W);
      expect(await t.store.saveCheckpoint(run.id, W, checkpoint())).toBe(true);
      const answer = { type: "message" as const, data: { role: "assistant", text: "all done" } };
      expect(await t.store.finishExecution(run.id, "someone-else", "succeed", {}, [answer])).toEqual({
        pending: [],
      });
      const ended = await t.store.finishExecution(run.id, W, "succeed", {}, [answer]);
      expect(ended.run?.state).toBe("SUCCEEDED");
      // The run answered is the run as stored (PostgreSQL builds it from the row it locked).
      expect(ended.run).toEqual(await t.store.getRun("t1", run.id));
      expect(await kinds(run.id)).toEqual(["state:QUEUED", "state:INPROGRESS", "message", "state:SUCCEEDED"]);
      expect(await t.store.loadCheckpoint(run.id)).toBeUndefined();
    });

    it("claims the next run for the slot its end frees, in the same step; nothing while follow-ups continue the run", async () => {
      const run = await t.runIn("INPROGRESS");
      await t.store.startAgent(run.id, W);
      const waiting = await t.create();
      const next = { workerId: "worker-b/1", leaseMs: 60_000 };
      // A worker that no longer holds the run ends nothing and claims nothing.
      // The run as the worker holds it (claimed) lets a backend end it without reading it first.
      const held = run;
      expect(
        await t.store.finishExecution(run.id, "someone-else", "succeed", {}, [], { next, held }),
      ).toEqual({
        pending: [],
      });
      // Follow-ups continue the run: its slot stays taken.
      await t.store.addFollowup("t1", run.id, { id: uuidv7(), message: "one more", mode: "normal" });
      const goOn = await t.store.finishExecution(run.id, W, "succeed", {}, [], { next, held });
      expect(goOn.pending).toHaveLength(1);
      expect(goOn.next).toBeUndefined();
      expect((await t.store.getRun("t1", waiting.id))?.state).toBe("QUEUED");

      const ended = await t.store.finishExecution(run.id, W, "succeed", {}, [], { next, held });
      expect(ended.run?.state).toBe("SUCCEEDED");
      expect(ended.next?.id).toBe(waiting.id);
      expect(ended.next?.workerId).toBe("worker-b/1");
      expect(ended.next).toEqual(await t.store.getRun("t1", waiting.id));
      expect(await kinds(waiting.id)).toEqual(["state:QUEUED", "state:INPROGRESS"]);

      // Nothing left to claim: the end claims nothing.
      const last = await t.runIn("INPROGRESS");
      const alone = await t.store.finishExecution(last.id, W, "succeed", {}, [], {
        next: { ...next, workerId: "worker-b/2" },
        held: last,
      });
      expect(alone.run?.state).toBe("SUCCEEDED");
      expect(alone.next).toBeUndefined();
    });

    it("with follow-ups waiting, writes the last words and hands them over, the run unchanged; a block keeps the checkpoint", async () => {
      const run = await t.runIn("INPROGRESS");
      await t.store.startAgent(run.id, W);
      expect(await t.store.saveCheckpoint(run.id, W, checkpoint())).toBe(true);
      await t.store.addFollowup("t1", run.id, { id: uuidv7(), message: "one more", mode: "normal" });
      const answer = { type: "message" as const, data: { role: "assistant", text: "first answer" } };
      const goOn = await t.store.finishExecution(run.id, W, "succeed", {}, [answer]);
      expect(goOn.run).toBeUndefined();
      expect(goOn.pending.map((f) => f.message)).toEqual(["one more"]);
      expect((await t.store.getRun("t1", run.id))?.state).toBe("INPROGRESS");
      expect((await kinds(run.id)).slice(-2)).toEqual(["followup", "message"]);

      const asked = { type: "message" as const, data: { role: "assistant", text: "which one?" } };
      const blocked = await t.store.finishExecution(
        run.id,
        W,
        "block",
        { statusMessage: { message: "which one?", error_code: "awaiting_input", retryable: false } },
        [asked],
      );
      expect(blocked.run?.state).toBe("BLOCKED");
      expect(blocked.run).toEqual(await t.store.getRun("t1", run.id));
      expect((await kinds(run.id)).slice(-2)).toEqual(["message", "state:BLOCKED"]);
      expect(await t.store.loadCheckpoint(run.id)).toBeDefined();
    });
  });
}
