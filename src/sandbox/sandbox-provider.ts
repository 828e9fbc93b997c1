import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Logger } from "pino";
import { type AgentIdentity, agentIdentityFiles, BwrapSandbox, findBwrap, which } from "./bwrap-sandbox.ts";
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
  const hidden = () => Promise.all(opts.hide.map((d) => realpath(d).catch(() => resolve(d))));
  const etc = bwrap ? etcSnapshots(await hidden()) : undefined;
  return {
    kind: bwrap ? "bwrap" : "none",
    warning,
    limits,
    async create({ workspace, runId, agentNetwork }) {
      const real = await realpath(workspace);
      const cgroup = cgroups ? await cgroups.create(runId, opts.limits) : undefined;
      if (!bwrap) return new PlainSandbox(real, runId, { spawner, ...(cgroup ? { cgroup } : {}) });
      // Independent steps, at once: each is a few round trips on the thread pool, which queue under load.
      const tmp = `${real}${RUN_TMP_SUFFIX}`;
      const steps = await Promise.allSettled([
        hidden(),
        (async () => {
          const identityDir = await mkdtemp(join(tmpdir(), "dispatch-agent-identity-"));
          return { identityDir, identity: await writeIdentity(identityDir, real) };
        })(),
        (async () => {
          // Empty at each execution's start, as a /tmp is after a reboot (a crash may have left one).
          await rm(tmp, { recursive: true, force: true });
          await mkdir(tmp, { mode: 0o700 });
        })(),
        // Without a copy of /etc (the disk is full), each entry is bound on its own as before.
        etc?.acquire().catch((err) => {
          log.warn({ err }, "could not copy /etc for the sandbox; binding its entries one by one");
          return undefined;
        }),
      ] as const);
      const [hiding, made, , copied] = steps;
      const etcCopy = copied.status === "fulfilled" ? copied.value : undefined;
      const failed = steps.find((step) => step.status === "rejected");
      if (failed || hiding.status === "rejected" || made.status === "rejected") {
        // Nothing is left behind by a sandbox that could not be made.
        await Promise.allSettled([
          etcCopy?.release(),
          made.status === "fulfilled" && rm(made.value.identityDir, { recursive: true, force: true }),
          rm(tmp, { recursive: true, force: true }),
          cgroup?.remove(),
        ]);
        throw failed?.reason;
      }
      const hide = hiding.value;
      const { identityDir, identity } = made.value;
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
        release: async () => {
          await Promise.all([
            etcCopy?.release(),
            rm(identityDir, { recursive: true, force: true }),
            rm(tmp, { recursive: true, force: true }),
          ]);
        },
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
  await Promise.all(
    (Object.keys(files) as Array<keyof AgentIdentity>).map((key) =>
      writeFile(identity[key], files[key], { mode: 0o644 }),
    ),
  );
  return identity;
}
