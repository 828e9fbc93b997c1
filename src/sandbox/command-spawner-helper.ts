/**
 * The small process that starts sandbox commands for Dispatch (command-spawner.ts). Dispatch's heap is
 * large and a fork copies its page tables on the main thread, so each command is forked here instead:
 * the same runArgvInProcessGroup (process group, timeout, cancel, output limit) in a process of a few
 * megabytes of heap. Messages on the IPC channel:
 *
 *   in:  ["run", id, argv, cwd, env, timeoutMs, outputLimit | null]   ["abort", id]
 *   out: ["ready"]   ["started", id, pid]   ["done", id, CommandResult]
 *
 * It loads nothing but node:child_process and holds no secret: each command's environment comes with it.
 */
import { runArgvInProcessGroup } from "./process-group.ts";

export type SpawnerRequest =
  | ["run", number, string[], string, Record<string, string>, number, number | null]
  | ["abort", number];

const running = new Map<number, { abort: AbortController; pid?: number }>();

const send = (message: unknown) => {
  if (process.connected) process.send?.(message);
};

process.on("message", (message: SpawnerRequest) => {
  if (message[0] === "abort") {
    running.get(message[1])?.abort.abort();
    return;
  }
  const [, id, argv, cwd, env, timeoutMs, outputLimit] = message;
  const command: { abort: AbortController; pid?: number } = { abort: new AbortController() };
  running.set(id, command);
  void runArgvInProcessGroup(argv, {
    cwd,
    env,
    timeoutMs,
    signal: command.abort.signal,
    ...(outputLimit !== null ? { outputLimit } : {}),
    onStart: (pid) => {
      command.pid = pid;
      send(["started", id, pid]);
    },
  }).then((result) => {
    running.delete(id);
    send(["done", id, result]);
  });
});

// Dispatch is gone (its end of the channel closed): so are its runs. Bubblewrap's --die-with-parent
// follows this process; plain commands are killed here.
process.on("disconnect", () => {
  for (const { pid } of running.values()) {
    if (pid === undefined) continue;
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // ESRCH: the group is already gone.
    }
  }
  process.exit(0);
});

send(["ready"]);
