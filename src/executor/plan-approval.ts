import { v7 as uuidv7 } from "uuid";
import type { StatusMessage } from "../model/run.ts";
import type { Store } from "../store/store.ts";

/**
 * A plan waits for approval (docs/architecture.md, "Waiting for a person"): the plan the agent wrote in
 * this execution becomes the run's PLAN artifact (its text stored like a file's, readable by its uid),
 * and the run waits `awaiting_approval`: Approve carries it out in the same run, Request changes revises
 * it, Cancel ends it.
 */
export async function recordPlan(
  store: Pick<Store, "recordArtifact">,
  run: { id: string; title: string },
  plan: string,
): Promise<StatusMessage> {
  const uid = uuidv7();
  const content = Buffer.from(plan, "utf8");
  await store.recordArtifact(
    run.id,
    {
      artifact_type: "PLAN",
      created_at: new Date().toISOString(),
      data: { document_uid: uid, artifact_uid: uid, title: `Plan: ${run.title}` },
    },
    { uid, contentType: "text/markdown", content },
  );
  return {
    message:
      "The plan is ready and waits for you: approve it to carry it out, request changes, or cancel the run",
    error_code: "awaiting_approval",
    retryable: false,
  };
}
