import { execFile } from "node:child_process";
import { realpath } from "node:fs/promises";
import { isAbsolute, relative } from "node:path";
import type { Logger } from "pino";
import { type CgroupLimits, type Cgroups, detectCgroups, type RunCgroup } from "./cgroups.ts";
import { type CommandResult, runArgvInProcessGroup } from "./process-group.ts";
import { PlainSandbox, resolveInside, type Sandbox, type SandboxExecOptions } from "./sandbox.ts";
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

export type SandboxMode = "auto" | "bwrap" | "none";

export interface SandboxProviderOptions {
  /** auto: bwrap where it works, else a plain subprocess with a warning; bwrap: required; none: off. */
  mode: SandboxMode;
  /** The bwrap executable (DISPATCH_BWRAP_PATH); looked up on PATH when not absolute. */
  bwrapPath?: string;
  /** Directories the agent must not see (Dispatch's data directory). */
  hide: string[];
  limits: CgroupLimits;
  log: Logger;
  /** Cgroup detection (tests point it elsewhere). */
  detectCgroups?: typeof detectCgroups;
}

/** How the executor gets a run's sandbox; decided once at start-up. */
export interface SandboxProvider {
  readonly kind: "bwrap" | "none";
  /** Said in the log at start-up and on every run's transcript when runs are not isolated. */
  readonly warning: string | undefined;
  /** Whether memory/pids limits apply, and why not. */
  readonly limits: string;
  create(opts: { workspace: string; runId: string; agentNetwork: boolean }): Promise<Sandbox>;
}

export class SandboxUnavailableError extends Error {}

/** Detects bwrap once (a trivial sandboxed command) and cgroups, logs what is in use, returns the provider. */
export async function createSandboxProvider(opts: SandboxProviderOptions): Promise<SandboxProvider> {
  const { log } = opts;
  let bwrap: string | undefined;
  let warning: string | undefined;
  if (opts.mode === "none") {
    warning =
      "Sandbox disabled (DISPATCH_SANDBOX=none): this run's commands run as plain subprocesses in its workspace, with the network and the whole filesystem reachable.";
  } else {
    const path = await which(opts.bwrapPath ?? "bwrap");
    const problem = path ? await probeBwrap(path) : `${opts.bwrapPath ?? "bwrap"} not found on PATH`;
    if (problem === undefined && path) {
      bwrap = path;
    } else if (opts.mode === "bwrap") {
      throw new SandboxUnavailableError(
        `DISPATCH_SANDBOX=bwrap but bubblewrap cannot run here: ${problem}. Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) or set DISPATCH_SANDBOX=auto`,
      );
    } else {
      warning = `No sandbox: bubblewrap (bwrap) is not usable on this server (${problem}); this run's commands run as plain subprocesses in its workspace, with the network and the whole filesystem reachable. Install bubblewrap to isolate runs.`;
    }
  }

  let cgroups: Cgroups | undefined;
  let limits = "no memory/pids limits configured";
  if (opts.limits.memoryBytes || opts.limits.pidsMax) {
    const detected = await (opts.detectCgroups ?? detectCgroups)();
    cgroups = detected.cgroups;
    limits = detected.cgroups
      ? `cgroup v${detected.cgroups.version} limits: memory ${opts.limits.memoryBytes ? `${Math.round(opts.limits.memoryBytes / 2 ** 20)} MiB` : "unlimited"}, pids ${opts.limits.pidsMax || "unlimited"}`
      : `memory/pids limits skipped: ${detected.reason}`;
  }
  if (bwrap) log.info({ sandbox: "bwrap", bwrap, limits }, `sandbox: bubblewrap (${bwrap}); ${limits}`);
  else log.warn({ sandbox: "none", limits }, `sandbox: none. ${warning} (${limits})`);

  return {
    kind: bwrap ? "bwrap" : "none",
    warning,
    limits,
    async create({ workspace, runId, agentNetwork }) {
      const real = await realpath(workspace);
      const cgroup = cgroups ? await cgroups.create(`dispatch-run-${runId}`, opts.limits) : undefined;
      if (!bwrap) return new PlainSandbox(real, runId, cgroup ? { cgroup } : {});
      const hide = await Promise.all(opts.hide.map((d) => realpath(d).catch(() => d)));
      return new BwrapSandbox({
        bwrap,
        workspace: real,
        runId,
        hide,
        network: agentNetwork,
        ...(cgroup ? { cgroup } : {}),
      });
    },
  };
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
