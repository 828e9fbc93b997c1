import { execFile } from "node:child_process";
import { lstatSync, readlinkSync, statSync } from "node:fs";
import { realpath } from "node:fs/promises";
import { isAbsolute, relative } from "node:path";
import type { RunCgroup } from "./cgroups.ts";
import type { CommandSpawner } from "./command-spawner.ts";
import { ETC_ENTRIES } from "./etc-snapshot.ts";
import { type CommandResult, runArgvInProcessGroup } from "./process-group.ts";
import {
  resolveInside,
  type Sandbox,
  type SandboxExecOptions,
  type SandboxMount,
  type SandboxStartOptions,
} from "./sandbox.ts";
import { sandboxEnv } from "./sandbox-env.ts";
import {
  hostAddresses,
  type OwnNetworkTools,
  outboundFilter,
  ownNetworkLauncher,
} from "./sandbox-network.ts";
import { type SandboxProcess, startInProcessGroup } from "./sandbox-process.ts";

/**
 * A run's commands inside bubblewrap: a minimal root (the system's programs and libraries read-only, of
 * /etc only what programs need, nothing of the operator's home, configuration or Dispatch's files), the
 * workspace the only writable directory besides the run's own /tmp, own user/pid/net/ipc/uts namespaces, an
 * unprivileged uid without capabilities, and `--die-with-parent` so that a killed Dispatch leaves no
 * agent process behind. The network is only `lo`, unless the command (SandboxExecOptions.network) or the
 * environment (`agent_network`) asks for one: the host's, or one of its own through slirp4netns that
 * reaches the public internet only (sandbox-network.ts). The outer bwrap leads its own process group (runArgvInProcessGroup), so cancel and timeout
 * kill the sandbox and, with it, everything in its pid namespace.
 */
export class BwrapSandbox implements Sandbox {
  readonly kind: string = "bwrap";
  readonly workspace: string;
  private readonly opts: BwrapSandboxOptions;
  /** bwrap's arguments for exec, by network and workspace access: the same for each of the sandbox's commands. */
  private readonly execArgs = new Map<string, string[]>();

  constructor(opts: BwrapSandboxOptions) {
    this.opts = opts;
    this.workspace = opts.workspace;
  }

  exec(command: string, opts: SandboxExecOptions): Promise<CommandResult> {
    const argv = this.wrap(["bash", "-c", command], opts.network, [], opts.readOnlyWorkspace);
    const options = {
      cwd: this.workspace,
      env: sandboxEnv(this.workspace, this.opts.runId),
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      ...(opts.outputLimit !== undefined ? { outputLimit: opts.outputLimit } : {}),
    };
    const spawner = this.opts.spawner;
    return spawner ? spawner.run(argv, options) : runArgvInProcessGroup(argv, options);
  }

  start(argv: string[], opts: SandboxStartOptions): SandboxProcess {
    return startInProcessGroup(this.wrap(argv, undefined, opts.mounts, opts.readOnlyWorkspace), {
      cwd: this.workspace,
      env: { ...sandboxEnv(this.workspace, this.opts.runId), ...opts.env },
      signal: opts.signal,
    });
  }

  /**
   * `argv` inside bwrap, behind the step that moves it into the run's cgroup. `network` as
   * SandboxExecOptions says; absent: the agent's (its environment's `agent_network`).
   */
  private wrap(
    argv: string[],
    network?: SandboxExecOptions["network"],
    mounts: SandboxMount[] = [],
    readOnlyWorkspace = false,
  ): string[] {
    const ownNetwork = this.opts.ownNetwork;
    const wantsOwn = network === "public" || (network === undefined && this.opts.network);
    const layout: BwrapLayout = {
      workspace: this.workspace,
      hide: this.opts.hide,
      tmp: this.opts.tmp,
      etc: this.opts.etc,
      network: network === "host" ? "host" : wantsOwn && ownNetwork ? "own" : "none",
      identity: this.opts.identity,
      mounts,
      readOnlyWorkspace,
    };
    const key = `${layout.network}${readOnlyWorkspace ? ":ro" : ""}`;
    let args = mounts.length === 0 ? this.execArgs.get(key) : undefined;
    if (!args) {
      args = bwrapArgs(layout);
      if (mounts.length === 0) this.execArgs.set(key, args);
    }
    return [
      ...(this.opts.cgroup?.enter ?? []),
      // The host's addresses as they are now: the filter is made for each command.
      ...(layout.network === "own" && ownNetwork
        ? ownNetworkLauncher(ownNetwork, outboundFilter(hostAddresses()))
        : []),
      this.opts.bwrap,
      ...args,
      ...argv,
    ];
  }

  async resolvePath(path: string): Promise<string> {
    return resolveInside(this.workspace, path);
  }

  async close(): Promise<void> {
    await this.opts.cgroup?.remove();
    this.opts.release?.();
  }
}

export interface BwrapSandboxOptions {
  /** The bwrap executable (absolute path). */
  bwrap: string;
  /** The run's workspace, a real path (no symlinks: bwrap binds it at the same place). */
  workspace: string;
  runId: string;
  /** Paths Dispatch reads secrets from, hidden where they lie inside what the sandbox shows. */
  hide: string[];
  /** The run's /tmp on disk (BwrapLayout.tmp). */
  tmp?: string;
  /** The sandbox's /etc as one directory (BwrapLayout.etc). */
  etc?: string;
  /**
   * Network for commands that do not say (the agent phase): the environment's `agent_network`. It is a
   * network of its own (`ownNetwork`); without those tools the agent gets none.
   */
  network: boolean;
  /** slirp4netns and nft, when both are installed: a network of its own is possible. */
  ownNetwork?: OwnNetworkTools;
  identity?: AgentIdentity;
  cgroup?: RunCgroup;
  /** Starts exec's commands: Dispatch's (the provider's); without one, they are spawned from this process. */
  spawner?: CommandSpawner;
  /**
   * Hands what the provider made for this sandbox (its /tmp, identity files, /etc reference) back for
   * removal, once its processes are dead; the removal may end after close returns (SandboxProvider.released).
   */
  release?: () => void;
}

/** The agent's uid and gid inside the sandbox: not 0, so that nothing treats it as root. */
export const AGENT_UID = 1000;

/** Files bound over the agent's /etc: its passwd and group, and resolv.conf unless it has the host's network. */
export interface AgentIdentity {
  passwd: string;
  group: string;
  /** Names slirp4netns's DNS forwarder, for a network of its own. */
  resolvConf: string;
  /**
   * For no network: a lookup fails within a second. With the host's servers listed, a resolver that
   * ignores "network unreachable" (musl's, in Codex) waits 2 × 2.5 s for each name a program looks up,
   * e.g. the analytics Codex sent at exit, which held every Codex turn 5 s.
   */
  offlineResolvConf: string;
}

/** What /etc/passwd, /etc/group and /etc/resolv.conf (own network) say inside a run's sandbox. */
export function agentIdentityFiles(workspace: string): Record<keyof AgentIdentity, string> {
  return {
    passwd: `agent:x:${AGENT_UID}:${AGENT_UID}:Dispatch agent:${workspace}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `agent:x:${AGENT_UID}:\nnogroup:x:65534:\n`,
    resolvConf: "nameserver 10.0.2.3\n",
    offlineResolvConf:
      "# No network in this sandbox: name lookups fail at once.\nnameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
  };
}

/** Where the system keeps its programs and libraries. */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

export interface BwrapLayout {
  /** Bound writable at the same path (read-only with `readOnlyWorkspace`); the sandbox starts there. */
  workspace: string;
  /** A plan-mode turn's commands: the workspace bound read-only (SandboxExecOptions.readOnlyWorkspace). */
  readOnlyWorkspace?: boolean | undefined;
  /** Paths hidden (an empty directory, or /dev/null for a file) where they lie inside a bound path. */
  hide: string[];
  /**
   * The sandbox's /etc prepared as one directory (EtcSnapshots), bound with one mount; absent, each of
   * ETC_ENTRIES is bound on its own (the start-up probe, sandboxes built by hand).
   */
  etc?: string | undefined;
  /** Bound writable at /tmp: the run's own, on disk (RUN_TMP_SUFFIX); a tmpfs when absent. */
  tmp?: string | undefined;
  /** none: only `lo`; host: the host's network; own: one of its own, public only (ownNetworkLauncher). */
  network: "none" | "host" | "own";
  identity?: AgentIdentity | undefined;
  /** More host paths bound at the same place (SandboxStartOptions.mounts). */
  mounts?: SandboxMount[];
}

/** bwrap's arguments up to `--` for a sandbox with this layout; the program follows. */
export function bwrapArgs(opts: BwrapLayout): string[] {
  const args: string[] = [];
  const bound: string[] = [];
  const bind = (path: string) => {
    args.push("--ro-bind", path, path);
    bound.push(path);
  };
  for (const dir of SYSTEM_DIRS) {
    const entry = lstatOrUndefined(dir);
    // Merged /usr: /bin, /lib… are symlinks into /usr, and stay symlinks.
    if (entry?.isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
    else if (entry?.isDirectory()) bind(dir);
  }
  // The snapshot holds what Dispatch hides already, and is no host path a hidden one could lie in.
  if (opts.etc) args.push("--ro-bind", opts.etc, "/etc");
  for (const name of opts.etc ? [] : ETC_ENTRIES) {
    const path = `/etc/${name}`;
    if (!statOrUndefined(path)) continue;
    if (opts.identity && opts.network !== "host" && name === "resolv.conf") continue;
    bind(path);
  }
  if (opts.identity) {
    args.push(
      "--ro-bind",
      opts.identity.passwd,
      "/etc/passwd",
      "--ro-bind",
      opts.identity.group,
      "/etc/group",
    );
    const resolvConf = {
      own: opts.identity.resolvConf,
      none: opts.identity.offlineResolvConf,
      host: undefined,
    }[opts.network];
    if (resolvConf) args.push("--ro-bind", resolvConf, "/etc/resolv.conf");
  }
  for (const path of opts.hide) {
    if (!bound.some((b) => within(b, path))) continue;
    if (statOrUndefined(path)?.isDirectory()) args.push("--tmpfs", path);
    else args.push("--ro-bind", "/dev/null", path);
  }
  args.push(
    ...(opts.tmp ? ["--bind", opts.tmp, "/tmp"] : ["--tmpfs", "/tmp"]),
    opts.readOnlyWorkspace ? "--ro-bind" : "--bind",
    opts.workspace,
    opts.workspace,
    ...(opts.mounts ?? []).flatMap((m) => [m.writable ? "--bind" : "--ro-bind", m.path, m.path]),
    "--proc",
    "/proc",
    // Files in /proc/sys belong to the agent's uid as the kernel sees it: only a read-only /proc keeps
    // the host's sysctls out of its reach.
    "--remount-ro",
    "/proc",
    "--dev",
    "/dev",
    // The root itself is a tmpfs: read-only, so that the agent cannot plant files where programs look.
    "--remount-ro",
    "/",
    "--unshare-all",
    "--unshare-user",
    "--uid",
    String(AGENT_UID),
    "--gid",
    String(AGENT_UID),
    "--cap-drop",
    "ALL",
    ...(opts.network === "host" ? ["--share-net"] : []),
    ...(opts.network === "own" ? ["--info-fd", "3", "--block-fd", "4"] : []),
    // No --new-session: the command already runs in a session of its own without a terminal (Dispatch
    // spawns it detached), and staying in that process group is what lets cancel's group kill reach the
    // sandbox even when bwrap is killed before its --die-with-parent is armed.
    "--die-with-parent",
    "--chdir",
    opts.workspace,
    "--",
  );
  return args;
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

function statOrUndefined(path: string) {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
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
      [...bwrapArgs({ workspace: "/tmp", hide: [], network: "none" }), "true"],
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

/** `program`'s real path: as given when it names a path, else the first on PATH. */
export async function which(program: string): Promise<string | undefined> {
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
