import type { ToolSet } from "ai";

/**
 * `mode: "plan"` (run-mode.ts) for the harnesses: the agent answers with a plan and changes no file. The
 * builtin harness gets this instruction and loses its file-writing tools; the executor delivers nothing.
 */
export const PLAN_INSTRUCTION = `PLAN MODE: do not change any file. Inspect the workspace as much as you need \
(read, list and search files; run read-only commands), then answer with a plan: the steps you would take, \
the files you would change and how, and how you would check the result. Do not carry the plan out.`;

/** The tools that change files, left out in plan mode. */
const FILE_WRITING_TOOLS = ["write_file", "edit_file"];

export function withoutFileWrites(tools: ToolSet): ToolSet {
  return Object.fromEntries(Object.entries(tools).filter(([name]) => !FILE_WRITING_TOOLS.includes(name)));
}
