import { realpath } from "node:fs/promises";
import type { Logger } from "pino";
import { BwrapSandbox, findBwrap } from "./bwrap-sandbox.ts";
import { type CgroupLimits, type Cgroups, detectCgroups } from "./cgroups.ts";
import { PlainSandbox } from "./plain-sandbox.ts";
import type { Sandbox } from "./sandbox.ts";

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
    } else {
      warning = `No sandbox: bubblewrap (bwrap) is not usable on this server (${found.problem}); this run's commands run as plain subprocesses in its workspace, with the network and the whole filesystem reachable. Install bubblewrap to isolate runs.`;
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
