import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { type AgentProgram, executable, notInstalled, packageDir } from "./agent-program.ts";
import { answerControlRequest } from "./claude-control.ts";
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

const PACKAGE = "@anthropic-ai/claude-code";
const VERSION = "2.1.330";

/**
 * Claude Code (`claude -p`, stream-json in and out) as a harness. The prompt and live follow-ups are user
 * messages on its stdin: one that arrives mid-turn is taken in at its next step (it echoes each one it
 * takes, --replay-user-messages); once a turn's `result` arrives with nothing left unread, its input is
 * closed and it exits. The next turn (a follow-up after the run finished) resumes the same session id.
 */
export class ClaudeHarness extends ExternalHarness {
  readonly type = "claude";
  protected readonly label = "Claude Code";
  protected readonly keyVariable = "ANTHROPIC_API_KEY";
  protected readonly modelProvider = "anthropic";

  protected program(): AgentProgram | { problem: string } {
    const dir = packageDir(PACKAGE);
    const binary = dir ? executable(join(dir, "bin", "claude.exe")) : undefined;
    if (!binary) return { problem: notInstalled("Claude Code", PACKAGE, VERSION) };
    return { command: [binary], mounts: [binary], path: [] };
  }

  protected route(apiKey: string): ProviderRoute {
    return {
      name: "Anthropic",
      baseUrl: this.opts.provider.baseUrl ?? "https://api.anthropic.com",
      allow: [/^\/v1\/messages$/, /^\/v1\/messages\/count_tokens$/],
      credentials: { "x-api-key": apiKey },
    };
  }

  protected agentBaseUrl(): string {
    return `http://127.0.0.1:${PORT_PLACEHOLDER}`;
  }

  protected session(setup: SessionSetup): AgentSession {
    return new ClaudeSession(setup);
  }
}

class ClaudeSession implements AgentSession {
  readonly args: string[];
  readonly env: Record<string, string>;
  readonly liveInput = true;
  private readonly setup: SessionSetup;
  private readonly sessionId: string;
  /** User messages written and not yet echoed back: a turn that ends with some unread is followed by another. */
  private unread = 0;
  private saved = false;
  /** Tool names by call id, for the results. */
  private readonly tools = new Map<string, string>();

  constructor(setup: SessionSetup) {
    this.setup = setup;
    this.sessionId = setup.resume ?? randomUUID();
    const base = setup.run.agentConfig.base_prompt?.trim();
    this.args = [
      "-p",
      "--output-format",
      "stream-json",
      "--input-format",
      "stream-json",
      "--verbose",
      "--replay-user-messages",
      // The sandbox is the boundary: inside it the agent needs no one to approve its commands (in plan
      // mode too, where its workspace is read-only: docs/runtime.md, "Plan mode").
      "--permission-mode",
      "bypassPermissions",
      // What still needs a person (AskUserQuestion) is asked on its output and answered on its input
      // (claude-control.ts); without this, headless Claude Code has no AskUserQuestion.
      "--permission-prompt-tool",
      "stdio",
      "--model",
      setup.model,
      ...(base ? ["--append-system-prompt", base] : []),
      ...(setup.resume ? ["--resume", setup.resume] : ["--session-id", this.sessionId]),
    ];
    this.env = {
      ANTHROPIC_BASE_URL: setup.baseUrl,
      ANTHROPIC_API_KEY: PLACEHOLDER_KEY,
      CLAUDE_CONFIG_DIR: join(setup.home, ".claude"),
      // Its root check, should the sandbox run it as root; no updater, telemetry or other traffic.
      IS_SANDBOX: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
      DISABLE_BUG_COMMAND: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      // Its side tasks (titles, summaries) and subagents name a model class; each is the run's model, the
      // one model Dispatch's gateway forwards for this run.
      ANTHROPIC_DEFAULT_HAIKU_MODEL: setup.model,
      ANTHROPIC_DEFAULT_SONNET_MODEL: setup.model,
      ANTHROPIC_DEFAULT_OPUS_MODEL: setup.model,
      ANTHROPIC_SMALL_FAST_MODEL: setup.model,
    };
    // A resumed session is already saved.
    this.saved = setup.resume !== undefined;
  }

  begin(io: AgentIO): void {
    this.deliver(this.setup.input, io, false);
  }

  deliver(messages: string[], io: AgentIO, live = true): void {
    for (const text of messages) {
      this.unread++;
      io.write(JSON.stringify({ type: "user", message: { role: "user", content: text } }));
    }
    if (live && messages.length > 0) {
      void io.emit("log", {
        level: "info",
        phase: "followup",
        message: `${messages.length === 1 ? "Follow-up" : `${messages.length} follow-ups`} handed to the running agent`,
      });
    }
  }

  async handle(event: Record<string, unknown>, io: AgentIO): Promise<void> {
    switch (event.type) {
      case "assistant":
        await this.saveOnce(io);
        for (const block of blocks(event)) {
          if (block.type === "text" && str(block.text)?.trim()) {
            await io.emit("message", { role: "assistant", text: block.text });
          } else if (block.type === "tool_use") {
            const id = str(block.id) ?? "";
            const name = str(block.name) ?? "tool";
            this.tools.set(id, name);
            await io.emit("tool_call", describeCall(name, id, block.input));
          }
        }
        break;
      case "user": {
        const content = blocks(event);
        const results = content.filter((b) => b.type === "tool_result");
        if (results.length === 0) {
          // The echo of a message it took in (the prompt or a follow-up).
          this.unread = Math.max(0, this.unread - 1);
          break;
        }
        for (const r of results) {
          const id = str(r.tool_use_id) ?? "";
          await io.emit(
            "tool_result",
            toolResult({
              tool: this.tools.get(id) ?? "tool",
              callId: id,
              output: resultText(r.content),
              error: r.is_error === true,
            }),
          );
        }
        break;
      }
      case "control_request": {
        const { response, question } = answerControlRequest(event);
        if (question !== undefined) io.asked(question);
        io.write(response);
        break;
      }
      case "result": {
        const usage = (event.usage ?? {}) as Record<string, unknown>;
        await io.recordUsage({
          // Cached input is input all the same: the request_usage a person reads counts every token sent.
          input_tokens:
            count(usage.input_tokens) +
            count(usage.cache_creation_input_tokens) +
            count(usage.cache_read_input_tokens),
          output_tokens: count(usage.output_tokens),
        });
        if (event.is_error === true || (event.subtype !== undefined && event.subtype !== "success")) {
          const errors = Array.isArray(event.errors) ? event.errors.map(String).join("; ") : "";
          io.fail(str(event.result) || errors || String(event.subtype));
          await io.closeInput();
          break;
        }
        io.completed();
        // Messages still unread start another turn by themselves; else the follow-ups that came meanwhile.
        if (this.unread === 0) await io.continueOrClose();
        break;
      }
    }
  }

  private async saveOnce(io: AgentIO): Promise<void> {
    if (this.saved) return;
    this.saved = true;
    await io.saveSession(this.sessionId);
  }
}

function blocks(event: Record<string, unknown>): Array<Record<string, unknown>> {
  const message = event.message as { content?: unknown } | undefined;
  return Array.isArray(message?.content) ? (message.content as Array<Record<string, unknown>>) : [];
}

const KINDS: Record<string, ToolKind> = {
  Bash: "command",
  Write: "file_edit",
  Edit: "file_edit",
  MultiEdit: "file_edit",
  NotebookEdit: "file_edit",
  Grep: "search",
  Glob: "search",
  Read: "read",
};

function describeCall(name: string, id: string, input: unknown): Record<string, unknown> {
  const fields = (input && typeof input === "object" ? input : {}) as Record<string, unknown>;
  const kind = KINDS[name] ?? "other";
  return toolCall({
    tool: name,
    kind,
    callId: id,
    input: fields,
    command: kind === "command" ? str(fields.command) : kind === "search" ? str(fields.pattern) : undefined,
    path:
      kind === "file_edit" || kind === "read"
        ? (str(fields.file_path) ?? str(fields.notebook_path))
        : undefined,
  });
}

/** A tool_result's content: a string, or text blocks. */
function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((c) => (c && typeof c === "object" && "text" in c ? String((c as { text: unknown }).text) : ""))
      .join("");
  }
  return "";
}
