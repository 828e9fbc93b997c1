import { writeFileSync } from "node:fs";
import { mkdtemp, readdir, rm, stat, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AgentIdentity, agentIdentityFiles } from "./bwrap-sandbox.ts";
import { ownerGone, selfTag } from "./process-owner.ts";

const PREFIX = "dispatch-agent-identity-";

/** One run's identity files: the shared ones and its own passwd, removed by `remove`. */
export interface RunIdentity {
  identity: AgentIdentity;
  remove(): Promise<void>;
}

/**
 * The files bound over a sandbox's /etc (AgentIdentity), in a directory only Dispatch can enter (mode
 * 0700, outside every sandbox). `group` and both `resolv.conf` say the same for every run: they are
 * written once per Dispatch process. `passwd` names the run's workspace as the agent's home, so each
 * sandbox gets its own, under a name no other sandbox uses (a run's next execution may start while the
 * last one's file is still being removed). Written per run, the four files and their directory were four
 * writes and a recursive removal on each run's path (bench/README.md, "Fourth round: the executor and
 * bubblewrap"). The directory's name carries the owning process's tag, so a later start removes what a
 * crashed Dispatch left and never what a running one uses.
 */
export class AgentIdentities {
  private readonly parent: string;
  private dir: Promise<string> | undefined;
  private made = 0;

  constructor(parent = tmpdir()) {
    this.parent = parent;
  }

  /** The run's identity: the shared files (written with the first sandbox) and a passwd of its own. */
  async forRun(workspace: string, runId: string, retried = false): Promise<RunIdentity> {
    if (!this.dir) {
      this.dir = this.makeShared().catch((err) => {
        this.dir = undefined; // the next sandbox tries again
        throw err;
      });
    }
    const shared = this.dir;
    const dir = await shared;
    const passwd = join(dir, `passwd-${runId}-${++this.made}`);
    try {
      // Synchronous: a small file in the page cache, where three thread-pool round trips queue under load.
      writeFileSync(passwd, agentIdentityFiles(workspace).passwd, { mode: 0o644 });
    } catch (err) {
      // The directory was removed under a long-lived Dispatch (a /tmp cleaner): made again, once.
      if ((err as NodeJS.ErrnoException).code !== "ENOENT" || retried) throw err;
      if (this.dir === shared) this.dir = undefined;
      return this.forRun(workspace, runId, true);
    }
    return {
      identity: {
        passwd,
        group: join(dir, "group"),
        resolvConf: join(dir, "resolv.conf"),
        offlineResolvConf: join(dir, "resolv.offline.conf"),
      },
      remove: () => unlink(passwd).catch(ignoreGone),
    };
  }

  private async makeShared(): Promise<string> {
    // Leftovers of gone processes were swept once at start-up (createSandboxProvider).
    const dir = await mkdtemp(join(this.parent, `${PREFIX}${selfTag}-`));
    // The workspace only appears in passwd: any path gives the same group and resolv.conf.
    const files = agentIdentityFiles("/");
    await Promise.all([
      writeFile(join(dir, "group"), files.group, { mode: 0o644 }),
      writeFile(join(dir, "resolv.conf"), files.resolvConf, { mode: 0o644 }),
      writeFile(join(dir, "resolv.offline.conf"), files.offlineResolvConf, { mode: 0o644 }),
    ]);
    return dir;
  }
}

/**
 * A directory of a version that did not name its process (one per sandbox, removed when it closed) is
 * left alone this long: such a Dispatch may still be running beside this one (a rolling deploy on one
 * host), and its sandboxes' commands bind their files from it.
 */
const UNNAMED_KEPT_MS = 7 * 24 * 60 * 60 * 1000;

/** Removes the identity directories of Dispatch processes that are gone. */
export async function sweepIdentities(parent = tmpdir()): Promise<string[]> {
  const names = await readdir(parent).catch(() => [] as string[]);
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(PREFIX)) continue;
    const owner = name.slice(PREFIX.length).match(/^(\d+\.\d+)-/)?.[1];
    if (owner ? !ownerGone(owner) : !(await olderThan(join(parent, name), UNNAMED_KEPT_MS))) continue;
    await rm(join(parent, name), { recursive: true, force: true });
    removed.push(join(parent, name));
  }
  return removed;
}

async function olderThan(path: string, ms: number): Promise<boolean> {
  const stats = await stat(path).catch(() => undefined);
  return stats !== undefined && Date.now() - stats.mtimeMs > ms;
}

function ignoreGone(err: NodeJS.ErrnoException): void {
  if (err.code !== "ENOENT") throw err;
}

let shared: AgentIdentities | undefined;

/** This process's identity files (one set for all its sandboxes). */
export function agentIdentities(): AgentIdentities {
  shared ??= new AgentIdentities();
  return shared;
}
