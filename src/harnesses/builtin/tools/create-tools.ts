import type { ToolSet } from "ai";
import type { Sandbox } from "../../../sandbox/sandbox.ts";
import { type AskedQuestions, askUserTool } from "./ask-user.ts";
import { editFileTool } from "./edit-file.ts";
import { listFilesTool } from "./list-files.ts";
import { readFileTool } from "./read-file.ts";
import { SandboxFiles } from "./sandbox-files.ts";
import { searchFilesTool } from "./search-files.ts";
import { shellTool } from "./shell.ts";
import { DEFAULT_TOOL_LIMITS, type ToolContext, type ToolLimits } from "./tool-context.ts";
import { updatePlanTool } from "./update-plan.ts";
import { WorkspacePaths } from "./workspace-paths.ts";
import { writeFileTool } from "./write-file.ts";

export interface CreateToolsOptions {
  sandbox: Sandbox;
  signal: AbortSignal;
  limits?: Partial<ToolLimits>;
  /** Where ask_user records the agent's questions: its turn ends with them. */
  questions: AskedQuestions;
}

/**
 * The agent's tools. Every command runs through the run's sandbox and every path goes through
 * `sandbox.resolvePath`, which refuses anything outside the workspace (symlinks included); the file
 * operations themselves run in the sandbox too, so a symlink swapped in after that check still cannot
 * reach past it. Directory walks never follow symlinks. Outputs are capped and the cap is stated to the
 * model.
 */
export function createTools(opts: CreateToolsOptions): ToolSet {
  const ctx: ToolContext = {
    sandbox: opts.sandbox,
    signal: opts.signal,
    limits: { ...DEFAULT_TOOL_LIMITS, ...opts.limits },
    paths: new WorkspacePaths(opts.sandbox),
    files: new SandboxFiles(opts.sandbox, opts.signal),
  };
  return {
    shell: shellTool(ctx),
    read_file: readFileTool(ctx),
    write_file: writeFileTool(ctx),
    edit_file: editFileTool(ctx),
    list_files: listFilesTool(ctx),
    search_files: searchFilesTool(ctx),
    update_plan: updatePlanTool(),
    ask_user: askUserTool(opts.questions),
  };
}
