import { chmod, lstat, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { Store } from "../store/store.ts";
import { workspacesDir } from "./workspace.ts";

/** A workspace being removed is first renamed to this prefix, so a follow-up never sees half of it. */
const REMOVING = ".removing-";
/** Run ids asked about at once. */
const BATCH = 500;

/**
 * Removes the workspaces of runs that finished before `finishedBefore`; returns their run ids. A
 * workspace whose run is queued, running or unknown to the store is kept. A follow-up to a run whose
 * workspace is gone starts in a new, empty one (the executor says so in the transcript).
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
  const runIds = names.filter((n) => !n.startsWith("."));
  const removed: string[] = [];
  for (let i = 0; i < runIds.length; i += BATCH) {
    for (const runId of await opts.store.runsFinishedBefore(
      runIds.slice(i, i + BATCH),
      opts.finishedBefore,
    )) {
      try {
        const doomed = join(root, `${REMOVING}${runId}`);
        await rename(join(root, runId), doomed);
        await removeTree(doomed);
        removed.push(runId);
      } catch (err) {
        // One workspace that cannot go must not keep the others: it is tried again at the next sweep.
        opts.log.warn({ err, runId }, "removing an expired workspace failed; retrying at the next sweep");
      }
    }
  }
  return removed;
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
