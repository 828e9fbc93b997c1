import { describe, expect, it } from "vitest";
import { AskedQuestions, askUserTool } from "../../../src/harnesses/builtin/tools/ask-user.ts";

/** The builtin agent's question tool: it records the question for the turn's end and refuses one nobody can answer. */
describe("ask_user", () => {
  const ask = (questions: AskedQuestions, input: unknown) =>
    askUserTool(questions).execute!(
      input as never,
      { toolCallId: "c1", messages: [], context: {} } as never,
    ) as Promise<{ output: string; error?: boolean }>;

  it("records the question and tells the model the answer follows as the user's next message", async () => {
    const questions = new AskedQuestions();
    expect(questions.any).toBe(false);
    expect(await ask(questions, { question: "  Which file?  " })).toEqual({
      output:
        "The question was sent; the run waits for the answer, which follows as the user's next message.",
    });
    await ask(questions, { question: "And which branch?" });
    expect(questions.any).toBe(true);
    expect(questions.message).toBe("Which file?\n\nAnd which branch?");
  });

  it("refuses an empty or overlong question in words the model reads, and records nothing", async () => {
    const questions = new AskedQuestions();
    expect(await ask(questions, { question: "   " })).toEqual({
      output: "error: a question is 1 to 2000 characters of text",
      error: true,
    });
    expect((await ask(questions, { question: "x".repeat(2001) })).error).toBe(true);
    expect((await ask(questions, {})).error).toBe(true);
    expect(questions.any).toBe(false);
  });
});
