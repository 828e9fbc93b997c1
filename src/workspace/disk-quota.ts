import { chmodSync, type Dir, lstatSync, opendirSync, type Stats } from "node:fs";
import { chmod, lstat, opendir } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { AGENT_AREA_SUFFIX } from "../harnesses/external/agent-area.ts";
import type { RunRecord } from "../model/run.ts";
import { RUN_TMP_SUFFIX } from "../sandbox/sandbox-env.ts";
import { mirrorPath } from "./workspace.ts";

export interface DiskQuota {
  /** Allocated bytes a run may hold (runDiskPaths); 0 = no quota. */
  limitBytes: number;
  /** Pause between two measurements (stretched when a measurement is slow, see DiskQuotaWatcher). */
  intervalMs: number;
}

export const DEFAULT_DISK_CHECK_INTERVAL_MS = 2000;

/** Entries measured at once: enough to keep the disk busy, few enough to leave the thread pool to others. */
const CONCURRENCY = 32;
/**
 * Entries a measurement looks at with synchronous calls before it hands the tree to the thread pool. A
 * run's tree is usually a handful of entries it just wrote (in the page cache: each `lstat` takes
 * microseconds), where each of the walk's awaits waited its turn on the thread pool behind other runs'
 * disk work: ≈ 4 ms of a run's end, 13 ms with a sandbox's /tmp, under load (bench/README.md, "Fourth
 * round: the executor and bubblewrap"). A larger tree is measured again off the event loop.
 */
const SMALL_TREE_ENTRIES = 64;
/** A measurement may take at most this share of the watcher's time: the pause after it grows with it. */
const MAX_DUTY_CYCLE = 0.1;

export interface DiskUsage {
  /** Allocated bytes counted; a lower bound when `over`. */
  bytes: number;
  /** The count passed `stopAbove` and stopped there. */
  over: boolean;
}

/**
 * Everything a run holds on disk, all of it counted against its quota: its workspace, an external agent's
 * private area (its HOME), delivery's mirror with the commits it received, and the sandbox's /tmp. All of
 * them lie next to each other in the workspaces directory. Not the bundle on its way into the mirror
 * (workspace.ts's bundlePath): Dispatch's copy, capped at what is left of the quota on its own.
 */
export function runDiskPaths(workspace: string): string[] {
  return [
    workspace,
    `${workspace}${AGENT_AREA_SUFFIX}`,
    mirrorPath(workspace),
    `${workspace}${RUN_TMP_SUFFIX}`,
  ];
}

/**
 * Bytes allocated under `roots` (`st_blocks` × 512, so sparse and fallocated files count what they hold
 * on disk, not their length); a root that does not exist counts 0. Bounded: it stops as soon as the count
 * passes `stopAbove`, never follows symlinks, stays on each root's filesystem and counts a hard-linked
 * file once, also when linked from two roots. A directory the agent made unreadable (chmod 000) is made
 * readable again for its owner, so that it cannot hide what it holds.
 */
export async function measureDiskUsage(
  roots: string | readonly string[],
  stopAbove = Number.POSITIVE_INFINITY,
): Promise<DiskUsage> {
  const list = typeof roots === "string" ? [roots] : roots;
  return measureSmallTree(list, stopAbove) ?? measureTree(list, stopAbove);
}

/** What a walk has counted so far, and the directories it has still to read. */
class Tally {
  bytes = 0;
  readonly dirs: Array<{ path: string; dev: number }> = [];
  private readonly linked = new Set<string>();

  /** A root: counted, and read when it is a directory (whatever its filesystem). */
  root(path: string, st: Stats | undefined): void {
    if (!st) return;
    this.bytes += st.blocks * 512;
    this.dirs.push({ path, dev: st.dev });
  }

  /** An entry of a directory on `dev`: a directory is read when on the same filesystem, a hard link counted once. */
  entry(path: string, st: Stats | undefined, dev: number): void {
    if (!st) return;
    if (st.isDirectory()) {
      if (st.dev === dev) this.dirs.push({ path, dev });
    } else if (st.nlink > 1) {
      const inode = `${st.dev}:${st.ino}`;
      if (this.linked.has(inode)) return;
      this.linked.add(inode);
    }
    this.bytes += st.blocks * 512;
  }
}

/** The whole measurement with synchronous calls; undefined once the tree has more than SMALL_TREE_ENTRIES. */
function measureSmallTree(roots: readonly string[], stopAbove: number): DiskUsage | undefined {
  const tally = new Tally();
  for (const root of roots) tally.root(root, lstatSync(root, { throwIfNoEntry: false }));
  let budget = SMALL_TREE_ENTRIES;
  for (let dir = tally.dirs.pop(); dir !== undefined; dir = tally.dirs.pop()) {
    const entries = openDirectoryNow(dir.path);
    if (!entries) continue;
    try {
      for (let entry = entries.readSync(); entry !== null; entry = entries.readSync()) {
        if (--budget < 0) return undefined;
        const path = join(dir.path, entry.name);
        tally.entry(path, lstatSync(path, { throwIfNoEntry: false }), dir.dev);
      }
    } finally {
      entries.closeSync();
    }
    if (tally.bytes > stopAbove) return { bytes: tally.bytes, over: true };
  }
  return { bytes: tally.bytes, over: false };
}

async function measureTree(roots: readonly string[], stopAbove: number): Promise<DiskUsage> {
  const tally = new Tally();
  const { dirs } = tally;
  // The roots at once: most of a run's do not exist, and each lstat is a round trip on the thread pool.
  const tops = await Promise.all(roots.map((root) => lstat(root).catch(ignoreVanished)));
  for (const [k, top] of tops.entries()) tally.root(roots[k]!, top);
  const count = async (paths: string[], dev: number) => {
    const stats = await Promise.all(paths.map((path) => lstat(path).catch(ignoreVanished)));
    for (const [k, st] of stats.entries()) tally.entry(paths[k]!, st, dev);
  };
  for (let dir = dirs.pop(); dir !== undefined; dir = dirs.pop()) {
    const entries = await openDirectory(dir.path);
    if (!entries) continue;
    // Streamed in small batches: a directory may hold millions of entries, and counting stops early.
    let batch: string[] = [];
    for await (const entry of entries) {
      batch.push(join(dir.path, entry.name));
      if (batch.length < CONCURRENCY) continue;
      await count(batch, dir.dev);
      batch = [];
      if (tally.bytes > stopAbove) return { bytes: tally.bytes, over: true };
    }
    await count(batch, dir.dev);
    if (tally.bytes > stopAbove) return { bytes: tally.bytes, over: true };
  }
  return { bytes: tally.bytes, over: false };
}

/** Opens `dir` for reading; undefined when it vanished meanwhile. */
async function openDirectory(dir: string, retried = false): Promise<Dir | undefined> {
  try {
    return await opendir(dir, { bufferSize: CONCURRENCY });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    if ((code === "EACCES" || code === "EPERM") && !retried) {
      const st = await lstat(dir);
      await chmod(dir, st.mode | 0o700);
      return openDirectory(dir, true);
    }
    throw err;
  }
}

/** openDirectory with synchronous calls. */
function openDirectoryNow(dir: string, retried = false): Dir | undefined {
  try {
    return opendirSync(dir, { bufferSize: CONCURRENCY });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    if ((code === "EACCES" || code === "EPERM") && !retried) {
      chmodSync(dir, lstatSync(dir).mode | 0o700);
      return openDirectoryNow(dir, true);
    }
    throw err;
  }
}

function ignoreVanished(err: NodeJS.ErrnoException): undefined {
  if (err.code === "ENOENT") return undefined;
  throw err;
}

/** How a run over its quota ends: FAILED, with the usage, the quota and the setting to raise. */
export function diskQuotaExceeded(
  usedBytes: number,
  limitBytes: number,
): NonNullable<RunRecord["statusMessage"]> {
  return {
    message:
      `The run holds at least ${mebibytes(usedBytes)} MB on disk (its workspace, /tmp and HOME), over its ` +
      `disk quota of ${mebibytes(limitBytes)} MB; delete what the run does not need (large downloads, build ` +
      "outputs) or raise DISPATCH_RUN_DISK_QUOTA_MB on the server",
    error_code: "disk_quota_exceeded",
    retryable: false,
  };
}

/** Whole MB (2^20 bytes, as DISPATCH_RUN_DISK_QUOTA_MB counts them), rounded down: "at least". */
function mebibytes(bytes: number): number {
  return Math.floor(bytes / 2 ** 20);
}

/**
 * Measures what a running execution holds on disk (runDiskPaths) now and then and calls `onExceeded` (once) when it holds
 * more than the quota. The pause after a measurement is at least `intervalMs` and at least nine times
 * what the measurement took, so a huge workspace is measured less often instead of keeping the disk busy.
 * The quota is enforced after the fact: what a command writes between two measurements is only seen at
 * the next one.
 */
export class DiskQuotaWatcher {
  private readonly opts: {
    workspace: string;
    quota: DiskQuota;
    log: Logger;
    onExceeded: (usedBytes: number) => void;
  };
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(opts: DiskQuotaWatcher["opts"]) {
    this.opts = opts;
    this.schedule(opts.quota.intervalMs);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** Measures at once (before a run is recorded as finished); true when over the quota. */
  async checkNow(): Promise<boolean> {
    if (this.stopped) return false;
    return this.measure();
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.check(), ms);
    this.timer.unref();
  }

  private async check(): Promise<void> {
    const started = performance.now();
    if (await this.measure()) return;
    const took = performance.now() - started;
    this.schedule(Math.max(this.opts.quota.intervalMs, (took * (1 - MAX_DUTY_CYCLE)) / MAX_DUTY_CYCLE));
  }

  private async measure(): Promise<boolean> {
    const { workspace, quota, log } = this.opts;
    try {
      const usage = await measureDiskUsage(runDiskPaths(workspace), quota.limitBytes);
      if (this.stopped || !usage.over) return false;
      this.stop();
      this.opts.onExceeded(usage.bytes);
      return true;
    } catch (err) {
      log.warn({ err, workspace }, "measuring the workspace's disk usage failed; retrying at the next check");
      return false;
    }
  }
}
