import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type AgentProgram, nodeExecutable, notInstalled, packageDir } from "./agent-program.ts";
import {
  type AgentIO,
  type AgentSession,
  ExternalHarness,
  PLACEHOLDER_KEY,
  type SessionSetup,
} from "./external-harness.ts";
import type { ProviderRoute } from "./model-gateway.ts";
import { PORT_PLACEHOLDER } from "./relay-script.ts";
import { count, str, type ToolKind, toolCall, toolResult } from "./stream-events.ts";

const PACKAGE = "@google/gemini-cli";
const VERSION = "0.61.0";

/**
 * Gemini CLI (`gemini -p … --output-format stream-json`, a Node program) as a harness. Each turn is one
 * headless run; the next turn (follow-ups, live ones included: headless mode takes no input mid-turn)
 * resumes the same session id. Its settings (in the run's private HOME) pick API-key auth, which with
 * GOOGLE_GEMINI_BASE_URL reaches the gateway, and turn usage statistics and update checks off.
 */
export class GeminiHarness extends ExternalHarness {
  readonly type = "gemini";
  protected readonly label = "Gemini CLI";
  protected readonly keyVariable = "GEMINI_API_KEY";
  protected readonly modelProvider = "gemini";

  protected program(): AgentProgram | { problem: string } {
    const dir = packageDir(PACKAGE);
    if (!dir) return { problem: notInstalled("Gemini CLI", PACKAGE, VERSION) };
    return { command: [nodeExecutable(), join(dir, "bundle", "gemini.js")], mounts: [dir], path: [] };
  }

  protected route(apiKey: string): ProviderRoute {
    return {
      name: "Gemini",
      baseUrl: this.opts.provider.baseUrl ?? "https://generativelanguage.googleapis.com",
      allow: [
        /^\/v1beta\/models\/[^/]+(:|%3A)(generateContent|streamGenerateContent|countTokens)$/,
        /^\/v1beta\/models$/,
      ],
      credentials: { "x-goog-api-key": apiKey },
      dropQuery: ["key"],
    };
  }

  protected agentBaseUrl(): string {
    return `http://127.0.0.1:${PORT_PLACEHOLDER}`;
  }

  protected session(setup: SessionSetup): AgentSession {
    return new GeminiSession(setup);
  }
}

class GeminiSession implements AgentSession {
  readonly args: string[];
  readonly env: Record<string, string>;
  readonly liveInput = false;
  private readonly settingsDir: string;
  private readonly setup: SessionSetup;
  private readonly sessionId: string;
  /** Assistant text arrives in deltas: kept until something else happens, then one message. */
  private text = "";
  private readonly tools = new Map<string, string>();

  constructor(setup: SessionSetup) {
    this.setup = setup;
    this.sessionId = setup.resume ?? randomUUID();
    const base = setup.run.agentConfig.base_prompt?.trim();
    const input = setup.input.join("\n\n");
    this.args = [
      "--output-format",
      "stream-json",
      // The sandbox is the boundary: inside it the agent needs no one to approve its tools (in plan mode
      // too, where its workspace is read-only; its own plan mode is not used: docs/runtime.md, "Plan mode").
      "--yolo",
      "--skip-trust",
      "-m",
      setup.model,
      ...(setup.resume ? ["--resume", setup.resume] : ["--session-id", this.sessionId]),
      "-p",
      base && !setup.resume ? `${base}\n\n${input}` : input,
    ];
    this.settingsDir = join(setup.home, ".gemini");
    this.env = { GEMINI_API_KEY: PLACEHOLDER_KEY, GOOGLE_GEMINI_BASE_URL: setup.baseUrl, NO_COLOR: "1" };
  }

  /** Its user settings (the HOME is the run's): API-key auth, no usage statistics, telemetry or updates. */
  async prepare(): Promise<void> {
    await mkdir(this.settingsDir, { recursive: true, mode: 0o700 });
    await writeFile(
      join(this.settingsDir, "settings.json"),
      JSON.stringify({
        security: { auth: { selectedType: "gemini-api-key" } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { disableAutoUpdate: true, disableUpdateNag: true },
      }),
      { mode: 0o600 },
    );
  }

  begin(): void {
    // The input is the -p argument; stdin is closed.
  }

  async handle(event: Record<string, unknown>, io: AgentIO): Promise<void> {
    if (event.type !== "message" || event.role !== "assistant") await this.flush(io);
    switch (event.type) {
      case "init":
        if (!this.setup.resume) await io.saveSession(str(event.session_id) ?? this.sessionId);
        break;
      case "message":
        if (event.role === "assistant") this.text += str(event.content) ?? "";
        break;
      case "tool_use": {
        const id = str(event.tool_id) ?? "";
        const name = str(event.tool_name) ?? "tool";
        this.tools.set(id, name);
        const input = (event.parameters ?? {}) as Record<string, unknown>;
        const kind = KINDS[name] ?? "other";
        await io.emit(
          "tool_call",
          toolCall({
            tool: name,
            kind,
            callId: id,
            input,
            command:
              kind === "command" ? str(input.command) : kind === "search" ? str(input.pattern) : undefined,
            path:
              kind === "file_edit" || kind === "read"
                ? (str(input.file_path) ?? str(input.absolute_path))
                : undefined,
          }),
        );
        break;
      }
      case "tool_result": {
        const id = str(event.tool_id) ?? "";
        const error = event.error as { message?: unknown } | undefined;
        await io.emit(
          "tool_result",
          toolResult({
            tool: this.tools.get(id) ?? "tool",
            callId: id,
            output: str(event.output) ?? str(error?.message) ?? "",
            error: event.status !== "success",
          }),
        );
        break;
      }
      case "error":
        await io.emit("log", { level: "warn", phase: "agent", message: str(event.message) ?? "error" });
        break;
      case "result": {
        const stats = (event.stats ?? {}) as Record<string, unknown>;
        await io.recordUsage({
          input_tokens: count(stats.input_tokens),
          output_tokens: count(stats.output_tokens),
        });
        if (event.status === "success") io.completed();
        else {
          const error = event.error as { message?: unknown } | undefined;
          io.fail(str(error?.message) ?? `status ${String(event.status)}`);
        }
        break;
      }
    }
  }

  private async flush(io: AgentIO): Promise<void> {
    const text = this.text;
    this.text = "";
    if (text.trim()) await io.emit("message", { role: "assistant", text });
  }
}

const KINDS: Record<string, ToolKind> = {
  run_shell_command: "command",
  write_file: "file_edit",
  replace: "file_edit",
  edit: "file_edit",
  glob: "search",
  grep_search: "search",
  search_file_content: "search",
  read_file: "read",
  read_many_files: "read",
};
