import { expect } from "vitest";
import { describeExternalAgent } from "./external-agent-suite.ts";

/**
 * Codex (the installed @openai/codex binary) as the `codex` harness, against the fake model server's
 * OpenAI Responses API: the shared scenarios (./external-agent-suite.ts).
 */

/** Codex's exec_command arguments (its shell tool). */
const exec = (cmd: string) => ({ name: "exec_command", input: { cmd, yield_time_ms: 10_000 } });

describeExternalAgent({
  harness: "codex",
  process: "codex",
  provider: "openai",
  keyVariable: "OPENAI_API_KEY",
  baseUrlVariable: "OPENAI_BASE_URL",
  // Without a model named, Codex's first request offers no tools.
  modelId: "openai/gpt-fake",
  otherProvidersModel: "anthropic/claude-sonnet-4-5",
  stateFolder: ".codex",
  // Codex writes files through its shell, relative to the workspace it starts in.
  write: (_path, content) => exec(`printf '${content.replace("\n", "\\n")}' > hello.txt`),
  shell: exec,
  expectWriteThenShell(calls, results, _file, command) {
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({ tool: "exec_command", kind: "command" });
    // Codex reports the command as it ran it: through its shell (`bash -lc "…"`).
    expect(calls[0]!.command).toMatch(/printf .*hello from codex.* > hello\.txt/);
    expect(calls[1]!.command).toContain(command);
    expect(results[1]).toMatchObject({ exit_code: 0 });
  },
  expectKey(headers, key) {
    expect(headers.authorization).toBe(`Bearer ${key}`);
  },
});
