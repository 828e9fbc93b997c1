import { mkdirSync, realpathSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { resolve } from "node:path";
import type { Logger } from "pino";
import {
  type AgentIdentities,
  agentIdentities,
  type RunIdentity,
  sweepIdentities,
} from "./agent-identities.ts";
import { BwrapSandbox, findBwrap, which } from "./bwrap-sandbox.ts";
import { type CgroupLimits, type Cgroups, detectCgroups } from "./cgroups.ts";
import { commandSpawner } from "./command-spawner.ts";
import { etcSnapshots } from "./etc-snapshot.ts";
import { PlainSandbox } from "./plain-sandbox.ts";
import type { Sandbox } from "./sandbox.ts";
import { RUN_TMP_SUFFIX } from "./sandbox-env.ts";
import type { OwnNetworkTools } from "./sandbox-network.ts";

export type SandboxMode = "auto" | "bwrap" | "none";

export interface SandboxProviderOptions {
  /**
   * auto and bwrap: bubblewrap, and SandboxUnavailableError where it cannot run (the caller decides what
   * that means for start-up); none: plain subprocesses, chosen explicitly.
   */
  mode: SandboxMode;
  /** The bwrap executable (DISPATCH_BWRAP_PATH); looked up on PATH when not absolute. */
  bwrapPath?: string;
  /** Paths the agent must not see: Dispatch's data directory, database, configuration and key files. */
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
  /**
   * Resolves once the files of every closed sandbox are removed: a sandbox's close ends its processes,
   * and its /tmp and identity files go after the run's slot is freed.
   */
  released(): Promise<void>;
}

/** No sandbox can be made here (bubblewrap cannot run) and DISPATCH_SANDBOX is not `none`. */
export class SandboxUnavailableError extends Error {}

/** What to do about a missing sandbox: install it, or accept plain subprocesses by saying so. */
const SANDBOX_FIX =
  "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; add slirp4netns and nftables for environments with agent_network) and restart Dispatch, or set DISPATCH_SANDBOX=none to accept running agents' commands as plain subprocesses, which can read everything Dispatch can (its data directory and database included)";

/**
 * Detects bwrap once (a trivial sandboxed command) and cgroups, logs what is in use, returns the provider.
 * Throws SandboxUnavailableError when bubblewrap cannot run: a run's commands never fall back to plain
 * subprocesses unless DISPATCH_SANDBOX=none says so, since those could read Dispatch's data directory,
 * database and environment.
 */
export async function createSandboxProvider(opts: SandboxProviderOptions): Promise<SandboxProvider> {
  const log = opts.log.child({ component: "sandbox" });
  let bwrap: string | undefined;
  let warning: string | undefined;
  if (opts.mode === "none") {
    warning =
      "Sandbox disabled (DISPATCH_SANDBOX=none): this run's commands run as plain subprocesses in its workspace, with the network and the whole filesystem reachable.";
  } else {
    const found = await findBwrap(opts.bwrapPath);
    if (!("bwrap" in found)) {
      throw new SandboxUnavailableError(
        opts.mode === "bwrap"
          ? `DISPATCH_SANDBOX=bwrap but bubblewrap cannot run here: ${found.problem}. ${SANDBOX_FIX}`
          : `No sandbox, so this server cannot start runs: bubblewrap (bwrap) cannot run here (${found.problem}). ${SANDBOX_FIX}`,
      );
    }
    bwrap = found.bwrap;
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

  let ownNetwork: OwnNetworkTools | undefined;
  if (bwrap) {
    // agent_network's own network and its outbound filter, looked up on PATH.
    const [slirp4netns, nft] = await Promise.all([which("slirp4netns"), which("nft")]);
    const missing = [
      ...(slirp4netns ? [] : ["slirp4netns (Debian/Ubuntu: apt-get install slirp4netns)"]),
      ...(nft ? [] : ["nft (Debian/Ubuntu: apt-get install nftables)"]),
    ];
    if (slirp4netns && nft) ownNetwork = { slirp4netns, nft };
    const network = ownNetwork
      ? `agent_network through ${slirp4netns}, public addresses only (nftables: ${nft})`
      : `agent_network unavailable (${missing.join(" and ")} not found: install it; until then agents and the setup steps of runs with a repository get no network)`;
    log.info(
      { sandbox: "bwrap", bwrap, limits, slirp4netns, nft },
      `sandbox: bubblewrap (${bwrap}); ${limits}; ${network}`,
    );
  } else {
    log.warn({ sandbox: "none", limits }, `sandbox: none. ${warning} (${limits})`);
  }

  const spawner = commandSpawner(log);
  // Looked up for each sandbox: a hidden path may appear (or become a symlink) after start-up.
  const hiddenNow = () =>
    opts.hide.map((d) => {
      try {
        return realpathSync(d);
      } catch {
        return resolve(d);
      }
    });
  const etc = bwrap ? etcSnapshots(hiddenNow()) : undefined;
  let identities: AgentIdentities | undefined;
  if (bwrap) {
    const swept = await sweepIdentities();
    if (swept.length)
      log.info(
        { dirs: swept },
        `removed ${swept.length} sandbox identity directories left by an earlier Dispatch`,
      );
    identities = agentIdentities();
  }
  /** Closed sandboxes whose files are still being removed, by their /tmp (one per run). */
  const releasing = new Map<string, Promise<void>>();
  return {
    kind: bwrap ? "bwrap" : "none",
    warning,
    limits,
    async released() {
      while (releasing.size > 0) await Promise.all(releasing.values());
    },
    async create({ workspace, runId, agentNetwork }) {
      // Synchronous, as the cgroup's own calls (cgroups.ts): a path the kernel has cached.
      const real = realpathSync(workspace);
      const cgroup = await cgroups?.create(runId, opts.limits);
      if (!bwrap || !identities)
        return new PlainSandbox(real, runId, { spawner, ...(cgroup ? { cgroup } : {}) });
      const tmp = `${real}${RUN_TMP_SUFFIX}`;
      // The run's last execution here may still be removing the same /tmp.
      await releasing.get(tmp);
      // Synchronous: each is a system call on kernel memory or the page cache (microseconds), where an
      // await on the thread pool queues for milliseconds under load (bench/README.md, "Fifth round:
      // bubblewrap"). Only a /tmp left by a crash is removed on the pool.
      let identified: RunIdentity | undefined;
      let etcCopy: { dir: string; release: () => Promise<void> } | undefined;
      let hide: string[];
      try {
        hide = hiddenNow();
        identified = await identities.forRun(real, runId);
        await emptyRunTmp(tmp);
        // Without a copy of /etc (the disk is full), each entry is bound on its own as before.
        etcCopy = await etc?.acquire().catch((err) => {
          log.warn({ err }, "could not copy /etc for the sandbox; binding its entries one by one");
          return undefined;
        });
      } catch (err) {
        // Nothing is left behind by a sandbox that could not be made.
        await Promise.allSettled([
          identified?.remove(),
          rm(tmp, { recursive: true, force: true }),
          cgroup?.remove(),
        ]);
        throw err;
      }
      const { identity, remove: removeIdentity } = identified;
      return new BwrapSandbox({
        bwrap,
        workspace: real,
        runId,
        hide,
        tmp,
        ...(etcCopy ? { etc: etcCopy.dir } : {}),
        network: agentNetwork,
        ...(ownNetwork ? { ownNetwork } : {}),
        identity,
        ...(cgroup ? { cgroup } : {}),
        spawner,
        // Called once the sandbox's processes are dead: nothing uses these files any more, so the run's
        // slot need not wait for their removal (≈ 10 ms of thread-pool round trips under load). The next
        // sandbox of the run waits for it, and so does the executor's stop (released()).
        release: () => {
          const removal = Promise.allSettled([
            etcCopy?.release(),
            removeIdentity(),
            rm(tmp, { recursive: true, force: true }),
          ]).then((results) => {
            releasing.delete(tmp);
            for (const result of results)
              if (result.status === "rejected")
                log.warn({ err: result.reason, runId }, "removing a closed sandbox's files failed");
          });
          releasing.set(tmp, removal);
        },
      });
    },
  };
}

/**
 * Makes the run's /tmp, empty at each execution's start as a /tmp is after a reboot: made at once when
 * it is not there (the usual case), emptied first when a crash left one.
 */
async function emptyRunTmp(tmp: string): Promise<void> {
  try {
    mkdirSync(tmp, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp, { mode: 0o700 });
  }
}
