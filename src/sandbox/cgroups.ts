import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, readdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ownerGone, selfTag } from "./process-owner.ts";

/**
 * Per-run cgroups, where the hierarchy is writable: v1 (one hierarchy per controller,
 * `memory.limit_in_bytes`, `pids.max`) and v2 (one unified hierarchy, `memory.max`, `pids.max`,
 * controllers enabled in the parent's `cgroup.subtree_control`). A run's cgroup holds every process of
 * the run, also those that left its process group (`setsid`), so that the run's end kills them all; it
 * also carries the memory and process-count limits. It is created as a child of the cgroup Dispatch
 * itself is in, so limits set on Dispatch still apply. Its name says which Dispatch process owns it, so
 * that a later start removes what a crashed one left behind and never what a running one uses. Where
 * nothing is writable (containers, unprivileged hosts) detection says why and limits are skipped.
 *
 * A run's cgroup files are read and written with synchronous calls: they live in kernel memory and each
 * call takes microseconds, where a promise-based call waits its turn on libuv's thread pool behind the
 * disk work of every other run (a run's end waited ≈ 20 ms for the four round trips of one read under
 * load: bench/README.md, "Fourth round: the executor and bubblewrap"). Making and removing the cgroup
 * itself stays off the event loop: the kernel may take a while over a memory cgroup's setup and teardown.
 */
export interface CgroupLimits {
  /** Bytes of memory for all of a run's processes together; 0 or undefined: no limit. */
  memoryBytes?: number;
  /** Processes (and threads) at once; 0 or undefined: no limit. */
  pidsMax?: number;
}

export interface RunCgroup {
  /** An argv prefix that moves itself into the cgroup, then execs the rest of the argv. */
  readonly enter: string[];
  /**
   * The same as shell text that starts a `bash -c` command line: the shell moves itself into the cgroup
   * before anything else on the line runs (bash parses and runs a line's list in order), or exits 125
   * saying why. One exec per command fewer than `enter` (`sh`, ≈ 0.7 ms of CPU: bench/README.md, "Fourth
   * round: the executor and bubblewrap"); the command's own line numbers, `$0` and exit code are as without it.
   */
  readonly enterShell: string;
  /** Kills every process still in the cgroup, then removes it. */
  remove(): Promise<void>;
}

export interface Cgroups {
  readonly version: 1 | 2;
  /** Where run cgroups are created (one directory per controller on v1). */
  readonly parents: string[];
  /** The run's cgroup (also without limits: it tracks the run's processes); undefined when it cannot be made. */
  create(runId: string, limits: CgroupLimits): Promise<RunCgroup | undefined>;
  /** Kills and removes run cgroups whose Dispatch process is gone; returns their paths. */
  sweep(): Promise<string[]>;
}

export type CgroupDetection = { cgroups: Cgroups } | { cgroups?: undefined; reason: string };

const ENTER_SCRIPT =
  'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || { echo "dispatch: cannot enter cgroup $1" >&2; exit 125; }; shift; n=$((n-1)); done; exec "$@"';

/** Finds a writable cgroup hierarchy for run limits; `root` is the mount point (tests point it elsewhere). */
export async function detectCgroups(
  opts: { root?: string; procSelfCgroup?: string } = {},
): Promise<CgroupDetection> {
  const root = opts.root ?? "/sys/fs/cgroup";
  let self: string;
  try {
    self = await readFile(opts.procSelfCgroup ?? "/proc/self/cgroup", "utf8");
  } catch {
    return { reason: "no /proc/self/cgroup" };
  }
  const lines = self
    .split("\n")
    .filter(Boolean)
    .map((l) => {
      const match = l.match(/^\d+:([^:]*):(.*)$/);
      return { controllers: (match?.[1] ?? "").split(","), path: match?.[2] ?? "/" };
    });
  const isV2 = existsSync(join(root, "cgroup.controllers"));
  if (isV2) {
    const own = lines.find((l) => l.controllers.length === 1 && l.controllers[0] === "")?.path ?? "/";
    const parent = join(root, own);
    const enabled = await readFile(join(parent, "cgroup.subtree_control"), "utf8").catch(() => "");
    const wanted = ["memory", "pids"].filter((c) => !enabled.split(/\s+/).includes(c));
    if (wanted.length > 0) {
      try {
        await writeFile(join(parent, "cgroup.subtree_control"), wanted.map((c) => `+${c}`).join(" "));
      } catch (err) {
        return {
          reason: `cgroup v2: the ${wanted.join(" and ")} controller${wanted.length > 1 ? "s are" : " is"} not delegated to ${parent} (${errText(err)})`,
        };
      }
    }
    if (!(await probe(parent))) return { reason: `cgroup v2: ${parent} is not writable` };
    return { cgroups: new V2Cgroups([parent]) };
  }
  const parents: Record<"memory" | "pids", string> = { memory: "", pids: "" };
  for (const controller of ["memory", "pids"] as const) {
    const line = lines.find((l) => l.controllers.includes(controller));
    const mount = join(root, controller);
    if (!line || !existsSync(mount)) return { reason: `cgroup v1: no ${controller} hierarchy` };
    const parent = join(mount, line.path);
    if (!(await probe(parent))) return { reason: `cgroup v1: ${parent} is not writable` };
    parents[controller] = parent;
  }
  return { cgroups: new V1Cgroups(parents) };
}

const RUN_PREFIX = "dispatch-run-";

function runCgroupName(runId: string): string {
  return `${RUN_PREFIX}${runId}@${selfTag}`;
}

/**
 * Whether a run cgroup is left over: `gone`, its Dispatch process no longer runs (its processes are
 * killed); `unnamed`, a version that did not name its process made it, which may still run beside this
 * one (a rolling deploy on one host): removed only once empty, its processes never killed from here.
 */
function leftover(name: string): "gone" | "unnamed" | undefined {
  if (!name.startsWith(RUN_PREFIX)) return undefined;
  const owner = name.match(/@(\d+\.\d+)$/)?.[1];
  if (!owner) return "unnamed";
  return ownerGone(owner) ? "gone" : undefined;
}

async function sweepParents(parents: string[]): Promise<string[]> {
  const removed: string[] = [];
  for (const parent of parents) {
    const names = await readdir(parent).catch(() => [] as string[]);
    for (const name of names) {
      const kind = leftover(name);
      if (!kind) continue;
      const dir = join(parent, name);
      // rmdir of a cgroup that still has processes fails (EBUSY): an unnamed one in use stays.
      if (kind === "gone") await killAndRemove([dir]);
      else await rmdir(dir).catch(() => {});
      if (!existsSync(dir)) removed.push(dir);
    }
  }
  return removed;
}

async function probe(parent: string): Promise<boolean> {
  const dir = join(parent, `dispatch-probe-${process.pid}`);
  try {
    await mkdir(dir);
    await rmdir(dir);
    return true;
  } catch {
    return false;
  }
}

class V1Cgroups implements Cgroups {
  readonly version = 1 as const;
  readonly parents: string[];
  private readonly byController: Record<"memory" | "pids", string>;

  constructor(parents: Record<"memory" | "pids", string>) {
    this.byController = parents;
    this.parents = [parents.memory, parents.pids];
  }

  async create(runId: string, limits: CgroupLimits): Promise<RunCgroup | undefined> {
    const name = runCgroupName(runId);
    // The pids hierarchy always: its cgroup.procs is how the run's processes are found at the end.
    const pids = join(this.byController.pids, name);
    const memory = limits.memoryBytes ? join(this.byController.memory, name) : undefined;
    const dirs = memory ? [pids, memory] : [pids];
    // Both at once: each mkdir is a round trip on the thread pool.
    const made = await Promise.allSettled(dirs.map((dir) => mkdir(dir, { recursive: true })));
    try {
      for (const step of made) if (step.status === "rejected") throw step.reason;
      if (limits.pidsMax) writeFileSync(join(pids, "pids.max"), String(limits.pidsMax));
      if (memory) writeFileSync(join(memory, "memory.limit_in_bytes"), String(limits.memoryBytes));
    } catch {
      await killAndRemove(dirs.filter((_, k) => made[k]!.status === "fulfilled"));
      return undefined;
    }
    return runCgroup(dirs);
  }

  sweep(): Promise<string[]> {
    return sweepParents(this.parents);
  }
}

class V2Cgroups implements Cgroups {
  readonly version = 2 as const;
  readonly parents: string[];

  constructor(parents: string[]) {
    this.parents = parents;
  }

  async create(runId: string, limits: CgroupLimits): Promise<RunCgroup | undefined> {
    const dir = join(this.parents[0]!, runCgroupName(runId));
    try {
      await mkdir(dir, { recursive: true });
      if (limits.memoryBytes) {
        writeFileSync(join(dir, "memory.max"), String(limits.memoryBytes));
        try {
          writeFileSync(join(dir, "memory.swap.max"), "0");
        } catch {
          // No swap accounting: the memory limit alone holds.
        }
      }
      if (limits.pidsMax) writeFileSync(join(dir, "pids.max"), String(limits.pidsMax));
    } catch {
      await killAndRemove([dir]);
      return undefined;
    }
    return runCgroup([dir]);
  }

  sweep(): Promise<string[]> {
    return sweepParents(this.parents);
  }
}

function runCgroup(dirs: string[]): RunCgroup {
  const procs = dirs.map((d) => shellQuote(join(d, "cgroup.procs")));
  return {
    enterShell: `{ ${procs.map((file) => `echo $$ > ${file}`).join(" && ")}; } 2>/dev/null || { echo "dispatch: cannot enter the run's cgroup" >&2; exit 125; }; `,
    enter: [
      "/bin/sh",
      "-c",
      ENTER_SCRIPT,
      "sh",
      String(dirs.length),
      ...dirs.map((d) => join(d, "cgroup.procs")),
    ],
    remove: () => killAndRemove(dirs),
  };
}

/**
 * SIGKILLs every process in the cgroups (all at once through `cgroup.kill` on v2; on v1 pid by pid,
 * again until none is left, since a process may fork meanwhile), then removes them. rmdir fails until
 * the killed processes are reaped: retry briefly, then leave it for the next start's sweep.
 */
async function killAndRemove(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    try {
      writeFileSync(join(dir, "cgroup.kill"), "1");
    } catch {
      // v1, or a kernel before 5.14: the processes are killed one by one below.
    }
  }
  for (let attempt = 0; attempt < 40; attempt++) {
    let left = 0;
    for (const dir of dirs) {
      const procs = readText(join(dir, "cgroup.procs"));
      for (const pid of procs.split("\n").filter(Boolean).map(Number)) {
        left++;
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // ESRCH: already gone.
        }
      }
    }
    if (left === 0) break;
    await new Promise((r) => setTimeout(r, 10 * (attempt + 1)));
  }
  // The hierarchies at once: each rmdir is a round trip on the thread pool.
  await Promise.all(
    dirs.map(async (dir) => {
      for (let attempt = 0; attempt < 20; attempt++) {
        try {
          await rmdir(dir);
          return;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
          await new Promise((r) => setTimeout(r, 25 * (attempt + 1)));
        }
      }
    }),
  );
}

/** `text` as one shell word. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** The file's text; empty when it cannot be read (the cgroup is gone). */
function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

function errText(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
}
