import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { CommandSpawner } from "../../src/sandbox/command-spawner.ts";
import { type CommandOptions, runArgvInProcessGroup } from "../../src/sandbox/process-group.ts";
import { waitFor } from "../support/dispatch.ts";
import { isAlive, runProcesses } from "../support/server-process.ts";

let counter = 0;
const newRunId = () => `spawner-${process.pid}-${++counter}`;

function options(runId: string, extra: Partial<CommandOptions> = {}): CommandOptions {
  return {
    cwd: "/tmp",
    env: { PATH: "/usr/bin:/bin", DISPATCH_RUN_ID: runId },
    timeoutMs: 10_000,
    signal: new AbortController().signal,
    ...extra,
  };
}

function logLines() {
  const lines: Array<{ level: number; msg: string }> = [];
  const log = createLogger("info", { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { log, lines };
}

/** The parent pid of `pid`, from /proc. */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

const helperSpawner = new CommandSpawner(createLogger("silent"));
const runners: Array<
  [string, (argv: string[], opts: CommandOptions) => ReturnType<typeof runArgvInProcessGroup>]
> = [
  ["from this process", runArgvInProcessGroup],
  ["through the helper process", (argv, opts) => helperSpawner.run(argv, opts)],
];

describe.each(runners)("a command started %s", (_, run) => {
  const bash = (command: string, runId: string, extra: Partial<CommandOptions> = {}) =>
    run(["bash", "-c", command], options(runId, extra));

  it("reports its exit code, its output (stdout and stderr) and the signal that ended it", async () => {
    const done = await bash("echo out; echo err >&2; exit 3", newRunId());
    expect(done).toMatchObject({ exitCode: 3, signal: null, timedOut: false, aborted: false });
    expect(done.output).toContain("out\n");
    expect(done.output).toContain("err\n");
    const killed = await bash("kill -TERM $$", newRunId());
    expect(killed).toMatchObject({ exitCode: null, signal: "SIGTERM" });
    const missing = await run(["/nonexistent/program"], options(newRunId()));
    expect(missing.exitCode).toBe(127);
    expect(missing.output).toMatch(/failed to start: .*ENOENT/);
  });

  it("keeps the tail of its output within the limit and says it was cut", async () => {
    const res = await bash("head -c 300000 /dev/zero | tr '\\0' a; echo -n END", newRunId(), {
      outputLimit: 1000,
    });
    expect(res.output.length).toBe(1000);
    expect(res.output.endsWith("aEND")).toBe(true);
    expect(res.truncated).toBe(true);
  });

  it("kills its whole process group on cancel, on timeout and when it exits", async () => {
    const cancelled = newRunId();
    const controller = new AbortController();
    const pending = bash("sleep 60 & sleep 61 & wait", cancelled, { signal: controller.signal });
    await waitFor(() => runProcesses(cancelled).length >= 3 || undefined, { what: "the sleeps to start" });
    const pids = runProcesses(cancelled);
    controller.abort();
    expect((await pending).aborted).toBe(true);
    await waitFor(() => !pids.some(isAlive) || undefined, { what: "every process to die" });

    const timedOut = newRunId();
    const timed = await bash("sleep 60 & wait", timedOut, { timeoutMs: 300 });
    expect(timed.timedOut).toBe(true);
    await waitFor(() => runProcesses(timedOut).filter(isAlive).length === 0 || undefined, {
      what: "the timed-out sleeps to die",
    });

    // What it left in the background ends with it.
    const background = newRunId();
    const left = await bash("sleep 60 > /dev/null 2>&1 & echo started", background);
    expect(left.output).toBe("started\n");
    await waitFor(() => runProcesses(background).filter(isAlive).length === 0 || undefined, {
      what: "the background sleep to die",
    });

    const before = new AbortController();
    before.abort();
    const aborted = await bash("sleep 60", newRunId(), { signal: before.signal });
    expect(aborted.aborted).toBe(true);
  });
});

describe("the helper process", () => {
  it("forks the commands: their parent is the helper, whose parent is this process", async () => {
    const runId = newRunId();
    const started: number[] = [];
    const res = await helperSpawner.run(
      ["bash", "-c", 'echo "$PPID"; tr "\\0" " " < /proc/$PPID/cmdline'],
      options(runId, { onStart: (pid) => started.push(pid) }),
    );
    const [ppid, cmdline] = res.output.split("\n");
    expect(Number(ppid)).not.toBe(process.pid);
    expect(cmdline).toContain("command-spawner-helper");
    expect(started).toHaveLength(1);

    const running = newRunId();
    const controller = new AbortController();
    let leader = 0;
    const pending = helperSpawner.run(
      ["bash", "-c", "sleep 60"],
      options(running, { signal: controller.signal, onStart: (pid) => (leader = pid) }),
    );
    await waitFor(() => leader || undefined, { what: "the command to start" });
    expect(parentOf(parentOf(leader))).toBe(process.pid);
    controller.abort();
    await pending;
  });

  it("is started again after it died; the commands it was running are killed and say so", async () => {
    const { log, lines } = logLines();
    const spawner = new CommandSpawner(log);
    const runId = newRunId();
    let leader = 0;
    const pending = spawner.run(
      ["bash", "-c", "sleep 60 & wait"],
      options(runId, { onStart: (pid) => (leader = pid) }),
    );
    await waitFor(() => (leader && runProcesses(runId).length >= 2) || undefined, {
      what: "the command to start",
    });
    const pids = runProcesses(runId);
    const helper = parentOf(leader);
    process.kill(helper, "SIGKILL");
    const lost = await pending;
    expect(lost.exitCode).toBeNull();
    expect(lost.output).toMatch(
      /the process that started this command exited \(SIGKILL\); the command was killed/,
    );
    await waitFor(() => !pids.some(isAlive) || undefined, { what: "the lost command's processes to die" });
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
      "the process that starts sandbox commands exited (SIGKILL); starting another",
    ]);

    const again = await spawner.run(["bash", "-c", 'echo "ran by $PPID"'], options(newRunId()));
    expect(again.exitCode).toBe(0);
    expect(again.output).toMatch(/^ran by \d+\n$/);
    expect(again.output).not.toContain(`ran by ${helper}\n`);
  });

  it("that cannot start leaves commands to this process, and the log says so once", async () => {
    const { log, lines } = logLines();
    const spawner = new CommandSpawner(log, { helperArgv: [process.execPath, "/nonexistent/helper.ts"] });
    const results = await Promise.all(
      ["echo one", "echo two"].map((c) => spawner.run(["bash", "-c", c], options(newRunId()))),
    );
    expect(results.map((r) => [r.exitCode, r.output])).toEqual([
      [0, "one\n"],
      [0, "two\n"],
    ]);
    const third = await spawner.run(["bash", "-c", 'echo "$PPID"'], options(newRunId()));
    expect(Number(third.output)).toBe(process.pid);
    const errors = lines.filter((l) => l.level === 50).map((l) => l.msg);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /could not start \(exit code 1: Error: Cannot find module .*\/nonexistent\/helper.ts.*\): commands are started from Dispatch's own process from now on/,
    );
  });

  it("ends with Dispatch, and with it the commands it started", async () => {
    const runId = newRunId();
    const owner = spawn(
      process.execPath,
      ["test/sandbox/fixtures/spawner-owner.ts", "sleep 60 & wait", runId],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    await new Promise((resolve) => owner.stdout!.once("data", resolve));
    await waitFor(() => runProcesses(runId).length >= 2 || undefined, { what: "the command to start" });
    const pids = runProcesses(runId);
    owner.kill("SIGKILL");
    await waitFor(() => !pids.some(isAlive) || undefined, { what: "the command to die with its owner" });
  });
});
