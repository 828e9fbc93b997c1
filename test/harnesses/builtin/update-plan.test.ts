import { describe, expect, it } from "vitest";
import { updatePlanTool } from "../../../src/harnesses/builtin/tools/update-plan.ts";

/** The builtin agent's plan tool: it changes nothing, says how far the plan is, and refuses a plan it cannot show. */
describe("update_plan", () => {
  const run = (input: unknown) =>
    updatePlanTool().execute!(
      input as never,
      { toolCallId: "c1", messages: [], context: {} } as never,
    ) as Promise<{
      output: string;
      error?: boolean;
    }>;

  it("counts the completed steps", async () => {
    const result = await run({
      plan: [
        { step: "Read the code", status: "completed" },
        { step: "Fix the test", status: "in_progress" },
        { step: "Run the suite", status: "pending" },
      ],
    });
    expect(result).toEqual({ output: "Plan updated: 1 of 3 steps completed." });
  });

  it("refuses an empty plan, an unknown status and a step that is not a sentence, in words the model reads", async () => {
    expect(await run({ plan: [] })).toEqual({
      output: "error: a plan has 1 to 50 steps; send the whole list",
      error: true,
    });
    expect((await run({ plan: [{ step: "Go", status: "done" }] })).output).toBe(
      "error: a step's status is one of pending, in_progress, completed",
    );
    expect((await run({ plan: [{ step: "x".repeat(301), status: "pending" }] })).error).toBe(true);
  });
});
