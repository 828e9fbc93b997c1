import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";

/** A process started by `Sandbox.start`: piped stdio, and a way to end it with everything it started. */
export interface SandboxProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Settles once the process has exited and its output streams are closed (also when it could not start). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>;
  /** Kills its process group (TERM, then KILL after a grace); resolves once it has exited. */
  stop(): Promise<void>;
}

const KILL_GRACE_MS = 500;

/**
 * Spawns `argv` as the leader of its own process group (the sandbox's wrapper: cgroup entry, bwrap), so
 * that stopping it, or aborting `signal`, ends every process it started; the group is also killed once
 * the leader exits, so nothing it left in the background outlives it.
 */
export function startInProcessGroup(
  argv: string[],
  opts: { cwd: string; env: Record<string, string>; signal: AbortSignal },
): SandboxProcess {
  const [program, ...args] = argv;
  if (program === undefined) throw new Error("startInProcessGroup: empty argv");
  const child = spawn(program, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: "pipe" });
  const killGroup = (sig: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, sig);
    } catch {
      // ESRCH: the group is already gone.
    }
  };
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>(
    (resolve) => {
      child.once("error", (error) => resolve({ code: null, signal: null, error }));
      child.once("exit", () => killGroup("SIGKILL"));
      child.once("close", (code, signal) => resolve({ code, signal }));
    },
  );
  const stop = async () => {
    killGroup("SIGTERM");
    const grace = setTimeout(() => killGroup("SIGKILL"), KILL_GRACE_MS);
    await exited;
    clearTimeout(grace);
  };
  const onAbort = () => void stop();
  opts.signal.addEventListener("abort", onAbort, { once: true });
  if (opts.signal.aborted) onAbort();
  void exited.then(() => opts.signal.removeEventListener("abort", onAbort));
  // A peer that exits early makes writes to its stdin fail: that surfaces as its exit, not a crash.
  child.stdin.on("error", () => {});
  return { child, exited, stop };
}
