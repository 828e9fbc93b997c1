import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { probeBwrap } from "../../src/sandbox/bwrap-sandbox.ts";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";
import {
  isAlive,
  killAgentProcesses,
  newAdminKey,
  runProcesses,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";

// Fault tests: the real `dispatch serve` is killed or stopped under load and restarted on its data dir.

const TERMINAL = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"];

// biome-ignore lint/suspicious/noExplicitAny: API bodies are asserted field by field
type Json = any;

interface Fixture {
  dataDir: string;
  key: string;
  servers: ServerProcess[];
}

const fixtures: Fixture[] = [];
const inProcess: TestDispatch[] = [];

async function newFixture(): Promise<Fixture> {
  const fixture = {
    dataDir: await mkdtemp(join(tmpdir(), "dispatch-faults-")),
    key: newAdminKey(),
    servers: [],
  };
  fixtures.push(fixture);
  return fixture;
}

async function start(fixture: Fixture, env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServerProcess({ dataDir: fixture.dataDir, key: fixture.key, env });
  fixture.servers.push(server);
  return server;
}

afterEach(async () => {
  // Even after a failure: no server, no orphaned agent process (they run in their own process groups
  // and outlive a SIGKILLed server), no temporary directory is left behind.
  for (const fixture of fixtures.splice(0)) {
    try {
      for (const server of fixture.servers) await stopServerProcess(server);
      await killAgentProcesses(fixture.dataDir);
    } finally {
      await rm(fixture.dataDir, { recursive: true, force: true });
    }
  }
  for (const t of inProcess.splice(0)) {
    try {
      await t.stop();
    } finally {
      await killAgentProcesses(t.dataDir);
    }
  }
});

async function createRun(server: ServerProcess, prompt: string): Promise<string> {
  const res = await server.api("POST", "/api/v1/agent/runs", { prompt });
  expect(res.status, res.text).toBe(200);
  expect(res.body.state).toBe("QUEUED");
  return res.body.run_id as string;
}

async function getRun(server: ServerProcess, runId: string): Promise<Json> {
  const res = await server.api("GET", `/api/v1/agent/runs/${runId}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function events(server: ServerProcess, runId: string): Promise<Json[]> {
  const res = await server.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`);
  expect(res.status, res.text).toBe(200);
  return res.body.events;
}

function waitForRun(server: ServerProcess, runId: string, states: string[], timeoutMs = 10_000) {
  return waitFor(
    async () => {
      const run = await getRun(server, runId);
      return states.includes(run.state) ? (run as Json) : undefined;
    },
    { timeoutMs, intervalMs: 50, what: `run ${runId} to reach ${states.join("/")}` },
  );
}

/** Waits until the run's command runs as a process (so the agent has started), and returns its pids. */
function waitForCommand(runId: string, timeoutMs = 10_000): Promise<number[]> {
  return waitFor(() => (runProcesses(runId).length > 0 ? runProcesses(runId) : undefined), {
    timeoutMs,
    what: `a process of run ${runId}`,
  });
}

function commandsRun(transcript: Json[]): Array<{ command: string; exit_code: number | null }> {
  return transcript
    .filter((e) => e.type === "tool_result")
    .map((e) => ({ command: e.data.command, exit_code: e.data.exit_code }));
}

describe("faults: the real server process", () => {
  it("kill -9 mid-run, restart on the same data dir: no run lost, every run ends in a defined state", async () => {
    const fixture = await newFixture();
    const env = {
      DISPATCH_MAX_CONCURRENT_RUNS: "3",
      DISPATCH_POLL_INTERVAL_MS: "100",
      DISPATCH_LEASE_MS: "1500",
    };
    const first = await start(fixture, env);

    // Three slots busy with long commands; one of them gets a follow-up it cannot take before it dies.
    const sleeping = [await createRun(first, "$ sleep 30"), await createRun(first, "$ sleep 30")];
    const withFollowup = await createRun(first, "$ sleep 30");
    const agentPids: number[] = [];
    for (const id of [...sleeping, withFollowup]) {
      agentPids.push(...(await waitForCommand(id)));
      expect((await getRun(first, id)).state).toBe("INPROGRESS");
    }
    // Quick runs wait behind them.
    const quick: string[] = [];
    for (let i = 0; i < 3; i++) quick.push(await createRun(first, `$ echo quick-${i} > quick.txt`));
    const followup = await first.api("POST", `/api/v1/agent/runs/${withFollowup}/followups`, {
      message: "$ echo after-crash > marker.txt",
    });
    expect(followup.status, followup.text).toBe(200);
    expect(followup.body.outcome).toBe("live_session");
    for (const id of quick) expect((await getRun(first, id)).state).toBe("QUEUED");
    // The follow-up is still pending: the harness only takes follow-ups between commands.
    expect(commandsRun(await events(first, withFollowup))).toEqual([]);

    first.child.kill("SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");
    if ((await probeBwrap("bwrap")) === undefined) {
      // In the bubblewrap sandbox (--die-with-parent) the dead server's commands die with it.
      await waitFor(() => !agentPids.some(isAlive), { timeoutMs: 15_000, what: "sandboxed commands to die" });
    } else {
      // A plain subprocess outlives it (own process group); the test kills them in afterEach.
      expect(agentPids.some(isAlive)).toBe(true);
    }

    const second = await start(fixture, env);
    const all = [...sleeping, withFollowup, ...quick];

    // No run lost: every id is still listed.
    const listed = await second.api("GET", "/api/v1/agent/runs?limit=500");
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.runs.map((r: Json) => r.run_id).sort()).toEqual([...all].sort());

    // Every run reaches a terminal state within a deadline (lease 1.5 s + a few poll ticks + work).
    const final = new Map<string, Json>();
    await waitFor(
      async () => {
        for (const id of all) {
          if (final.has(id)) continue;
          const run = await getRun(second, id);
          if (TERMINAL.includes(run.state)) final.set(id, run);
        }
        return final.size === all.length;
      },
      { timeoutMs: 15_000, intervalMs: 100, what: "every run to end after the restart" },
    );

    for (const id of sleeping) {
      const run = final.get(id);
      expect(run.state, id).toBe("ERROR");
      expect(run.status_message).toMatchObject({
        error_code: "internal_error",
        reason: "worker_lost",
        retryable: true,
      });
      expect(run.status_message.message).toEqual(expect.any(String));
      expect(run.finished_at).toEqual(expect.any(String));
    }
    for (const id of quick) {
      const run = final.get(id);
      expect(run.state, id).toBe("SUCCEEDED");
      expect(commandsRun(await events(second, id))).toEqual([{ command: expect.any(String), exit_code: 0 }]);
    }

    // The undelivered follow-up was not dropped: the run was handed to a new execution that ran it.
    const resumed = final.get(withFollowup);
    expect(resumed.state).toBe("SUCCEEDED");
    expect(resumed.status_message).toBeUndefined();
    const transcript = await events(second, withFollowup);
    const states = transcript.filter((e) => e.type === "state").map((e) => e.data);
    expect(states.map((s) => s.state)).toEqual([
      "QUEUED",
      "INPROGRESS",
      "ERROR",
      "QUEUED",
      "INPROGRESS",
      "SUCCEEDED",
    ]);
    expect(states[2].status_message).toMatchObject({ error_code: "internal_error", reason: "worker_lost" });
    // Only the follow-up's own command ran in the new execution; the lost `sleep 30` was not repeated.
    expect(commandsRun(transcript)).toEqual([{ command: "echo after-crash > marker.txt", exit_code: 0 }]);
    expect(transcript.filter((e) => e.type === "tool_call").map((e) => e.data.command)).toEqual([
      "sleep 30",
      "echo after-crash > marker.txt",
    ]);
    const marker = await readFile(join(fixture.dataDir, "workspaces", withFollowup, "marker.txt"), "utf8");
    expect(marker).toBe("after-crash\n");

    // Nothing is left in flight.
    const open = await second.api("GET", "/api/v1/agent/runs?limit=500&state=INPROGRESS&state=QUEUED");
    expect(open.status, open.text).toBe(200);
    expect(open.body.runs).toEqual([]);
  });

  it("SIGTERM: exits 0 without waiting out the commands, the run is ERROR worker_shutdown and a follow-up resumes it", async () => {
    const fixture = await newFixture();
    const env = {
      DISPATCH_MAX_CONCURRENT_RUNS: "2",
      DISPATCH_POLL_INTERVAL_MS: "100",
      DISPATCH_SHUTDOWN_GRACE_MS: "300",
    };
    const first = await start(fixture, env);
    const runId = await createRun(first, "$ sleep 30");
    const pids = await waitForCommand(runId);
    expect((await getRun(first, runId)).state).toBe("INPROGRESS");
    // A second run holds a follow-up its agent has not taken yet when the shutdown comes.
    const steered = await createRun(first, "$ sleep 30");
    await waitForCommand(steered);
    const pending = await first.api("POST", `/api/v1/agent/runs/${steered}/followups`, {
      message: "$ echo steered > steered.txt",
    });
    expect(pending.body.outcome).toBe("live_session");

    first.child.kill("SIGTERM");
    // Well inside the commands' 30 s: a shutdown that waited for them to finish would not exit by then
    // (and after the restart below the run is ERROR worker_shutdown, not SUCCEEDED).
    const exit = await Promise.race([
      first.exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`no exit within 15 s of SIGTERM:\n${first.output()}`)), 15_000),
      ),
    ]);
    expect(exit, first.output()).toEqual({ code: 0, signal: null });
    // The graceful path stops the agent's process group; nothing is orphaned.
    await waitFor(() => !pids.some(isAlive) && runProcesses(runId).length === 0, {
      timeoutMs: 15_000,
      what: "the run's processes to be gone after shutdown",
    });

    const second = await start(fixture, env);
    const stopped = await getRun(second, runId);
    expect(stopped.state).toBe("ERROR");
    expect(stopped.status_message).toMatchObject({
      error_code: "internal_error",
      reason: "worker_shutdown",
      retryable: true,
    });
    expect(stopped.finished_at).toEqual(expect.any(String));
    // The undelivered follow-up is not lost: it starts the next execution by itself.
    const resumed = await waitForRun(second, steered, TERMINAL);
    expect(resumed.state).toBe("SUCCEEDED");
    // (The interrupted `sleep 30` has no result: it was killed by the shutdown.)
    expect(commandsRun(await events(second, steered))).toEqual([
      { command: "echo steered > steered.txt", exit_code: 0 },
    ]);

    const followup = await second.api("POST", `/api/v1/agent/runs/${runId}/followups`, {
      message: "$ echo resumed > resumed.txt",
    });
    expect(followup.status, followup.text).toBe(200);
    expect(followup.body.outcome).toBe("handoff_execution");
    const done = await waitForRun(second, runId, TERMINAL);
    expect(done.state).toBe("SUCCEEDED");
    expect(done.status_message).toBeUndefined();
    expect(commandsRun(await events(second, runId))).toEqual([
      { command: "echo resumed > resumed.txt", exit_code: 0 },
    ]);
    expect(await readFile(join(fixture.dataDir, "workspaces", runId, "resumed.txt"), "utf8")).toBe(
      "resumed\n",
    );
  });
});

describe("faults: cancel", () => {
  it("stops the agent's process and leaves the run CANCELLED", async () => {
    const t = await startTestDispatch({ DISPATCH_POLL_INTERVAL_MS: "100" });
    inProcess.push(t);
    const marker = `marker-${randomUUID()}`;
    const created = await t.api("POST", "/api/v1/agent/runs", { prompt: `$ sleep 60 # ${marker}` });
    expect(created.status, created.text).toBe(200);
    const runId = created.body.run_id as string;
    // The command itself is up (in the bwrap sandbox, after the sandbox's own processes).
    const pids = await waitFor(
      () => {
        const found = runProcesses(runId);
        return found.some((pid) => readCmdline(pid) === "sleep 60") ? found : undefined;
      },
      { what: "the sleep of the run" },
    );
    expect(pids.map((pid) => readCmdline(pid))).toContain("sleep 60");

    const cancel = await t.api("POST", `/api/v1/agent/runs/${runId}/cancel`);
    expect(cancel.status, cancel.text).toBe(200);
    expect(cancel.body).toBe(runId);
    // CANCELLED when the response is sent …
    const run = (await t.api("GET", `/api/v1/agent/runs/${runId}`)).body;
    expect(run.state).toBe("CANCELLED");
    expect(run.status_message).toMatchObject({ reason: "cancelled", retryable: false });
    expect(run.status_message).not.toHaveProperty("error_code");
    expect(run.status_message.message).toEqual(expect.any(String));
    // … and every process of the run is gone, well inside the sleep's 60 s: killed, not waited out.
    await waitFor(() => !pids.some(isAlive) && runProcesses(runId).length === 0, {
      timeoutMs: 15_000,
      what: "the run's sleep to be killed",
    });

    // The execution winds down without overwriting the cancel.
    await waitFor(() => t.dispatch.executor!.activeRuns === 0, { what: "the execution to end" });
    const after = (await t.api("GET", `/api/v1/agent/runs/${runId}`)).body;
    expect(after.state).toBe("CANCELLED");
    expect(after.status_message).toMatchObject({ reason: "cancelled" });
  });
});

function readCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
  } catch {
    return "";
  }
}
