import { mkdir } from "node:fs/promises";
import { join } from "node:path";

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

/**
 * Suffix of a run's /tmp, beside its workspace: on disk, so that the run's disk quota counts it (a tmpfs
 * would fill memory uncounted); emptied when an execution ends.
 */
export const RUN_TMP_SUFFIX = ".tmp";

export function workspacesDir(dataDir: string): string {
  return join(dataDir, "workspaces");
}

export function workspacePath(dataDir: string, runId: string): string {
  return join(workspacesDir(dataDir), runId);
}

/**
 * The whole environment an agent's processes get: built from nothing, never inherited, so provider
 * keys and Dispatch's own secrets cannot leak into a run.
 */
export function sandboxEnv(workspace: string, runId: string): Record<string, string> {
  return {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: workspace,
    LANG: "C.UTF-8",
    TERM: "dumb",
    DISPATCH_RUN_ID: runId,
  };
}
