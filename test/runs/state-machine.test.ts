import { describe, expect, it } from "vitest";
import {
  canApply,
  isAllowedTransition,
  RUN_STATES,
  type RunState,
  TRANSITIONS,
  type Trigger,
} from "../../src/model/run-state.ts";

// The lifecycle's table (docs/architecture.md), written out independently of the implementation.
const ALLOWED: Array<[RunState | null, RunState]> = [
  [null, "QUEUED"],
  ["QUEUED", "INPROGRESS"],
  ["INPROGRESS", "SUCCEEDED"],
  ["INPROGRESS", "FAILED"],
  ["INPROGRESS", "ERROR"],
  ["QUEUED", "CANCELLED"],
  ["INPROGRESS", "CANCELLED"],
  ["SUCCEEDED", "QUEUED"],
  ["FAILED", "QUEUED"],
  ["ERROR", "QUEUED"],
  ["CANCELLED", "QUEUED"],
  // Recovery: lease lost before the agent started.
  ["INPROGRESS", "QUEUED"],
  // Waiting for a person, answered, or cancelled while waiting.
  ["INPROGRESS", "BLOCKED"],
  ["BLOCKED", "INPROGRESS"],
  ["BLOCKED", "CANCELLED"],
];

describe("run state machine", () => {
  for (const from of [null, ...RUN_STATES] as Array<RunState | null>) {
    for (const to of RUN_STATES) {
      const allowed = ALLOWED.some(([f, t]) => f === from && t === to);
      it(`${from ?? "(none)"} → ${to} is ${allowed ? "allowed" : "refused"}`, () => {
        expect(isAllowedTransition(from, to)).toBe(allowed);
      });
    }
  }

  it("each trigger applies only from its source states", () => {
    const expected: Record<Trigger, RunState[]> = {
      claim: ["QUEUED"],
      succeed: ["INPROGRESS"],
      fail: ["INPROGRESS"],
      error: ["INPROGRESS"],
      cancel: ["QUEUED", "INPROGRESS", "BLOCKED"],
      block: ["INPROGRESS"],
      answer: ["BLOCKED"],
      handoff: ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"],
      requeue: ["INPROGRESS"],
    };
    for (const trigger of Object.keys(TRANSITIONS) as Trigger[]) {
      for (const state of RUN_STATES) {
        expect(canApply(trigger, state), `${trigger} from ${state}`).toBe(expected[trigger].includes(state));
      }
    }
  });
});
