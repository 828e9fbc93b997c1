import { existsSync } from "node:fs";
import { mkdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * Per-run memory and process-count limits through cgroups, where the hierarchy is writable: v1 (one
 * hierarchy per controller, `memory.limit_in_bytes`, `pids.max`) and v2 (one unified hierarchy,
 * `memory.max`, `pids.max`, controllers enabled in the parent's `cgroup.subtree_control`). A run's cgroup
 * is created as a child of the cgroup Dispatch itself is in, so limits set on Dispatch still apply.
 * Where nothing is writable (containers, unprivileged hosts) detection says why and limits are skipped.
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
  /** Removes the cgroup once its processes are gone (best effort). */
  remove(): Promise<void>;
}

export interface Cgroups {
  readonly version: 1 | 2;
  /** Where run cgroups are created (one directory per controller on v1). */
  readonly parents: string[];
  create(name: string, limits: CgroupLimits): Promise<RunCgroup | undefined>;
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

  async create(name: string, limits: CgroupLimits): Promise<RunCgroup | undefined> {
    const dirs: string[] = [];
    try {
      if (limits.memoryBytes) {
        const dir = join(this.byController.memory, name);
        await mkdir(dir, { recursive: true });
        dirs.push(dir);
        await writeFile(join(dir, "memory.limit_in_bytes"), String(limits.memoryBytes));
      }
      if (limits.pidsMax) {
        const dir = join(this.byController.pids, name);
        await mkdir(dir, { recursive: true });
        dirs.push(dir);
        await writeFile(join(dir, "pids.max"), String(limits.pidsMax));
      }
    } catch {
      await removeDirs(dirs);
      return undefined;
    }
    return dirs.length ? runCgroup(dirs) : undefined;
  }
}

class V2Cgroups implements Cgroups {
  readonly version = 2 as const;
  readonly parents: string[];

  constructor(parents: string[]) {
    this.parents = parents;
  }

  async create(name: string, limits: CgroupLimits): Promise<RunCgroup | undefined> {
    if (!limits.memoryBytes && !limits.pidsMax) return undefined;
    const dir = join(this.parents[0]!, name);
    try {
      await mkdir(dir, { recursive: true });
      if (limits.memoryBytes) {
        await writeFile(join(dir, "memory.max"), String(limits.memoryBytes));
        await writeFile(join(dir, "memory.swap.max"), "0").catch(() => {});
      }
      if (limits.pidsMax) await writeFile(join(dir, "pids.max"), String(limits.pidsMax));
    } catch {
      await removeDirs([dir]);
      return undefined;
    }
    return runCgroup([dir]);
  }
}

function runCgroup(dirs: string[]): RunCgroup {
  return {
    enter: [
      "/bin/sh",
      "-c",
      ENTER_SCRIPT,
      "sh",
      String(dirs.length),
      ...dirs.map((d) => join(d, "cgroup.procs")),
    ],
    remove: () => removeDirs(dirs),
  };
}

/** rmdir fails while a process is still in the cgroup: retry briefly, then leave it (it is empty soon). */
async function removeDirs(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        await rmdir(dir);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") break;
        await new Promise((r) => setTimeout(r, 25 * (attempt + 1)));
      }
    }
  }
}

function errText(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
}
