import { realpath } from "node:fs/promises";
import { isAbsolute, relative, resolve } from "node:path";
import type { CommandResult } from "./process-group.ts";
import type { SandboxProcess } from "./sandbox-process.ts";

export interface SandboxExecOptions {
  timeoutMs: number;
  signal: AbortSignal;
  /** Bytes of output kept (the tail); the result says when it was cut. */
  outputLimit?: number;
  /**
   * The command's network; absent: the agent's (its environment's `agent_network`). `host`: the host's
   * (setup steps in a workspace that holds only what the operator configured); `public`: a network of
   * its own that reaches the public internet only, never the host or a private range (setup steps once
   * the run's repository is checked out). Plain sandboxes have the host's network whatever is asked.
   */
  network?: "host" | "public";
  /**
   * The workspace bound read-only (a plan-mode turn, src/harnesses/plan-mode.ts): the command can read
   * it and write only its /tmp. Plain sandboxes cannot enforce it and show the workspace writable.
   */
  readOnlyWorkspace?: boolean;
}

/**
 * Where a run's processes execute: its workspace, an environment built from nothing (no provider keys,
 * no Dispatch secrets), its own process group killed on cancel or timeout. Every harness and tool runs
 * commands through this, never by spawning directly.
 */
export interface Sandbox {
  /** "bwrap" when processes are isolated, "none" for a plain subprocess in the workspace. */
  readonly kind: string;
  readonly workspace: string;
  exec(command: string, opts: SandboxExecOptions): Promise<CommandResult>;
  /**
   * The absolute path of `path` (relative to the workspace, or absolute inside it) for the file tools;
   * throws when it resolves outside the workspace, following symlinks.
   */
  resolvePath(path: string): Promise<string>;
  /**
   * Starts `argv` (no shell) in the run's sandbox with piped stdin, stdout and stderr, for processes that
   * live longer than one command (an MCP server) or take input (the file tools): the same isolation,
   * environment (plus `env`) and cgroup as exec. Its process group is killed when `signal` aborts.
   */
  start(argv: string[], opts: SandboxStartOptions): SandboxProcess;
  /** Releases what the sandbox holds (its cgroup) once the execution is over; exec must not follow. */
  close?(): Promise<void>;
}

export interface SandboxStartOptions {
  signal: AbortSignal;
  /** Variables added to the sandbox's environment (an MCP server's declared `env`). */
  env?: Record<string, string>;
  /**
   * Host paths (real paths) the process sees at the same place besides the workspace: an external
   * agent's program (read-only) and its private state directory (writable). Plain sandboxes see the host.
   */
  mounts?: SandboxMount[];
  /** The workspace bound read-only, as SandboxExecOptions.readOnlyWorkspace; `mounts` keep their own. */
  readOnlyWorkspace?: boolean;
}

export interface SandboxMount {
  path: string;
  writable: boolean;
}

export class PathOutsideWorkspaceError extends Error {}

/** Resolves `path` against `root`, refusing anything (including a symlink's target) outside it. */
export async function resolveInside(root: string, path: string): Promise<string> {
  const realRoot = await realpath(root);
  const target = resolve(realRoot, path);
  // The deepest existing ancestor decides where a not-yet-existing file would land.
  let existing = target;
  for (;;) {
    try {
      existing = await realpath(existing);
      break;
    } catch {
      const parent = resolve(existing, "..");
      if (parent === existing) break;
      existing = parent;
    }
  }
  for (const candidate of [target, existing]) {
    const rel = relative(realRoot, candidate);
    if (rel.startsWith("..") || isAbsolute(rel)) {
      throw new PathOutsideWorkspaceError(`${path} is outside the workspace`);
    }
  }
  return target;
}
