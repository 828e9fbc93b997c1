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
  it("kill -9 mid-run, restart on the same data dir: every run resumes where it was and succeeds, none lost", async () => {
    const fixture = await newFixture();
    const env = {
      DISPATCH_MAX_CONCURRENT_RUNS: "3",
      DISPATCH_POLL_INTERVAL_MS: "100",
      DISPATCH_LEASE_MS: "1500",
      // The test polls one key fast; the rate limiter is not what is under test.
      DISPATCH_RATE_LIMIT_PER_MINUTE: "1000000",
      DISPATCH_RATE_LIMIT_BURST: "100000",
    };
    const first = await start(fixture, env);

    // Three slots busy: each run wrote its file and sleeps before checking it; one of them also gets a
    // follow-up it cannot take before it dies.
    const script = (n: number) => `$ echo data-${n} > data.txt\n$ sleep 4\n$ grep -qx data-${n} data.txt`;
    const working = [await createRun(first, script(0)), await createRun(first, script(1))];
    const withFollowup = await createRun(first, script(2));
    const agentPids: number[] = [];
    for (const id of [...working, withFollowup]) {
      await waitFor(async () => commandsRun(await events(first, id)).length === 1, {
        what: `the first command of ${id}`,
      });
      agentPids.push(...(await waitForCommand(id)));
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

    first.child.kill("SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");
    if ((await probeBwrap("bwrap")) === undefined) {
      // In the bubblewrap sandbox (--die-with-parent) the dead server's commands die with it.
      await waitFor(() => !agentPids.some(isAlive), { timeoutMs: 15_000, what: "sandboxed commands to die" });
    }

    const second = await start(fixture, env);
    const all = [...working, withFollowup, ...quick];
    // No run lost: every id is still listed, and the ones that were working are still INPROGRESS.
    const listed = await second.api("GET", "/api/v1/agent/runs?limit=500");
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.runs.map((r: Json) => r.run_id).sort()).toEqual([...all].sort());
    for (const id of working) expect((await getRun(second, id)).state).toBe("INPROGRESS");

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
      { timeoutMs: 30_000, intervalMs: 100, what: "every run to end after the restart" },
    );

    for (const [n, id] of [...working, withFollowup].entries()) {
      const run = final.get(id);
      expect(run.state, id).toBe("SUCCEEDED");
      const transcript = await events(second, id);
      // One execution that moved: no ERROR, no second claim from QUEUED.
      expect(transcript.filter((e) => e.type === "state").map((e) => e.data.state)).toEqual([
        "QUEUED",
        "INPROGRESS",
        "SUCCEEDED",
      ]);
      const moved = transcript.filter((e) => e.type === "log" && e.data.phase === "worker");
      expect(moved.map((e) => e.data.message)).toEqual([
        expect.stringContaining("resume 1 of 3"),
        expect.stringMatching(
          /Moved to another worker .*The step that was in flight is run again: `sleep 4`/,
        ),
      ]);
      // The file written before the crash was not written again, and is intact: the check passed.
      expect(commandsRun(transcript).slice(0, 3)).toEqual([
        { command: `echo data-${n} > data.txt`, exit_code: 0 },
        { command: "sleep 4", exit_code: 0 },
        { command: `grep -qx data-${n} data.txt`, exit_code: 0 },
      ]);
    }
    for (const id of quick) {
      const run = final.get(id);
      expect(run.state, id).toBe("SUCCEEDED");
      expect(commandsRun(await events(second, id))).toEqual([{ command: expect.any(String), exit_code: 0 }]);
    }
    // The follow-up sent before the crash was not dropped: the resumed execution took it.
    expect(commandsRun(await events(second, withFollowup)).at(-1)).toEqual({
      command: "echo after-crash > marker.txt",
      exit_code: 0,
    });
    const marker = await readFile(join(fixture.dataDir, "workspaces", withFollowup, "marker.txt"), "utf8");
    expect(marker).toBe("after-crash\n");

    // Nothing is left in flight.
    const open = await second.api("GET", "/api/v1/agent/runs?limit=500&state=INPROGRESS&state=QUEUED");
    expect(open.status, open.text).toBe(200);
    expect(open.body.runs).toEqual([]);
  });

  it("SIGTERM: exits 0 once the steps under way are stopped, the runs stay INPROGRESS and continue after the restart", async () => {
    const fixture = await newFixture();
    const env = {
      DISPATCH_MAX_CONCURRENT_RUNS: "2",
      DISPATCH_POLL_INTERVAL_MS: "100",
      DISPATCH_SHUTDOWN_GRACE_MS: "300",
      DISPATCH_RATE_LIMIT_PER_MINUTE: "1000000",
      DISPATCH_RATE_LIMIT_BURST: "100000",
    };
    const first = await start(fixture, env);
    const runId = await createRun(first, "$ echo one > one.txt\n$ sleep 8\n$ echo two > two.txt");
    await waitFor(async () => commandsRun(await events(first, runId)).length === 1, {
      what: "the first command",
    });
    const pids = await waitForCommand(runId);
    // A second run holds a follow-up its agent has not taken yet when the shutdown comes.
    const steered = await createRun(first, "$ sleep 8");
    await waitForCommand(steered);
    const pending = await first.api("POST", `/api/v1/agent/runs/${steered}/followups`, {
      message: "$ echo steered > steered.txt",
    });
    expect(pending.body.outcome).toBe("live_session");

    first.child.kill("SIGTERM");
    // The grace (300 ms) is for the step under way; the commands are not waited out (a hang guard only).
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
    for (const id of [runId, steered]) {
      const run = await waitForRun(second, id, TERMINAL, 45_000);
      expect(run.state, id).toBe("SUCCEEDED");
      const transcript = await events(second, id);
      expect(transcript.filter((e) => e.type === "state").map((e) => e.data.state)).toEqual([
        "QUEUED",
        "INPROGRESS",
        "SUCCEEDED",
      ]);
      expect(
        transcript.filter((e) => e.type === "log" && e.data.phase === "worker").map((e) => e.data.message),
      ).toEqual([
        expect.stringContaining("shutting down"),
        expect.stringContaining("Moved to another worker"),
      ]);
    }
    // The command done before the shutdown is not done again; the one stopped by it is.
    expect(commandsRun(await events(second, runId))).toEqual([
      { command: "echo one > one.txt", exit_code: 0 },
      { command: "sleep 8", exit_code: 0 },
      { command: "echo two > two.txt", exit_code: 0 },
    ]);
    // The sleep under way at the shutdown was stopped, not waited out: its only result is after the move.
    const order = (await events(second, runId)).filter(
      (e) => (e.type === "log" && e.data.phase === "worker") || e.type === "tool_result",
    );
    expect(order.map((e) => (e.type === "tool_result" ? e.data.command : "moved"))).toEqual([
      "echo one > one.txt",
      "moved",
      "moved",
      "sleep 8",
      "echo two > two.txt",
    ]);
    // The follow-up that had not reached the agent did after the move.
    expect(commandsRun(await events(second, steered)).at(-1)).toEqual({
      command: "echo steered > steered.txt",
      exit_code: 0,
    });
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
