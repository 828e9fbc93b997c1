/** What a tool returns: recorded as-is on the transcript, turned into text for the model. */
export interface ToolOutput {
  output: string;
  truncated?: boolean;
  /** Shell only. */
  exit_code?: number | null;
  timed_out?: boolean;
  /** The tool could not do what was asked (bad path, edit not found, …). */
  error?: boolean;
}

/** The text the model sees for a tool result; also used to rebuild history from the transcript. */
export function formatForModel(result: Partial<ToolOutput>): string {
  const parts: string[] = [];
  if (result.exit_code !== undefined) {
    parts.push(
      result.timed_out
        ? "[timed out and was killed]"
        : `[exit code ${result.exit_code === null ? "none (killed by a signal)" : result.exit_code}]`,
    );
  }
  parts.push(String(result.output ?? ""));
  return parts.join("\n");
}

/** Cuts text to `limit` characters, keeping the head, and says so. */
export function capText(text: string, limit: number, hint = ""): { text: string; truncated: boolean } {
  if (text.length <= limit) return { text, truncated: false };
  return {
    text: `${text.slice(0, limit)}\n[output truncated: showed ${limit} of ${text.length} characters${hint ? `; ${hint}` : ""}]`,
    truncated: true,
  };
}
