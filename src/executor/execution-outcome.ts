import type { HarnessOutcome } from "../harnesses/harness.ts";
import type { StatusMessage } from "../model/run.ts";
import type { RunPatch } from "../store/store.ts";

/**
 * How an execution's end is recorded: the trigger of its transition and the status message it leaves.
 * Waiting for a person blocks the run; no outcome at all (the harness threw) is an internal fault, which
 * may be retried; an agent's failure is its own and is not.
 */
export function outcomeTransition(
  outcome: HarnessOutcome | undefined,
  fault: unknown,
  waitFor: StatusMessage | undefined,
): { trigger: "succeed" | "fail" | "error" | "block"; patch: RunPatch } {
  if (waitFor) return { trigger: "block", patch: { statusMessage: waitFor } };
  if (!outcome) {
    return {
      trigger: "error",
      patch: {
        statusMessage: {
          message: `Internal fault while running the agent: ${fault instanceof Error ? fault.message : String(fault)}`,
          error_code: "internal_error",
          retryable: true,
        },
      },
    };
  }
  if (outcome.status === "succeeded")
    return {
      trigger: "succeed",
      patch: outcome.message ? { statusMessage: { message: outcome.message } } : {},
    };
  return {
    trigger: "fail",
    patch: {
      statusMessage: {
        message: outcome.message,
        error_code: outcome.errorCode ?? "agent_failed",
        retryable: false,
      },
    },
  };
}
