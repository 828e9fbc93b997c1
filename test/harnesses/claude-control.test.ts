import { describe, expect, it } from "vitest";
import { answerControlRequest } from "../../src/harnesses/external/claude-control.ts";

/** Claude Code's permission requests as Dispatch answers them (the whole exchange: test/harnesses/claude.test.ts). */
describe("Claude Code's permission requests", () => {
  const request = (body: Record<string, unknown>) => ({
    type: "control_request",
    request_id: "r1",
    request: body,
  });

  it("allows any tool but AskUserQuestion as asked, asking the person nothing", () => {
    const input = { command: "ls", description: "List" };
    const answer = answerControlRequest(request({ subtype: "can_use_tool", tool_name: "Bash", input }));
    expect(answer.question).toBeUndefined();
    expect(JSON.parse(answer.response)).toEqual({
      type: "control_response",
      response: {
        subtype: "success",
        request_id: "r1",
        response: { behavior: "allow", updatedInput: input },
      },
    });
  });

  it("turns AskUserQuestion into the question for the person, and refuses it saying the answer follows", () => {
    const answer = answerControlRequest(
      request({
        subtype: "can_use_tool",
        tool_name: "AskUserQuestion",
        input: {
          questions: [
            {
              question: "Which file?",
              options: [{ label: "README.md", description: "" }, { label: "NOTES.md" }],
            },
            { question: "Which branch?", options: [] },
          ],
        },
      }),
    );
    expect(answer.question).toBe("Which file?\n- README.md\n- NOTES.md\n\nWhich branch?");
    const { response } = JSON.parse(answer.response);
    expect(response.response.behavior).toBe("deny");
    expect(response.response.message).toContain("follows as the user's next message");
    // A call without readable questions still waits, saying so.
    const empty = answerControlRequest(request({ subtype: "can_use_tool", tool_name: "AskUserQuestion" }));
    expect(empty.question).toBe("The agent asked a question it did not put in words.");
  });

  it("answers a request it does not handle with an error, so the agent is never left waiting", () => {
    const answer = answerControlRequest(request({ subtype: "hook_callback" }));
    expect(JSON.parse(answer.response).response).toMatchObject({
      subtype: "error",
      request_id: "r1",
      error: "Dispatch does not answer hook_callback requests",
    });
  });
});
