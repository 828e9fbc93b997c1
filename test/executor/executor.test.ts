import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { isAlive, runProcesses } from "../support/server-process.ts";

let t: TestDispatch;
beforeAll(async () => {
  process.env.OPENAI_API_KEY = "sk-test-provider-secret";
  // A long poll interval: runs must start because the executor is woken, not because it polls.
  t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "2", DISPATCH_POLL_INTERVAL_MS: "60000" });
});
afterAll(async () => {
  delete process.env.OPENAI_API_KEY;
  await t.stop();
});

const create = async (prompt: string, extra: Record<string, unknown> = {}) =>
  (await t.api("POST", "/api/v1/agent/runs", { prompt, ...extra })).body.run_id as string;
const events = async (id: string) =>
  (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events as Array<{
    type: string;
    data: Record<string, unknown>;
  }>;
/** A command that holds the run until the test opens the gate (a file in the run's workspace). */
const GATE = "$ while [ ! -e gate ]; do sleep 0.02; done";
const openGate = (id: string) => writeFile(join(t.dataDir, "workspaces", id, "gate"), "");
const commandsRun = async (id: string) =>
  (await events(id)).filter((e) => e.type === "tool_call").map((e) => e.data.command);

describe("scripted harness through the executor", () => {
  it("runs `$ ` lines in the run's own workspace and succeeds when all exit 0", async () => {
    const id = await create("Say hi\n$ echo hello > greeting.txt\n$ cat greeting.txt && pwd");
    const run = await waitForState(t, id, ["SUCCEEDED"]);
    expect(run.started_at).not.toBeNull();
    expect(run.finished_at).not.toBeNull();
    expect(run.run_time).toMatch(/^PT/);
    const evs = await events(id);
    const result = evs.filter((e) => e.type === "tool_result")[1]!;
    expect(String(result.data.output)).toContain("hello\n");
    expect(String(result.data.output)).toContain(`/workspaces/${id}`);
    const reply = evs.filter((e) => e.type === "message" && e.data.role === "assistant").at(-1)!;
    expect(reply.data.text).toContain("Say hi");
    expect(reply.data.text).toContain("not an LLM");
    // Another run's workspace is a different directory.
    const other = await create("$ test ! -e greeting.txt");
    await waitForState(t, other, ["SUCCEEDED"]);
  });

  it("fails with a status message naming the command and its exit code, and stops there", async () => {
    const id = await create("$ echo before\n$ sh -c 'exit 3'\n$ echo never");
    const run = await waitForState(t, id, ["FAILED"]);
    expect(run.status_message).toMatchObject({
      message: "Command `sh -c 'exit 3'` exited with code 3",
      retryable: false,
    });
    expect(await commandsRun(id)).toEqual(["echo before", "sh -c 'exit 3'"]);
  });

  it("keeps provider keys and Dispatch's secrets out of the agent's environment", async () => {
    const id = await create("$ env");
    await waitForState(t, id, ["SUCCEEDED"]);
    const output = String((await events(id)).find((e) => e.type === "tool_result")!.data.output);
    expect(output).toContain("DISPATCH_RUN_ID=");
    expect(output).not.toContain("sk-test-provider-secret");
    expect(output).not.toContain("OPENAI_API_KEY");
    expect(output).not.toContain(t.key);
  });

  it("refuses a harness this server does not have at create, naming the ones it has", async () => {
    const res = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "x",
      config: { harness: { type: "claude-code" } },
    });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe("operation_not_supported");
    expect(res.body.detail).toContain('harness "claude-code" is not available on this server');
    expect(res.body.detail).toContain('{"type":"oz","name":"scripted"}');
  });
});

describe("slots and follow-ups", () => {
  it("never runs more than DISPATCH_MAX_CONCURRENT_RUNS at once, and reports at_capacity", async () => {
    const ids: string[] = [];
    let sawCapacity = false;
    for (let i = 0; i < 4; i++) {
      const res = await t.api("POST", "/api/v1/agent/runs", { prompt: "$ sleep 0.3" });
      ids.push(res.body.run_id);
      sawCapacity ||= res.body.at_capacity;
    }
    expect(sawCapacity).toBe(true);
    let maxInProgress = 0;
    await waitFor(
      async () => {
        const list = (await t.api("GET", "/api/v1/agent/runs?limit=500")).body.runs as Array<{
          run_id: string;
          state: string;
        }>;
        const mine = list.filter((r) => ids.includes(r.run_id));
        maxInProgress = Math.max(maxInProgress, mine.filter((r) => r.state === "INPROGRESS").length);
        return mine.every((r) => r.state === "SUCCEEDED");
      },
      { what: "all four runs to succeed" },
    );
    expect(maxInProgress).toBeGreaterThan(0);
    expect(maxInProgress).toBeLessThanOrEqual(2);
  });

  it("delivers a follow-up to a running agent at its next step (live_session)", async () => {
    const id = await create(`${GATE}\n$ echo first`);
    await waitFor(async () => (await commandsRun(id)).length === 1, { what: "the gate command to start" });
    const res = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "$ echo steered" });
    expect(res.body.outcome).toBe("live_session");
    await openGate(id);
    await waitForState(t, id, ["SUCCEEDED"]);
    expect(await commandsRun(id)).toEqual([GATE.slice(2), "echo first", "echo steered"]);
  });

  it("a follow-up to a QUEUED run is part of what the agent receives when it starts (queued_prompt)", async () => {
    const blockers = [await create(GATE), await create(GATE)];
    for (const b of blockers) await waitForState(t, b, ["INPROGRESS"]);
    const id = await create("$ echo prompt");
    const res = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "$ echo queued" });
    expect(res.body.outcome).toBe("queued_prompt");
    for (const b of blockers) {
      await waitFor(async () => (await commandsRun(b)).length === 1, { what: "the blocker to start" });
      await openGate(b);
    }
    await waitForState(t, id, ["SUCCEEDED"]);
    expect(await commandsRun(id)).toEqual(["echo prompt", "echo queued"]);
    for (const b of blockers) await waitForState(t, b, ["SUCCEEDED"]);
  });

  it("a follow-up to a finished run starts a new execution that runs only the follow-up (handoff_execution)", async () => {
    const id = await create("$ echo one");
    const first = await waitForState(t, id, ["SUCCEEDED"]);
    const res = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "$ exit 4" });
    expect(res.body.outcome).toBe("handoff_execution");
    const second = await waitForState(t, id, ["FAILED"]);
    expect(second.started_at).toBe(first.started_at);
    expect(second.finished_at >= first.finished_at).toBe(true);
    expect(await commandsRun(id)).toEqual(["echo one", "exit 4"]);
    const states = (await events(id)).filter((e) => e.type === "state").map((e) => e.data.state);
    expect(states).toEqual(["QUEUED", "INPROGRESS", "SUCCEEDED", "QUEUED", "INPROGRESS", "FAILED"]);
  });

  it("cancel stops a running command and the run stays CANCELLED", async () => {
    const id = await create("$ sleep 60\n$ echo never");
    await waitFor(async () => (await commandsRun(id)).length === 1, { what: "sleep to start" });
    const pids = await waitFor(
      () => {
        const found = runProcesses(id);
        return found.length > 0 ? found : undefined;
      },
      { what: "the sleep's processes" },
    );
    expect((await t.api("POST", `/api/v1/agent/runs/${id}/cancel`)).status).toBe(200);
    expect((await t.api("GET", `/api/v1/agent/runs/${id}`)).body.state).toBe("CANCELLED");
    // Well inside the sleep's 60 s: only the kill ends it this soon.
    await waitFor(() => !pids.some(isAlive) && runProcesses(id).length === 0, {
      timeoutMs: 15_000,
      what: "every process of the run to be gone",
    });
    // The executor frees the slot once the process group is dead.
    await waitFor(() => t.dispatch.executor!.activeRuns === 0 || undefined, {
      timeoutMs: 15_000,
      what: "execution to stop",
    });
    const run = (await t.api("GET", `/api/v1/agent/runs/${id}`)).body;
    expect(run.state).toBe("CANCELLED");
    expect(await commandsRun(id)).toEqual(["sleep 60"]);
  });
});
