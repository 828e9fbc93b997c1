import { RunError } from "../model/errors.ts";
import { parseExternalReference } from "../model/external-reference.ts";
import type { RunRecord } from "../model/run.ts";
import type { Store } from "../store/store.ts";

/** What finding a run by an outside URL reads, for one viewer. */
export interface LookupDeps {
  store: Pick<Store, "findRunsByUrl" | "findLatestBinding" | "getRun">;
  teamId: string;
  /** Whether the viewer sees the run (RunAccess). */
  sees(run: RunRecord): Promise<boolean>;
}

/**
 * The run behind a URL outside Dispatch (GET /agent/run-by-external-reference, docs/api.md), among the runs
 * the viewer sees: for a pull request, the run that opened it (its PULL_REQUEST artifact), else one started
 * from it; for a GitHub comment or a Slack message, the run it started, else the run of its issue or
 * thread; for a GitHub or Linear issue, the latest run started from it (its EXTERNAL_REFERENCE artifact, its
 * trigger URL, or its thread binding).
 */
export async function findByExternalReference(raw: string, deps: LookupDeps): Promise<RunRecord> {
  const ref = parseExternalReference(raw);
  if (!ref) {
    throw new RunError(
      "invalid_request",
      "url: not a URL Dispatch can trace to a run; give a pull request or GitHub issue or comment URL, a Slack message permalink or a Linear issue URL",
    );
  }
  const urls: string[] = [];
  if (ref.kind === "slack_message") {
    urls.push(ref.url);
    // A reply's permalink: the thread's first message started the run.
    if (ref.threadTs) urls.push(ref.url.replace(/\/p\d+$/, `/p${ref.threadTs.replace(".", "")}`));
  } else if ((ref.kind === "github_issue" || ref.kind === "github_pull_request") && ref.commentId) {
    urls.push(`${ref.url}#issuecomment-${ref.commentId}`, ref.url);
  } else {
    urls.push(ref.url);
  }
  for (const url of urls) {
    const runs = await deps.store.findRunsByUrl(deps.teamId, url);
    // The run that opened the pull request comes before runs started from it.
    const opened = (run: RunRecord) =>
      run.artifacts.some((a) => a.artifact_type === "PULL_REQUEST" && a.data.url === url);
    const ordered = [...runs.filter(opened), ...runs.filter((r) => !opened(r))];
    for (const run of ordered) if (await deps.sees(run)) return run;
  }
  if (ref.kind === "github_issue" || ref.kind === "github_pull_request") {
    const binding = await deps.store.findLatestBinding({
      platform: "github",
      workspace: ref.repository,
      channel: String(ref.number),
      thread: null,
    });
    const run = binding && (await deps.store.getRun(deps.teamId, binding.runId));
    if (run && (await deps.sees(run))) return run;
  }
  throw new RunError("resource_not_found", `no run behind ${raw}`);
}
