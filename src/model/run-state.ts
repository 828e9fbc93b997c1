/**
 * The run lifecycle (docs/architecture.md). Every state change in Dispatch goes through one of these
 * triggers, and the store applies it as a compare-and-set on the current state, so a refused transition
 * never happens even when two actors race (cancel vs finish, two workers claiming).
 */
export const RUN_STATES = [
  "QUEUED",
  "INPROGRESS",
  "BLOCKED",
  "SUCCEEDED",
  "FAILED",
  "ERROR",
  "CANCELLED",
] as const;
export type RunState = (typeof RUN_STATES)[number];

/** States the Oz API names that Dispatch never emits; list filters accept them and match nothing. */
export const FOREIGN_RUN_STATES = ["PENDING", "CLAIMED"] as const;

export const TERMINAL_STATES: readonly RunState[] = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"];

/** Whether a run in `state` has finished (states from the wire are an open set: unknown ones are not). */
export function isTerminal(state: string): boolean {
  return (TERMINAL_STATES as readonly string[]).includes(state);
}

/**
 * What a transition does to the run's execution (an attempt at the prompt, numbered from 0): a claim
 * begins one, a finish or cancel ends it, a follow-up hand-off queues the next, and a requeue queues the
 * same execution again. The stores derive the columns a transition sets from this.
 */
export type ExecutionEffect = "begin" | "end" | "next" | "retry" | "pause" | "answer";

export const TRANSITIONS = {
  /** A worker claims a queued run. */
  claim: { from: ["QUEUED"], to: "INPROGRESS", execution: "begin" },
  succeed: { from: ["INPROGRESS"], to: "SUCCEEDED", execution: "end" },
  /** The agent or its setup failed: a user-side cause. */
  fail: { from: ["INPROGRESS"], to: "FAILED", execution: "end" },
  /** The platform failed: worker lost, internal fault. */
  error: { from: ["INPROGRESS"], to: "ERROR", execution: "end" },
  cancel: { from: ["QUEUED", "INPROGRESS", "BLOCKED"], to: "CANCELLED", execution: "end" },
  /**
   * The run waits for a person (a plan to approve, a question): it gives up its worker and slot, keeping
   * its execution, workspace and agent session (docs/architecture.md, "Waiting for a person").
   */
  block: { from: ["INPROGRESS"], to: "BLOCKED", execution: "pause" },
  /** Answered (approved, revised, a reply): back to INPROGRESS in place, for a worker to continue it. */
  answer: { from: ["BLOCKED"], to: "INPROGRESS", execution: "answer" },
  /** A follow-up to a finished run starts a new execution of the same run. */
  handoff: { from: ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"], to: "QUEUED", execution: "next" },
  /** Recovery: a lease expired before the agent started, so the run is queued again (once). */
  requeue: { from: ["INPROGRESS"], to: "QUEUED", execution: "retry" },
} as const satisfies Record<string, { from: readonly RunState[]; to: RunState; execution: ExecutionEffect }>;

export type Trigger = keyof typeof TRANSITIONS;

export function transitionFor(trigger: Trigger): { from: readonly RunState[]; to: RunState } {
  return TRANSITIONS[trigger];
}

/** Whether `trigger` may move a run that is in `state`. */
export function canApply(trigger: Trigger, state: RunState): boolean {
  return (TRANSITIONS[trigger].from as readonly RunState[]).includes(state);
}

/** Every (from, to) pair the lifecycle allows, whatever the trigger. */
export function isAllowedTransition(from: RunState | null, to: RunState): boolean {
  if (from === null) return to === "QUEUED";
  return Object.values(TRANSITIONS).some(
    (t) => t.to === to && (t.from as readonly RunState[]).includes(from),
  );
}
