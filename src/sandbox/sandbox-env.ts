/**
 * Suffix of a run's /tmp, beside its workspace: on disk, so that the run's disk quota counts it (a tmpfs
 * would fill memory uncounted); emptied when an execution ends.
 */
export const RUN_TMP_SUFFIX = ".tmp";

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
