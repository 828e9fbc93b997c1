import { createHash } from "node:crypto";
import { mkdir } from "node:fs/promises";
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
  const created = (await mkdir(path, { recursive: true })) !== undefined;
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
  return `${workspace}.delivery/mirror.git`;
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
