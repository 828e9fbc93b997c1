import { chmod, lstat, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { AGENT_AREA_SUFFIX } from "../harnesses/external/agent-area.ts";
import { RUN_TMP_SUFFIX } from "../sandbox/sandbox-env.ts";
import type { Store } from "../store/store.ts";
import { RESTORING_SUFFIX } from "./checkpoint-archive.ts";
import { REPOSITORY_CACHES, workspacesDir } from "./workspace.ts";

/** A workspace being removed is first renamed to this prefix, so a follow-up never sees half of it. */
const REMOVING = ".removing-";
/** Run ids asked about at once. */
const BATCH = 500;
/**
 * What Dispatch keeps next to a run's workspace: the environment's "prepared" marker (environments.ts)
 * and the private git mirror of delivery (`<workspace>.delivery/mirror.git`), hidden from the agent, and
 * an external agent's private area (`<workspace>.agent`: its HOME and session files, which only that
 * agent sees), and the run's /tmp (`<workspace>.tmp`, left only by a crash), and a checkpoint being
 * restored (`<workspace>.restoring`, also left only by a crash). They belong to the run named before the suffix and go with its workspace.
 */
const MARKER = ".environment-ready";
const DELIVERY = ".delivery";
const SIBLINGS = [MARKER, DELIVERY, AGENT_AREA_SUFFIX, RUN_TMP_SUFFIX, RESTORING_SUFFIX];

/** The run a name in the workspaces directory belongs to: the workspace itself or one of its siblings. */
function runIdOf(name: string): string | undefined {
  if (name.startsWith(".")) return undefined;
  const sibling = SIBLINGS.find((suffix) => name.endsWith(suffix) && name.length > suffix.length);
  return sibling ? name.slice(0, -sibling.length) : name;
}

/**
 * Removes the workspaces of runs that finished before `finishedBefore`, with what Dispatch keeps next to
 * them (SIBLINGS); returns their run ids. A workspace whose run is queued, running or unknown to the
 * store is kept. A follow-up to a run whose workspace is gone starts in a new, empty one (the executor
 * says so in the transcript), prepares its environment again and checks the repository out again.
 */
export async function removeExpiredWorkspaces(opts: {
  store: Pick<Store, "runsFinishedBefore">;
  dataDir: string;
  finishedBefore: string;
  log: Logger;
}): Promise<string[]> {
  const root = workspacesDir(opts.dataDir);
  let names: string[];
  try {
    names = await readdir(root);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  // What an interrupted removal left behind goes first.
  for (const name of names.filter((n) => n.startsWith(REMOVING))) {
    await removeTree(join(root, name)).catch((err) =>
      opts.log.warn({ err, name }, "removing a workspace failed"),
    );
  }
  const present = new Set(names);
  // A sibling left alone (its workspace already gone) still names its run, and goes with it.
  const runIds = [...new Set(names.map(runIdOf).filter((id): id is string => id !== undefined))];
  const removed: string[] = [];
  for (let i = 0; i < runIds.length; i += BATCH) {
    for (const runId of await opts.store.runsFinishedBefore(
      runIds.slice(i, i + BATCH),
      opts.finishedBefore,
    )) {
      try {
        // The marker first: a workspace must never be new while a marker says it is prepared (a crash
        // between the steps leaves a prepared workspace without a marker, which no execution consults).
        // Then the workspace before the mirror, which a kept workspace would still need for delivery.
        if (present.has(runId + MARKER)) await rm(join(root, runId + MARKER), { force: true });
        const doomed: string[] = [];
        for (const suffix of ["", ...SIBLINGS.filter((s) => s !== MARKER)]) {
          const name = runId + suffix;
          if (!present.has(name)) continue;
          await rename(join(root, name), join(root, `${REMOVING}${name}`));
          doomed.push(join(root, `${REMOVING}${name}`));
        }
        for (const path of doomed) await removeTree(path);
        removed.push(runId);
      } catch (err) {
        // One workspace that cannot go must not keep the others: it is tried again at the next sweep.
        opts.log.warn({ err, runId }, "removing an expired workspace failed; retrying at the next sweep");
      }
    }
  }
  await removeUnusedCaches(root, opts);
  return removed;
}

/**
 * The repository caches (REPOSITORY_CACHES) no run used since `finishedBefore`: each use touches its
 * directory. Renamed first, like a workspace, so a checkout never finds half of one (it makes a new one).
 */
async function removeUnusedCaches(
  root: string,
  opts: { finishedBefore: string; log: Logger },
): Promise<void> {
  const caches = join(root, REPOSITORY_CACHES);
  const cutoff = Date.parse(opts.finishedBefore);
  for (const name of await readdir(caches).catch(() => [] as string[])) {
    try {
      const st = await lstat(join(caches, name));
      if (st.mtimeMs >= cutoff) continue;
      const doomed = join(root, `${REMOVING}repository-${name}`);
      await rename(join(caches, name), doomed);
      await removeTree(doomed);
    } catch (err) {
      opts.log.warn({ err, name }, "removing an unused repository cache failed; retrying at the next sweep");
    }
  }
}

/** rm -rf, also of directories the agent made unreadable or read-only (their owner may change that). */
async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EACCES" && code !== "EPERM") throw err;
    await makeRemovable(path);
    await rm(path, { recursive: true, force: true });
  }
}

async function makeRemovable(dir: string): Promise<void> {
  const st = await lstat(dir);
  if (!st.isDirectory()) return;
  await chmod(dir, st.mode | 0o700);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) await makeRemovable(join(dir, entry.name));
  }
}
