import { type ChildProcess, spawn } from "node:child_process";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "pino";
import type { SpawnerRequest } from "./command-spawner-helper.ts";
import { type CommandOptions, type CommandResult, runArgvInProcessGroup } from "./process-group.ts";

/** The helper beside this file, as this build names its modules (.ts from src, .js from dist). */
const HELPER = fileURLToPath(
  new URL(`./command-spawner-helper${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

/** Helper exits within this window after which commands are spawned from this process instead. */
const CRASH_WINDOW_MS = 60_000;
const CRASHES_BEFORE_DIRECT = 3;

type SpawnerReply = ["ready"] | ["started", number, number] | ["done", number, CommandResult];

interface Pending {
  argv: string[];
  opts: CommandOptions;
  resolve: (result: CommandResult) => void;
  /** The command's process group, once the helper has started it. */
  pid?: number;
  /** Sent to the helper (a queued command has not been yet). */
  sent: boolean;
}

/**
 * Starts sandbox commands (runArgvInProcessGroup's contract, unchanged) from a small long-lived helper
 * process (command-spawner-helper.ts) rather than from Dispatch's main thread: a fork copies the forking
 * process's page tables while its event loop waits, which made `spawn` the largest item of Dispatch's
 * profile under load (bench/README.md, "Third round: starting commands and bubblewrap"). The loop only
 * sends the command and reads its result.
 *
 * One helper per Dispatch process, started with the first command, restarted with the next after it
 * died (the commands it was running are killed and end with exit code null, saying so). A helper that
 * cannot start, or dies three times within a minute, is given up: commands are then spawned from this
 * process, as before, and the log says so once.
 */
export class CommandSpawner {
  private helper: ChildProcess | undefined;
  private ready = false;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private direct = false;
  private crashes: number[] = [];
  private readonly log: Logger;
  private readonly helperArgv: string[];

  constructor(log: Logger, opts: { helperArgv?: string[] } = {}) {
    this.log = log;
    this.helperArgv = opts.helperArgv ?? [process.execPath, ...typeStrippingFlags(), HELPER];
  }

  run(argv: string[], opts: CommandOptions): Promise<CommandResult> {
    if (this.direct) return runArgvInProcessGroup(argv, opts);
    const helper = this.helper ?? this.startHelper();
    const id = this.nextId++;
    return new Promise((resolve) => {
      const onAbort = () => {
        const command = this.pending.get(id);
        if (command?.sent) this.send(helper, ["abort", id]);
      };
      const command: Pending = {
        argv,
        opts,
        sent: false,
        resolve: (result) => {
          opts.signal.removeEventListener("abort", onAbort);
          resolve(result);
        },
      };
      this.pending.set(id, command);
      // Commands keep Dispatch's loop alive while they run, as their own child processes did.
      helper.channel?.ref();
      if (this.ready) this.dispatch(helper, id, command);
      opts.signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Hands a command to the helper; one whose signal already aborted is started and stopped at once there. */
  private dispatch(helper: ChildProcess, id: number, command: Pending): void {
    const { argv, opts } = command;
    command.sent = true;
    this.send(helper, ["run", id, argv, opts.cwd, opts.env, opts.timeoutMs, opts.outputLimit ?? null]);
    if (opts.signal.aborted) this.send(helper, ["abort", id]);
  }

  private send(helper: ChildProcess, message: SpawnerRequest): void {
    // A send that fails (the channel closed meanwhile) needs no handling here: the helper's exit settles
    // the command. The callback keeps the failure from being thrown as an 'error' event.
    if (helper.connected) helper.send(message, () => {});
  }

  private startHelper(): ChildProcess {
    const [program, ...args] = this.helperArgv as [string, ...string[]];
    // Its own environment holds nothing of Dispatch's: each command brings the one it runs with.
    const helper = spawn(program, args, {
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    });
    this.helper = helper;
    this.ready = false;
    helper.unref();
    // What it said last before it ended, for the log line that says why.
    let said = "";
    helper.stderr?.on("data", (chunk: Buffer) => {
      said = (said + chunk.toString("utf8")).slice(-2000);
    });
    (helper.stderr as { unref?: () => void } | null)?.unref?.();
    const lastLine = () =>
      said
        .trim()
        .split("\n")
        .find((l) => /error/i.test(l)) ?? said.trim().split("\n").at(-1);
    helper.on("message", (reply: SpawnerReply) => this.onReply(helper, reply));
    helper.on("error", (err) => this.onExit(helper, err.message));
    helper.on("close", (code, signal) => {
      const line = lastLine();
      this.onExit(helper, `${signal ?? `exit code ${code}`}${line ? `: ${line}` : ""}`);
    });
    return helper;
  }

  private onReply(helper: ChildProcess, reply: SpawnerReply): void {
    if (reply[0] === "ready") {
      this.ready = true;
      for (const [id, command] of this.pending) if (!command.sent) this.dispatch(helper, id, command);
      return;
    }
    const command = this.pending.get(reply[1]);
    if (!command) return;
    if (reply[0] === "started") {
      command.pid = reply[2];
      command.opts.onStart?.(reply[2]);
      return;
    }
    this.pending.delete(reply[1]);
    if (this.pending.size === 0) helper.channel?.unref();
    command.resolve(reply[2]);
  }

  private onExit(helper: ChildProcess, why: string): void {
    if (this.helper !== helper) return;
    this.helper = undefined;
    const wasReady = this.ready;
    this.ready = false;
    const now = Date.now();
    this.crashes = [...this.crashes.filter((t) => now - t < CRASH_WINDOW_MS), now];
    if (!wasReady || this.crashes.length >= CRASHES_BEFORE_DIRECT) {
      this.direct = true;
      this.log.error(
        { helper: this.helperArgv, why },
        `the process that starts sandbox commands ${wasReady ? "keeps exiting" : "could not start"} (${why}): commands are started from Dispatch's own process from now on`,
      );
    } else {
      this.log.warn({ why }, `the process that starts sandbox commands exited (${why}); starting another`);
    }
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const command of pending) {
      // Never handed over: nothing ran, so it starts now, from here or from the next helper.
      if (!command.sent) {
        void this.run(command.argv, command.opts).then(command.resolve);
        continue;
      }
      if (command.pid !== undefined) killGroup(command.pid);
      command.resolve({
        exitCode: null,
        signal: null,
        output: `dispatch: the process that started this command exited (${why}); the command was killed\n`,
        truncated: false,
        timedOut: false,
        aborted: command.opts.signal.aborted,
      });
    }
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Node 22 before 22.18 runs TypeScript only with this flag; the helper needs it as Dispatch did. */
function typeStrippingFlags(): string[] {
  return process.execArgv.filter((a) =>
    /^--(experimental-strip-types|experimental-transform-types)$/.test(a),
  );
}

let shared: CommandSpawner | undefined;

/** This process's one spawner (its helper starts with the first command); `log` is the first caller's. */
export function commandSpawner(log: Logger): CommandSpawner {
  shared ??= new CommandSpawner(log.child({ component: "command-spawner" }));
  return shared;
}
