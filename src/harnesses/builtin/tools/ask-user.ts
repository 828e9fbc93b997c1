import { defineTool, ToolError } from "./define-tool.ts";

/** A question longer than this is not one a person answers from a chat message. */
const MAX_QUESTION_CHARS = 2000;

/**
 * What the model is told the call did. It is the call's result on the transcript too, so the history
 * rebuilt for the answered run (history.ts) reads: the question, this, then the answer as the user's
 * next message (a follow-up).
 */
const QUESTION_SENT =
  "The question was sent; the run waits for the answer, which follows as the user's next message.";

/** The questions the agent asked in its turn: the turn ends with them and the run waits for an answer. */
export class AskedQuestions {
  private readonly asked: string[] = [];

  add(question: string): void {
    this.asked.push(question);
  }

  /** Whether the agent asked anything: its turn ends at the end of this step. */
  get any(): boolean {
    return this.asked.length > 0;
  }

  /** The run's status message while it waits: the question (several, one after another). */
  get message(): string {
    return this.asked.join("\n\n");
  }
}

/**
 * Asks the person behind the run a question and waits (docs/runtime.md, "Questions from the agent"): the
 * turn ends at the end of the step, the run is BLOCKED awaiting_input with the question as its status
 * message, and the answer arrives as a follow-up. It touches nothing in the workspace.
 */
export function askUserTool(questions: AskedQuestions) {
  return defineTool({
    description:
      "Ask the person who gave you this task a question and wait for the answer. Use it only when you cannot " +
      "go on well without their decision or information (an ambiguous requirement, a choice between " +
      "approaches with real trade-offs), never for permission to do what was asked. Ask one clear, " +
      "self-contained question, with the options you see. Your turn ends after this step; the answer comes " +
      "as the user's next message.",
    schema: {
      type: "object",
      properties: {
        question: { type: "string", description: "The question, as the person will read it." },
      },
      required: ["question"],
      additionalProperties: false,
    },
    execute: async (input: { question: string }) => {
      const question = typeof input.question === "string" ? input.question.trim() : "";
      if (question === "" || question.length > MAX_QUESTION_CHARS) {
        throw new ToolError(`a question is 1 to ${MAX_QUESTION_CHARS} characters of text`);
      }
      questions.add(question);
      return { output: QUESTION_SENT };
    },
  });
}
