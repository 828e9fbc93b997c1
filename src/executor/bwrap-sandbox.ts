import { execFile } from "node:child_process";
import { realpath } from "node:fs/promises";
import { isAbsolute, relative } from "node:path";
import type { RunCgroup } from "./cgroups.ts";
import { type CommandResult, runArgvInProcessGroup } from "./process-group.ts";
import { resolveInside, type Sandbox, type SandboxExecOptions } from "./sandbox.ts";
import { sandboxEnv } from "./workspace.ts";

/**
 * A run's commands inside bubblewrap: the whole system read-only, the workspace the only writable
 * directory, a private /tmp, Dispatch's data directory (database, other runs' workspaces) hidden, own
 * pid/net/ipc/uts namespaces (the network is only `lo` unless the step or the environment allows it),
 * and `--die-with-parent` so that a killed Dispatch leaves no agent process behind. The outer bwrap leads
 * its own process group (runArgvInProcessGroup), so cancel and timeout kill the sandbox and, with it,
 * everything in its pid namespace.
 */
export class BwrapSandbox implements Sandbox {
  readonly kind: string = "bwrap";
  readonly workspace: string;
  private readonly opts: BwrapSandboxOptions;

  constructor(opts: BwrapSandboxOptions) {
    this.opts = opts;
    this.workspace = opts.workspace;
  }

  exec(command: string, opts: SandboxExecOptions): Promise<CommandResult> {
    const network = opts.network ?? this.opts.network;
    const argv = [
      ...(this.opts.cgroup?.enter ?? []),
      this.opts.bwrap,
      ...bwrapArgs({ workspace: this.workspace, hide: this.opts.hide, network }),
      "bash",
      "-c",
      command,
    ];
    return runArgvInProcessGroup(argv, {
      cwd: this.workspace,
      env: sandboxEnv(this.workspace, this.opts.runId),
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      ...(opts.outputLimit !== undefined ? { outputLimit: opts.outputLimit } : {}),
    });
  }

  async resolvePath(path: string): Promise<string> {
    return resolveInside(this.workspace, path);
  }

  async close(): Promise<void> {
    await this.opts.cgroup?.remove();
  }
}

export interface BwrapSandboxOptions {
  /** The bwrap executable (absolute path). */
  bwrap: string;
  /** The run's workspace, a real path (no symlinks: bwrap binds it at the same place). */
  workspace: string;
  runId: string;
  /** Directories replaced by an empty tmpfs (Dispatch's data directory). */
  hide: string[];
  /** Network for commands that do not say (the agent phase): the environment's `agent_network`. */
  network: boolean;
  cgroup?: RunCgroup;
}

export function bwrapArgs(opts: { workspace: string; hide: string[]; network: boolean }): string[] {
  const args = ["--ro-bind", "/", "/", "--tmpfs", "/tmp"];
  for (const dir of opts.hide) {
    if (dir === "/" || within("/tmp", dir)) continue; // /tmp is private already
    args.push("--tmpfs", dir);
  }
  args.push(
    "--bind",
    opts.workspace,
    opts.workspace,
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--unshare-all",
    ...(opts.network ? ["--share-net"] : []),
    "--die-with-parent",
    "--new-session",
    "--chdir",
    opts.workspace,
    "--",
  );
  return args;
}

function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** Runs a trivial command in a sandbox like a run's: undefined when bwrap works, else why not. */
export function probeBwrap(bwrap: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(
      bwrap,
      [...bwrapArgs({ workspace: "/tmp", hide: [], network: false }), "true"],
      { timeout: 10_000, env: { PATH: "/usr/bin:/bin" } },
      (err, _stdout, stderr) => {
        if (!err) return resolve(undefined);
        const code = (err as NodeJS.ErrnoException).code;
        resolve(
          code === "ENOENT"
            ? `${bwrap} not found`
            : `${bwrap} failed: ${(stderr || err.message).trim().split("\n").at(-1)}`,
        );
      },
    );
  });
}

/** The bwrap to use (`bwrapPath`, else bwrap on PATH) once a trivial sandboxed command runs in it; else why not. */
export async function findBwrap(
  bwrapPath: string | undefined,
): Promise<{ bwrap: string } | { problem: string }> {
  const program = bwrapPath ?? "bwrap";
  const path = await which(program);
  if (!path) return { problem: `${program} not found on PATH` };
  const problem = await probeBwrap(path);
  return problem === undefined ? { bwrap: path } : { problem };
}

async function which(program: string): Promise<string | undefined> {
  if (program.includes("/")) return program;
  for (const dir of (process.env.PATH ?? "/usr/bin:/bin").split(":")) {
    if (!dir) continue;
    const candidate = `${dir}/${program}`;
    try {
      return await realpath(candidate);
    } catch {
      // not here
    }
  }
  return undefined;
}
