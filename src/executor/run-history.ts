import type { AttachmentContent } from "../model/attachment.ts";
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

/** The run's image attachments with their bytes, for the harness. */
export async function readAttachments(
  store: Pick<Store, "listAttachments" | "readAttachmentContent">,
  run: Pick<RunRecord, "id" | "teamId">,
): Promise<AttachmentContent[]> {
  const list = await store.listAttachments(run.teamId, run.id);
  const out: AttachmentContent[] = [];
  for (const a of list) {
    const content = await store.readAttachmentContent(run.teamId, a.id);
    if (content) out.push({ ...a, content });
  }
  return out;
}
