import { defineTool, ToolError } from "./define-tool.ts";
import type { ToolContext } from "./tool-context.ts";

/** Runs a command with bash -c in the sandbox; the output keeps its tail. */
export function shellTool({ sandbox, signal, limits }: ToolContext) {
  return defineTool({
    description:
      "Run a shell command with bash -c in the workspace (the current directory). Returns the exit code and " +
      `the combined stdout/stderr (the last ${limits.outputChars} characters when longer). No network. ` +
      `Default timeout ${limits.commandTimeoutMs / 1000} s; pass timeout_seconds for longer commands ` +
      `(at most ${limits.maxCommandTimeoutMs / 1000} s).`,
    schema: {
      type: "object",
      properties: {
        command: { type: "string", description: "The command line to run." },
        timeout_seconds: { type: "number", description: "Kill the command after this many seconds." },
      },
      required: ["command"],
      additionalProperties: false,
    },
    execute: async (input: { command: string; timeout_seconds?: number }) => {
      if (typeof input.command !== "string" || input.command.trim() === "") {
        throw new ToolError("command must be a non-empty string");
      }
      const timeoutMs = Math.min(
        input.timeout_seconds && input.timeout_seconds > 0
          ? input.timeout_seconds * 1000
          : limits.commandTimeoutMs,
        limits.maxCommandTimeoutMs,
      );
      const result = await sandbox.exec(input.command, {
        timeoutMs,
        signal,
        outputLimit: limits.outputChars,
      });
      const truncated = result.truncated;
      const output = truncated
        ? `[output truncated: only the last ${limits.outputChars} bytes are shown]\n${result.output}`
        : result.output;
      return {
        output,
        exit_code: result.exitCode,
        ...(truncated ? { truncated } : {}),
        ...(result.timedOut ? { timed_out: true } : {}),
      };
    },
  });
}
