import { expect } from "vitest";
import { describeExternalAgent } from "./external-agent-suite.ts";

/**
 * Gemini CLI (the installed @google/gemini-cli, on Dispatch's Node) as the `gemini` harness, against the
 * fake model server's Gemini API (streamGenerateContent): the shared scenarios
 * (./external-agent-suite.ts).
 */

describeExternalAgent({
  harness: "gemini",
  process: "gemini",
  provider: "gemini",
  keyVariable: "GEMINI_API_KEY",
  baseUrlVariable: "GEMINI_BASE_URL",
  modelId: "gemini/gemini-2.5-pro",
  otherProvidersModel: "openai/gpt-5",
  stateFolder: ".gemini",
  write: (path, content) => ({ name: "write_file", input: () => ({ file_path: path(), content }) }),
  shell: (command) => ({ name: "run_shell_command", input: { command } }),
  expectWriteThenShell(calls, _results, file, command) {
    expect(calls).toMatchObject([
      { tool: "write_file", kind: "file_edit", path: file },
      { tool: "run_shell_command", kind: "command", command },
    ]);
  },
  expectKey(headers, key) {
    expect(headers["x-goog-api-key"]).toBe(key);
  },
});
