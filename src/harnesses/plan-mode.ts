import type { ToolSet } from "ai";

/**
 * `mode: "plan"` (run-mode.ts) for the harnesses: the agent answers with a plan and changes no file. The
 * builtin harness gets this instruction and loses its file-writing tools; the executor delivers nothing.
 */
export const PLAN_INSTRUCTION = `PLAN MODE: do not change any file. Inspect the workspace as much as you need \
(read, list and search files; run read-only commands), then answer with a plan: the steps you would take, \
the files you would change and how, and how you would check the result; any question you have for the \
person goes in the plan. Do not carry the plan out.`;

/**
 * The tools left out in plan mode: those that change files, and ask_user, since a plan's open questions
 * belong in the plan, which waits for a person anyway (Request changes answers them); an answer to a
 * question would continue the run in normal mode instead.
 */
const LEFT_OUT_IN_PLAN_MODE = ["write_file", "edit_file", "ask_user"];

export function planModeTools(tools: ToolSet): ToolSet {
  return Object.fromEntries(Object.entries(tools).filter(([name]) => !LEFT_OUT_IN_PLAN_MODE.includes(name)));
}
