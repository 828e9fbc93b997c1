import type { RunEvent, StatusMessage } from "./run.ts";

/**
 * Runs survive their worker (docs/architecture.md, "Runs survive their worker"): what the transcript and
 * the run's status say when a run moves to another worker, and how often it may.
 */

/** DISPATCH_MAX_RESUMES when unset: resumes after a lost worker, per execution, before the run ends ERROR. */
export const DEFAULT_MAX_RESUMES = 3;

/** The `log` event of a run whose worker was lost and that another worker resumes. */
export function workerLostEvent(resume: number, maxResumes: number): Record<string, unknown> {
  return {
    level: "warn",
    phase: "worker",
    message: `The worker running this run was lost (its lease expired); another worker resumes it from its last checkpoint (resume ${resume} of ${maxResumes})`,
  };
}

/** How a run ends whose worker was lost once more than it may be resumed. */
export function resumesExhausted(resumes: number, maxResumes: number): StatusMessage {
  const times = resumes === 1 ? "once" : `${resumes} times`;
  return {
    message:
      resumes === 0
        ? "The worker running this run was lost (its lease expired), and DISPATCH_MAX_RESUMES is 0, so it was not resumed; send a follow-up to continue it."
        : `The worker running this run was lost (its lease expired) again after it had been resumed ${times} (DISPATCH_MAX_RESUMES is ${maxResumes}); it stops here. Send a follow-up to continue it.`,
    error_code: "worker_lost",
    retryable: true,
  };
}

/** The `log` event of a run its worker hands back as it shuts down. */
export const HANDED_BACK_MESSAGE =
  "This worker is shutting down (a deploy or a drained node): the run moves to another worker and continues from its checkpoint";

/** The events of the run's current execution: those after the latest claim from QUEUED. */
export function currentExecutionEvents(events: readonly RunEvent[]): RunEvent[] {
  const start = events.findLastIndex(
    (e) => e.type === "state" && e.data.state === "INPROGRESS" && e.data.previous === "QUEUED",
  );
  return events.slice(start + 1);
}
