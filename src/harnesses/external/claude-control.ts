import { str } from "./stream-events.ts";

/**
 * What Claude Code's permission requests are answered (`--permission-prompt-tool stdio`: a
 * `control_request` of subtype `can_use_tool` on its output, answered by a `control_response` line on its
 * input). Only the tools that need a person ask once permissions are bypassed; of those, AskUserQuestion
 * is a question for the person behind the run (docs/runtime.md, "Questions from the agent"): refused with
 * a message that says the answer follows as the next user message, and the turn ends waiting for it.
 * Anything else is allowed as asked: the sandbox is the boundary.
 */
export function answerControlRequest(event: Record<string, unknown>): {
  /** The line to write to Claude Code's input. */
  response: string;
  /** The question it asked the person, in words a person reads; absent for any other request. */
  question?: string;
} {
  const requestId = str(event.request_id) ?? "";
  const request = (event.request ?? {}) as Record<string, unknown>;
  const reply = (response: Record<string, unknown>) =>
    JSON.stringify({
      type: "control_response",
      response: { subtype: "success", request_id: requestId, response },
    });
  if (request.subtype !== "can_use_tool") {
    return {
      response: JSON.stringify({
        type: "control_response",
        response: {
          subtype: "error",
          request_id: requestId,
          error: `Dispatch does not answer ${String(request.subtype)} requests`,
        },
      }),
    };
  }
  const input = (request.input && typeof request.input === "object" ? request.input : {}) as Record<
    string,
    unknown
  >;
  if (request.tool_name !== "AskUserQuestion") {
    return { response: reply({ behavior: "allow", updatedInput: input }) };
  }
  return {
    response: reply({ behavior: "deny", message: QUESTION_SENT }),
    question: questionText(input) || "The agent asked a question it did not put in words.",
  };
}

const QUESTION_SENT =
  "The question was sent to the person; the run waits for their answer, which follows as the user's next " +
  "message (they may answer in their own words rather than pick an option). End your turn now.";

/** AskUserQuestion's questions ({questions: [{question, options: [{label, description}]}]}), as text. */
function questionText(input: Record<string, unknown>): string {
  const questions = Array.isArray(input.questions) ? input.questions : [];
  return questions
    .filter((q): q is Record<string, unknown> => !!q && typeof q === "object")
    .map((q) => {
      const options = (Array.isArray(q.options) ? q.options : [])
        .filter((o): o is Record<string, unknown> => !!o && typeof o === "object" && !!str(o.label))
        .map((o) => `- ${str(o.label)}${str(o.description) ? `: ${str(o.description)}` : ""}`);
      return [str(q.question) ?? "", ...options].filter(Boolean).join("\n");
    })
    .filter(Boolean)
    .join("\n\n");
}
