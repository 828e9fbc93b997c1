import { defineTool, ToolError } from "./define-tool.ts";

/** The states of a plan's step, as Codex's update_plan names them (readers show them as a checklist). */
export const PLAN_STATUSES = ["pending", "in_progress", "completed"] as const;
type PlanStatus = (typeof PLAN_STATUSES)[number];

/** A step list longer than this is not a plan a person reads. */
const MAX_STEPS = 50;
const MAX_STEP_CHARS = 300;

/**
 * The agent's plan: the whole list of steps with their status, sent again whenever it changes. It
 * touches nothing; the call on the transcript is what the run page and Slack show as the plan.
 */
export function updatePlanTool() {
  return defineTool({
    description:
      "Keep a short plan for multi-step work: send the whole list of steps, each pending, in_progress or " +
      "completed (at most one in_progress), whenever a step starts or finishes. People follow the run by it.",
    schema: {
      type: "object",
      properties: {
        explanation: { type: "string", description: "Why the plan changed (optional)." },
        plan: {
          type: "array",
          items: {
            type: "object",
            properties: {
              step: { type: "string" },
              status: { type: "string", enum: [...PLAN_STATUSES] },
            },
            required: ["step", "status"],
            additionalProperties: false,
          },
        },
      },
      required: ["plan"],
      additionalProperties: false,
    },
    execute: async (input: { plan: Array<{ step: string; status: PlanStatus }> }) => {
      const steps = Array.isArray(input.plan) ? input.plan : [];
      if (steps.length === 0 || steps.length > MAX_STEPS) {
        throw new ToolError(`a plan has 1 to ${MAX_STEPS} steps; send the whole list`);
      }
      for (const s of steps) {
        if (typeof s.step !== "string" || s.step.trim() === "" || s.step.length > MAX_STEP_CHARS) {
          throw new ToolError(`each step is a sentence of at most ${MAX_STEP_CHARS} characters`);
        }
        if (!PLAN_STATUSES.includes(s.status)) {
          throw new ToolError(`a step's status is one of ${PLAN_STATUSES.join(", ")}`);
        }
      }
      const done = steps.filter((s) => s.status === "completed").length;
      return { output: `Plan updated: ${done} of ${steps.length} steps completed.` };
    },
  });
}
