import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecutionTranscript } from "../../src/executor/execution-transcript.ts";
import { createLogger } from "../../src/log.ts";
import { openStore } from "../../src/store/open-store.ts";
import type { Store } from "../../src/store/store.ts";
import { storeSuite, W } from "../store/conformance/suite.ts";
import { waitFor } from "../support/dispatch.ts";

/**
 * What an execution's transcript writes when (docs/architecture.md, "One commit per step"), on a real
 * SQLite store, seen by a reader of the run's events: a tool call at once; its result with the next write
 * (one commit for both), or on its own shortly after when nothing follows; at once while the worker drains.
 */
let dir: string;
let store: Store;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "dispatch-transcript-"));
  store = await openStore({ sqlitePath: join(dir, "dispatch.db") });
  await store.migrate();
  await store.ensureTeam({ id: "t1", name: "Team one" });
});

afterAll(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Longer than any test: what is held stays held until the next write. */
const UNTIL_NEXT_WRITE = { words: 600_000, result: 600_000 };

async function transcriptOfNewRun(
  opts: { draining?: boolean; holdMs?: { words: number; result: number } } = {},
) {
  const run = await storeSuite(() => store).runIn("INPROGRESS");
  const steps: number[] = [];
  const transcript = new ExecutionTranscript({
    store,
    runId: run.id,
    workerId: W,
    log: createLogger("silent"),
    cancelled: () => false,
    refused: async () => false,
    mayHold: () => !opts.draining,
    stepEnded: () => steps.push(Date.now()),
    holdMs: opts.holdMs ?? UNTIL_NEXT_WRITE,
  });
  const types = async () =>
    (await store.listEvents(run.id, 0, 100)).map((e) => e.type).filter((t) => t.startsWith("tool_"));
  return { transcript, types, steps, runId: run.id };
}

const call = { tool: "shell", command: "echo hi" };
const result = { ...call, exit_code: 0, output: "hi\n" };

describe("an execution's transcript", () => {
  it("writes a tool's result with the next tool call, in one commit, in order", async () => {
    const { transcript, types, steps } = await transcriptOfNewRun();
    await transcript.emit("tool_call", call);
    expect(await types()).toEqual(["tool_call"]);
    await transcript.emit("tool_result", result);
    // Not shown before it is durable: held for the next write.
    expect(await types()).toEqual(["tool_call"]);
    expect(steps).toHaveLength(0);
    const commits = store.activity.commits;
    await transcript.emit("tool_call", { ...call, command: "echo again" });
    expect(store.activity.commits - commits).toBe(1);
    expect(await types()).toEqual(["tool_call", "tool_result", "tool_call"]);
    // The step ended once its result was durable.
    expect(steps).toHaveLength(1);
  });

  it("writes a result on its own when nothing follows it", async () => {
    const { transcript, types, steps, runId } = await transcriptOfNewRun({
      holdMs: { words: 600_000, result: 50 },
    });
    await transcript.emit("tool_call", call);
    // The agent's words wait longer than a result: they go out with it, when the result is due.
    await transcript.emit("message", { role: "assistant", text: "running it" });
    await transcript.emit("tool_result", result);
    await waitFor(async () => (await types()).length === 2, { timeoutMs: 10_000, what: "the result" });
    expect(await types()).toEqual(["tool_call", "tool_result"]);
    expect((await store.listEvents(runId, 0, 100)).map((e) => e.type).slice(-2)).toEqual([
      "message",
      "tool_result",
    ]);
    await waitFor(() => steps.length === 1, { timeoutMs: 10_000, what: "the step's end" });
  });

  it("hands a held result to the end of the turn (finishExecution's events)", async () => {
    const { transcript, types } = await transcriptOfNewRun();
    await transcript.emit("tool_call", call);
    await transcript.emit("tool_result", result);
    await transcript.emit("message", { role: "assistant", text: "done" });
    const events = await transcript.forCommit();
    expect(events.map((e) => e.type)).toEqual(["tool_result", "message"]);
    expect(await types()).toEqual(["tool_call"]);
  });

  it("writes a result at once while the worker drains", async () => {
    const { transcript, types, steps } = await transcriptOfNewRun({ draining: true });
    await transcript.emit("tool_call", call);
    await transcript.emit("tool_result", result);
    expect(await types()).toEqual(["tool_call", "tool_result"]);
    expect(steps).toHaveLength(1);
  });
});
