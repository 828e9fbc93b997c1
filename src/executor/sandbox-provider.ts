import { mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Logger } from "pino";
import { type AgentIdentity, agentIdentityFiles, BwrapSandbox, findBwrap, which } from "./bwrap-sandbox.ts";
import { type CgroupLimits, type Cgroups, detectCgroups } from "./cgroups.ts";
import { PlainSandbox } from "./plain-sandbox.ts";
import type { Sandbox } from "./sandbox.ts";

export type SandboxMode = "auto" | "bwrap" | "none";

export interface SandboxProviderOptions {
  /**
   * auto: bwrap where it works, else a plain subprocess with a warning, unless secrets are configured;
   * bwrap: required; none: off.
   */
  mode: SandboxMode;
  /** The bwrap executable (DISPATCH_BWRAP_PATH); looked up on PATH when not absolute. */
  bwrapPath?: string;
  /** Paths the agent must not see: Dispatch's data directory, database, configuration and key files. */
  hide: string[];
  /**
   * The variables holding Dispatch's secrets that are set (tokens, keys): a plain subprocess could read
   * them from Dispatch's own process (/proc/<pid>/environ), so `auto` will not fall back to one.
   */
  secrets?: string[];
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
  const log = opts.log.child({ component: "sandbox" });
  let bwrap: string | undefined;
  let warning: string | undefined;
  if (opts.mode === "none") {
    warning =
      "Sandbox disabled (DISPATCH_SANDBOX=none): this run's commands run as plain subprocesses in its workspace, with the network and the whole filesystem reachable.";
  } else {
    const found = await findBwrap(opts.bwrapPath);
    if ("bwrap" in found) {
      bwrap = found.bwrap;
    } else if (opts.mode === "bwrap") {
      throw new SandboxUnavailableError(
        `DISPATCH_SANDBOX=bwrap but bubblewrap cannot run here: ${found.problem}. Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) or set DISPATCH_SANDBOX=auto`,
      );
    } else if (opts.secrets?.length) {
      throw new SandboxUnavailableError(
        `No sandbox: bubblewrap (bwrap) is not usable on this server (${found.problem}), and without it a run's commands could read ${opts.secrets.join(", ")} from Dispatch's own process. Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or set DISPATCH_SANDBOX=none to run commands unsandboxed anyway`,
      );
    } else {
      warning = `No sandbox: bubblewrap (bwrap) is not usable on this server (${found.problem}); this run's commands run as plain subprocesses in its workspace, with the network and the whole filesystem reachable. Install bubblewrap to isolate runs.`;
    }
  }

  // A cgroup per run also without limits: it is how processes that left the run's process group die.
  const detected = await (opts.detectCgroups ?? detectCgroups)();
  const cgroups: Cgroups | undefined = detected.cgroups;
  const limits = detected.cgroups
    ? `cgroup v${detected.cgroups.version} limits: memory ${opts.limits.memoryBytes ? `${Math.round(opts.limits.memoryBytes / 2 ** 20)} MiB` : "unlimited"}, pids ${opts.limits.pidsMax || "unlimited"}`
    : `no per-run cgroup (memory/pids limits skipped, and a process that leaves its process group outlives its command unless bubblewrap's pid namespace ends it): ${detected.reason}`;
  if (cgroups) {
    const swept = await cgroups.sweep();
    if (swept.length)
      log.info({ cgroups: swept }, `removed ${swept.length} run cgroup(s) left by an earlier Dispatch`);
  }

  let slirp4netns: string | undefined;
  if (bwrap) {
    // agent_network's own network, looked up on PATH.
    slirp4netns = await which("slirp4netns");
    const network = slirp4netns
      ? `agent_network through ${slirp4netns}`
      : "agent_network unavailable (slirp4netns not found: install it, Debian/Ubuntu: apt-get install slirp4netns; until then the agent gets no network)";
    log.info(
      { sandbox: "bwrap", bwrap, limits, slirp4netns },
      `sandbox: bubblewrap (${bwrap}); ${limits}; ${network}`,
    );
  } else {
    log.warn({ sandbox: "none", limits }, `sandbox: none. ${warning} (${limits})`);
  }

  return {
    kind: bwrap ? "bwrap" : "none",
    warning,
    limits,
    async create({ workspace, runId, agentNetwork }) {
      const real = await realpath(workspace);
      const cgroup = cgroups ? await cgroups.create(runId, opts.limits) : undefined;
      if (!bwrap) return new PlainSandbox(real, runId, cgroup ? { cgroup } : {});
      const hide = await Promise.all(opts.hide.map((d) => realpath(d).catch(() => resolve(d))));
      const identityDir = await mkdtemp(join(tmpdir(), "dispatch-agent-identity-"));
      const identity = await writeIdentity(identityDir, real);
      return new BwrapSandbox({
        bwrap,
        workspace: real,
        runId,
        hide,
        network: agentNetwork,
        ...(slirp4netns ? { slirp4netns } : {}),
        identity,
        ...(cgroup ? { cgroup } : {}),
        release: () => rm(identityDir, { recursive: true, force: true }),
      });
    },
  };
}

/** The agent's /etc/passwd, /etc/group and resolv.conf, in Dispatch's private `dir` (outside the sandbox). */
async function writeIdentity(dir: string, workspace: string): Promise<AgentIdentity> {
  const files = agentIdentityFiles(workspace);
  const identity: AgentIdentity = {
    passwd: join(dir, "passwd"),
    group: join(dir, "group"),
    resolvConf: join(dir, "resolv.conf"),
    offlineResolvConf: join(dir, "resolv.offline.conf"),
  };
  for (const key of Object.keys(files) as Array<keyof AgentIdentity>) {
    await writeFile(identity[key], files[key], { mode: 0o644 });
  }
  return identity;
}
