import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * Each run gets its own directory, kept across its executions so follow-ups continue the work (until
 * the retention period removes it). `created` says the directory is new: a first execution, or a
 * follow-up to a run whose workspace was removed.
 */
export async function prepareWorkspace(
  dataDir: string,
  runId: string,
): Promise<{ path: string; created: boolean }> {
  const path = workspacePath(dataDir, runId);
  // Synchronous: a directory entry (microseconds), where a call on the thread pool wakes one of its
  // threads, which on a busy machine takes the core from this one (bench/README.md, "Sixth round: wake-ups
  // per run").
  const created = mkdirSync(path, { recursive: true }) !== undefined;
  return { path, created };
}

export function workspacesDir(dataDir: string): string {
  return join(dataDir, "workspaces");
}

export function workspacePath(dataDir: string, runId: string): string {
  return join(workspacesDir(dataDir), runId);
}

/** Dispatch's private mirror of the run's repository: next to the workspace, never visible to the agent. */
export function mirrorPath(workspace: string): string {
  return `${deliveryArea(workspace)}/mirror.git`;
}

/**
 * Where Dispatch writes a bundle it streams out of the workspace (delivery's new commits, a checkpoint)
 * before fetching it into the mirror: beside the mirror, not in it, so the run's disk quota never counts
 * it (runDiskPaths). It is Dispatch's copy, capped at what is left of the quota and removed once read;
 * counted, it put a run over its quota while it was written (docs/runtime.md#workspace).
 */
export function bundlePath(workspace: string, purpose: "incoming" | "checkpoint"): string {
  return `${deliveryArea(workspace)}/${purpose}.bundle`;
}

/** Delivery's private area beside the workspace: the mirror and the bundles on their way into it. */
function deliveryArea(workspace: string): string {
  return `${workspace}.delivery`;
}

/**
 * The worker's cache of a repository's objects (delivery's repository-cache.ts), shared by its runs in
 * that repository: in the workspaces directory under a name no run has, keyed by the remote's URL.
 */
export function repositoryCachePath(workspace: string, remote: string): string {
  const key = createHash("sha256").update(remote).digest("hex").slice(0, 32);
  return join(dirname(workspace), REPOSITORY_CACHES, `${key}.git`);
}

/** The directory of the repository caches, beside the workspaces (a name no run id has). */
export const REPOSITORY_CACHES = ".repositories";
