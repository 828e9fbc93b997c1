/**
 * The transcript's words for what external agents do, whatever each calls its tools: a `tool_call` names
 * the agent's own tool and its `kind` (command, file_edit, search, read, other), with `command` or `path`
 * where there is one, as the session page and the CLI show them; a `tool_result` carries the output.
 */
export type ToolKind = "command" | "file_edit" | "search" | "read" | "other";

/** Output kept per tool result in the transcript (the agent itself saw all of it). */
const OUTPUT_LIMIT = 16_000;

export function toolCall(call: {
  tool: string;
  kind: ToolKind;
  callId: string;
  input: unknown;
  command?: string | undefined;
  path?: string | undefined;
}): Record<string, unknown> {
  return {
    tool: call.tool,
    kind: call.kind,
    call_id: call.callId,
    input: call.input && typeof call.input === "object" ? call.input : { value: call.input },
    ...(call.command !== undefined ? { command: call.command } : {}),
    ...(call.path !== undefined ? { path: call.path } : {}),
  };
}

export function toolResult(result: {
  tool: string;
  callId: string;
  output: string;
  error?: boolean;
  exitCode?: number | undefined;
}): Record<string, unknown> {
  const cut = result.output.length > OUTPUT_LIMIT;
  return {
    tool: result.tool,
    call_id: result.callId,
    output: cut
      ? `${result.output.slice(0, OUTPUT_LIMIT)}\n… (${result.output.length - OUTPUT_LIMIT} more characters)`
      : result.output,
    ...(cut ? { truncated: true } : {}),
    ...(result.error ? { error: true } : {}),
    ...(result.exitCode !== undefined ? { exit_code: result.exitCode } : {}),
  };
}

/** A string field of an event object, or undefined. */
export function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** A finite number, else 0 (usage fields the agent left out). */
export function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}
