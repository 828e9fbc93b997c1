import { type BranchClaim, claimExistingBranch } from "../delivery/branch-ownership.ts";
import type { PullRequestHost } from "../delivery/pull-request-host.ts";
import type { AttachmentContent, AttachmentInfo } from "../model/attachment.ts";
import type { RunEvent, RunRecord } from "../model/run.ts";
import type { Store } from "../store/store.ts";

/** What a harness resumes from: the run's whole transcript so far, read in pages. */
export async function readTranscript(store: Pick<Store, "listEvents">, runId: string): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for (;;) {
    const page = await store.listEvents(runId, events.at(-1)?.seq ?? 0, 1000);
    events.push(...page);
    if (page.length < 1000) return events;
  }
}

/** The run's image attachments with their bytes, for the harness; `listed`: their list, read already. */
export async function readAttachments(
  store: Pick<Store, "listAttachments" | "readAttachmentContent">,
  run: Pick<RunRecord, "id" | "teamId">,
  listed?: AttachmentInfo[],
): Promise<AttachmentContent[]> {
  const list = listed ?? (await store.listAttachments(run.teamId, run.id));
  const out: AttachmentContent[] = [];
  for (const a of list) {
    const content = await store.readAttachmentContent(run.teamId, a.id);
    if (content) out.push({ ...a, content });
  }
  return out;
}

/** Earlier runs of a schedule looked at for its branch (the latest push is among the last few). */
const SCHEDULE_SIBLINGS = 5;

/** How the run's work branch, which exists on the remote, is its own (delivery/branch-ownership.ts), if it is. */
export function ownBranchClaim(
  store: Pick<Store, "getRun" | "listRuns" | "listEvents">,
  run: RunRecord,
  target: { repository: string; branch?: string },
  pullRequests: PullRequestHost | undefined,
  signal: AbortSignal,
): Promise<BranchClaim | undefined> {
  return claimExistingBranch({
    run,
    repository: target.repository,
    branch: target.branch!,
    transcript: () => readTranscript(store, run.id),
    parent: async () => (run.parentRunId ? store.getRun(run.teamId, run.parentRunId) : undefined),
    scheduleSiblings: async () =>
      run.schedule
        ? (
            await store.listRuns(run.teamId, {
              scheduleId: run.schedule.scheduleId,
              limit: SCHEDULE_SIBLINGS,
              sortBy: "created_at",
              sortOrder: "desc",
            })
          ).runs
        : [],
    transcriptOf: (runId) => readTranscript(store, runId),
    pullRequests,
    signal,
  });
}
