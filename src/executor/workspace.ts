import { mkdir } from "node:fs/promises";
import { join } from "node:path";

/** Each run gets its own directory, kept across its executions so follow-ups continue the work. */
export async function prepareWorkspace(dataDir: string, runId: string): Promise<string> {
  const dir = join(dataDir, "workspaces", runId);
  await mkdir(dir, { recursive: true });
  return dir;
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
