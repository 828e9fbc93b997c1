import { spawn } from "node:child_process";

export interface CommandResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** stdout and stderr interleaved, the last `outputLimit` bytes. */
  output: string;
  truncated: boolean;
  timedOut: boolean;
  aborted: boolean;
}

export interface CommandOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  signal: AbortSignal;
  outputLimit?: number;
  /** Told the leader's pid (its process group) once it is started. */
  onStart?: (pid: number) => void;
}

const KILL_GRACE_MS = 500;
/** After the leader exited, how long output from the rest of its group may still arrive. */
const ESCAPED_PIPES_GRACE_MS = 2000;

/**
 * Runs `bash -c command` as the leader of its own process group, so that cancel or timeout kills the
 * whole tree (a plain kill of bash would leave `sleep` and friends running). The group is also killed
 * after a normal exit, so background children cannot outlive their command.
 */
export function runInProcessGroup(command: string, opts: CommandOptions): Promise<CommandResult> {
  return runArgvInProcessGroup(["bash", "-c", command], opts);
}

/**
 * The same for any program: `argv[0]` (looked up on the env's PATH when not absolute) with its arguments,
 * no shell. Sandboxes use it to put `bwrap …` (and a cgroup entry step) in front of `bash -c`.
 */
export function runArgvInProcessGroup(argv: string[], opts: CommandOptions): Promise<CommandResult> {
  const limit = opts.outputLimit ?? 64 * 1024;
  const [program, ...args] = argv;
  if (program === undefined) throw new Error("runArgvInProcessGroup: empty argv");
  return new Promise((resolve) => {
    const child = spawn(program, args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    if (child.pid !== undefined) opts.onStart?.(child.pid);
    let chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    const collect = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > limit * 2) {
        const all = Buffer.concat(chunks);
        chunks = [all.subarray(all.length - limit)];
        size = limit;
        truncated = true;
      }
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);

    let timedOut = false;
    let aborted = false;
    const killGroup = (sig: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, sig);
      } catch {
        // ESRCH: the group is already gone.
      }
    };
    const stop = () => {
      killGroup("SIGTERM");
      setTimeout(() => killGroup("SIGKILL"), KILL_GRACE_MS).unref();
    };
    const onAbort = () => {
      aborted = true;
      stop();
    };
    opts.signal.addEventListener("abort", onAbort, { once: true });
    if (opts.signal.aborted) onAbort();
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, opts.timeoutMs);

    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    const finish = () => {
      clearTimeout(timer);
      opts.signal.removeEventListener("abort", onAbort);
      let buf = Buffer.concat(chunks);
      if (buf.length > limit) {
        buf = buf.subarray(buf.length - limit);
        truncated = true;
      }
      resolve({
        exitCode: exit?.code ?? null,
        signal: exit?.signal ?? null,
        output: buf.toString("utf8"),
        truncated,
        timedOut,
        aborted,
      });
    };
    let finished = false;
    const finishOnce = () => {
      if (finished) return;
      finished = true;
      finish();
    };
    child.on("error", (err) => {
      collect(Buffer.from(`failed to start: ${err.message}\n`));
      exit = { code: 127, signal: null };
      finishOnce();
    });
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      killGroup("SIGKILL");
      // A process that left the group (setsid) may still hold the pipes: the command is over when its
      // leader is, and what escaped is the run's cgroup's to kill (Sandbox.close).
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finishOnce();
      }, ESCAPED_PIPES_GRACE_MS).unref();
    });
    child.on("close", finishOnce);
  });
}
