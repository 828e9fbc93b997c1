import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeBwrap } from "../../src/executor/bwrap-sandbox.ts";
import { detectCgroups } from "../../src/executor/cgroups.ts";
import type { Sandbox } from "../../src/executor/sandbox.ts";
import { createSandboxProvider, SandboxUnavailableError } from "../../src/executor/sandbox-provider.ts";
import { createLogger } from "../../src/log.ts";
import { startTestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { isAlive, runProcesses } from "../support/server-process.ts";

const bwrapProblem = await probeBwrap("/usr/bin/bwrap");
const log = createLogger("silent");
const PROVIDER_KEY = "sk-sandbox-test-provider-key-0123456789";

let root: string;
let dataDir: string;
let listener: Server;
let port: number;

beforeAll(async () => {
  process.env.OPENAI_API_KEY = PROVIDER_KEY;
  root = await mkdtemp(join(tmpdir(), "dispatch-sandbox-"));
  dataDir = join(root, "data");
  await mkdir(join(dataDir, "workspaces"), { recursive: true });
  await writeFile(join(dataDir, "dispatch.db"), "secret database");
  listener = createServer((socket) => socket.end("hello\n"));
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  port = (listener.address() as { port: number }).port;
});
afterAll(async () => {
  delete process.env.OPENAI_API_KEY;
  await new Promise((resolve) => listener.close(resolve));
  await rm(root, { recursive: true, force: true });
});

let counter = 0;
async function newSandbox(mode: "bwrap" | "none", agentNetwork = false) {
  const runId = `run-${process.pid}-${++counter}`;
  const workspace = join(dataDir, "workspaces", runId);
  await mkdir(workspace, { recursive: true });
  const provider = await createSandboxProvider({
    mode,
    bwrapPath: "/usr/bin/bwrap",
    hide: [dataDir],
    limits: { memoryBytes: 512 * 2 ** 20, pidsMax: 512 },
    log,
  });
  const sandbox = await provider.create({ workspace, runId, agentNetwork });
  return { sandbox, runId, workspace, provider };
}

const exec = (sandbox: Sandbox, command: string, opts: { network?: boolean; signal?: AbortSignal } = {}) =>
  sandbox.exec(command, {
    timeoutMs: 10_000,
    signal: opts.signal ?? new AbortController().signal,
    ...(opts.network !== undefined ? { network: opts.network } : {}),
  });

const connect = () => `exec 3<>/dev/tcp/127.0.0.1/${port} && head -n1 <&3`;

describe.skipIf(bwrapProblem !== undefined)("bubblewrap sandbox", () => {
  it("keeps the system read-only and writes only in the workspace", async () => {
    const { sandbox, workspace } = await newSandbox("bwrap");
    expect(sandbox.kind).toBe("bwrap");
    const etc = await exec(sandbox, "touch /etc/dispatch-sandbox-test");
    expect(etc.exitCode).not.toBe(0);
    expect(etc.output).toMatch(/Read-only file system/);
    expect(existsSync("/etc/dispatch-sandbox-test")).toBe(false);

    const up = await exec(
      sandbox,
      'touch "$HOME/../escaped" ; touch /tmp/dispatch-private-x; touch inside; pwd',
    );
    expect(up.output).toContain(workspace);
    expect(existsSync(join(workspace, "..", "escaped"))).toBe(false);
    expect(existsSync("/tmp/dispatch-private-x")).toBe(false);
    expect(existsSync(join(workspace, "inside"))).toBe(true);
    await sandbox.close?.();
  });

  it("hides Dispatch's data directory (database, other runs' workspaces)", async () => {
    const { sandbox } = await newSandbox("bwrap");
    const other = await newSandbox("bwrap");
    await writeFile(join(other.workspace, "theirs.txt"), "other run");
    const res = await exec(
      sandbox,
      `cat ${join(dataDir, "dispatch.db")}; cat ${join(other.workspace, "theirs.txt")}; ls ${join(dataDir, "workspaces")}`,
    );
    expect(res.output).not.toContain("secret database");
    expect(res.output).not.toContain("other run");
    const listing = await exec(sandbox, `ls -A ${join(dataDir, "workspaces")}`);
    expect(listing.output.trim().split("\n")).toEqual([sandbox.workspace.split("/").at(-1)]);
    await sandbox.close?.();
    await other.sandbox.close?.();
  });

  it("has no network in the agent phase, and the network for setup steps or when the environment allows it", async () => {
    const { sandbox } = await newSandbox("bwrap");
    const agent = await exec(sandbox, connect());
    expect(agent.exitCode).not.toBe(0);
    expect(agent.output).toMatch(/Connection refused|Network is unreachable/);
    const interfaces = await exec(sandbox, "cat /proc/net/dev");
    expect(interfaces.output).toContain("lo:");
    expect(interfaces.output.split("\n").filter((l) => l.includes(":")).length).toBe(1);

    const setup = await exec(sandbox, connect(), { network: true });
    expect(setup.exitCode, setup.output).toBe(0);
    expect(setup.output).toContain("hello");

    const allowed = await newSandbox("bwrap", true);
    expect((await exec(allowed.sandbox, connect())).output).toContain("hello");
    await sandbox.close?.();
    await allowed.sandbox.close?.();
  });

  it("builds the environment from nothing: no provider key, no Dispatch secret", async () => {
    const { sandbox, runId } = await newSandbox("bwrap");
    const res = await exec(sandbox, "env");
    expect(res.output).toContain(`DISPATCH_RUN_ID=${runId}`);
    expect(res.output).not.toContain(PROVIDER_KEY);
    expect(res.output).not.toContain("OPENAI_API_KEY");
    await sandbox.close?.();
  });

  it("kills the whole process tree (own pid namespace) on cancel, and on timeout", async () => {
    const { sandbox, runId } = await newSandbox("bwrap");
    const controller = new AbortController();
    const pending = exec(sandbox, "sleep 60 & (sleep 61 &) ; setsid sleep 62 & wait", {
      signal: controller.signal,
    });
    await waitFor(() => runProcesses(runId).length >= 4 || undefined, { what: "the sleeps to start" });
    const pids = runProcesses(runId);
    controller.abort();
    const result = await pending;
    expect(result.aborted).toBe(true);
    // Well inside the sleeps' 60 s: only the kill ends them this soon.
    await waitFor(() => !pids.some(isAlive) || undefined, {
      timeoutMs: 15_000,
      what: "every process to die",
    });

    const timed = await sandbox.exec("sleep 60", { timeoutMs: 200, signal: new AbortController().signal });
    expect(timed.timedOut).toBe(true);
    await sandbox.close?.();
  });

  it("puts a run's processes in its own cgroup with memory and pids limits where cgroups are writable", async () => {
    const detected = await detectCgroups();
    if (!detected.cgroups) return; // read-only cgroups here: limits are skipped (logged at start-up)
    const { sandbox, runId, provider } = await newSandbox("bwrap");
    expect(provider.limits).toMatch(/cgroup v[12] limits/);
    const controller = new AbortController();
    const pending = exec(sandbox, "sleep 30", { signal: controller.signal });
    // The command (`sleep`, the last process of the run) is in the run's cgroup, and so is every process.
    await waitFor(() =>
      runProcesses(runId).some((pid) => readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "sleep"),
    );
    for (const pid of runProcesses(runId)) {
      expect(readFileSync(`/proc/${pid}/cgroup`, "utf8")).toContain(`dispatch-run-${runId}`);
    }
    const dirs = detected.cgroups.parents.map((p) => join(p, `dispatch-run-${runId}`));
    const limits = dirs.map((d) =>
      ["memory.limit_in_bytes", "memory.max", "pids.max"]
        .filter((f) => existsSync(join(d, f)))
        .map((f) => readFileSync(join(d, f), "utf8").trim()),
    );
    expect(limits.flat()).toEqual(expect.arrayContaining([String(512 * 2 ** 20), "512"]));
    controller.abort();
    await pending;
    await sandbox.close?.();
    for (const parent of detected.cgroups.parents) {
      expect(existsSync(join(parent, `dispatch-run-${runId}`))).toBe(false);
    }
  });
});

describe("without bubblewrap", () => {
  it("DISPATCH_SANDBOX=bwrap stops start-up when bwrap cannot run", async () => {
    await expect(
      createSandboxProvider({ mode: "bwrap", bwrapPath: "/nonexistent/bwrap", hide: [], limits: {}, log }),
    ).rejects.toBeInstanceOf(SandboxUnavailableError);
    await expect(
      startTestDispatch({ DISPATCH_SANDBOX: "bwrap", DISPATCH_BWRAP_PATH: "/nonexistent/bwrap" }),
    ).rejects.toThrow(/DISPATCH_SANDBOX=bwrap but bubblewrap cannot run here/);
  });

  it("falls back to a plain subprocess with a warning on the run's transcript", async () => {
    const envs: Array<Record<string, string>> = [
      { DISPATCH_BWRAP_PATH: "/nonexistent/bwrap" },
      { DISPATCH_SANDBOX: "none" },
    ];
    for (const env of envs) {
      const t = await startTestDispatch(env);
      try {
        const id = (await t.api("POST", "/api/v1/agent/runs", { prompt: "$ env" })).body.run_id;
        await waitForState(t, id, ["SUCCEEDED"]);
        const events = (await t.api("GET", `/api/v1/agent/runs/${id}/events`)).body.events as Array<{
          type: string;
          data: Record<string, unknown>;
        }>;
        const warning = events.find((e) => e.type === "log" && e.data.level === "warn");
        expect(String(warning?.data.message)).toMatch(
          env.DISPATCH_SANDBOX ? /Sandbox disabled/ : /bubblewrap \(bwrap\) is not usable/,
        );
        // Still no provider key in the plain subprocess's environment.
        const output = String(events.find((e) => e.type === "tool_result")?.data.output);
        expect(output).not.toContain(PROVIDER_KEY);
      } finally {
        await t.stop();
      }
    }
  });

  it("a plain sandbox still kills its process group on cancel", async () => {
    const { sandbox, runId } = await newSandbox("none");
    expect(sandbox.kind).toBe("none");
    const controller = new AbortController();
    const pending = exec(sandbox, "sleep 60 & sleep 61 & wait", { signal: controller.signal });
    await waitFor(() => runProcesses(runId).length >= 3 || undefined, { what: "the sleeps to start" });
    const pids = runProcesses(runId);
    controller.abort();
    expect((await pending).aborted).toBe(true);
    await waitFor(() => !pids.some(isAlive) || undefined, {
      timeoutMs: 15_000,
      what: "every process to die",
    });
    await sandbox.close?.();
  });
});
