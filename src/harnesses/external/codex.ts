import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { type AgentProgram, executable, notInstalled, packageDir } from "./agent-program.ts";
import {
  type AgentIO,
  type AgentSession,
  ExternalHarness,
  PLACEHOLDER_KEY,
  type SessionSetup,
} from "./external-harness.ts";
import type { ProviderRoute } from "./model-gateway.ts";
import { PORT_PLACEHOLDER } from "./relay-script.ts";
import { count, str, toolCall, toolResult } from "./stream-events.ts";

const PACKAGE = "@openai/codex";
const VERSION = "0.169.0";
/** Codex's platform packages hold a vendor/<target triple>/ tree: bin/codex and codex-path/ (its rg). */
const TARGETS: Record<string, { pkg: string; triple: string }> = {
  "linux-x64": { pkg: "@openai/codex-linux-x64", triple: "x86_64-unknown-linux-musl" },
  "linux-arm64": { pkg: "@openai/codex-linux-arm64", triple: "aarch64-unknown-linux-musl" },
};
/** The provider Codex is told to use: Dispatch's gateway, speaking the Responses API. */
const PROVIDER = "dispatch";

/**
 * Codex (`codex exec --json`) as a harness. Each turn is one `codex exec` whose input is read from stdin;
 * the next turn (follow-ups, live ones included: Codex exec takes no input mid-turn) is `codex exec resume
 * <thread id>`, so the thread keeps its context. Codex's own sandbox is off: the run's sandbox is the
 * boundary, and Codex's would need namespaces the run's sandbox does not grant. It reaches its model only
 * through a provider defined on the command line (it does not follow OPENAI_BASE_URL).
 */
export class CodexHarness extends ExternalHarness {
  readonly type = "codex";
  protected readonly label = "Codex";
  protected readonly keyVariable = "OPENAI_API_KEY";
  protected readonly modelProvider = "openai";

  protected program(): AgentProgram | { problem: string } {
    const target = TARGETS[`${process.platform}-${process.arch}`];
    const dir = target ? packageDir(target.pkg) : undefined;
    const root = dir && target ? join(dir, "vendor", target.triple) : undefined;
    const binary = root ? executable(join(root, "bin", "codex")) : undefined;
    if (!root || !binary) return { problem: notInstalled("Codex", PACKAGE, VERSION) };
    return { command: [binary], mounts: [root], path: [join(root, "codex-path")] };
  }

  protected route(apiKey: string): ProviderRoute {
    return {
      name: "OpenAI",
      baseUrl: this.opts.provider.baseUrl ?? "https://api.openai.com/v1",
      allow: [/^\/responses$/, /^\/models$/],
      credentials: { authorization: `Bearer ${apiKey}` },
    };
  }

  protected agentBaseUrl(): string {
    return `http://127.0.0.1:${PORT_PLACEHOLDER}`;
  }

  protected session(setup: SessionSetup): AgentSession {
    return new CodexSession(setup);
  }
}

class CodexSession implements AgentSession {
  readonly args: string[];
  readonly env: Record<string, string>;
  readonly liveInput = false;
  private readonly codexHome: string;
  private readonly setup: SessionSetup;
  /** Commands started and not yet reported done, by item id. */
  private readonly started = new Set<string>();

  constructor(setup: SessionSetup) {
    this.setup = setup;
    const base = setup.run.agentConfig.base_prompt?.trim();
    const options = [
      "--json",
      "--skip-git-repo-check",
      "--dangerously-bypass-approvals-and-sandbox",
      // Codex's analytics (Statsig metrics to ab.chatgpt.com, events to chatgpt.com) are flushed as it
      // exits, and it waits for them. The sandbox has no network, and Codex's resolver (musl) does not
      // give up on an unreachable nameserver until its 5 s timeout: every turn ended ~5 s late.
      // They could not reach anyone from here anyway.
      "-c",
      "analytics.enabled=false",
      "-c",
      `model_provider=${PROVIDER}`,
      "-c",
      `model_providers.${PROVIDER}={name="Dispatch",base_url=${toml(setup.baseUrl)},env_key="OPENAI_API_KEY",wire_api="responses"}`,
      ...(base ? ["-c", `developer_instructions=${toml(base)}`] : []),
      "-m",
      setup.model,
    ];
    // "-": the input comes on stdin (no argv length limit, not visible in the process list).
    this.args = setup.resume ? ["exec", "resume", ...options, setup.resume, "-"] : ["exec", ...options, "-"];
    this.codexHome = join(setup.home, ".codex");
    this.env = { OPENAI_API_KEY: PLACEHOLDER_KEY, CODEX_HOME: this.codexHome };
  }

  async prepare(): Promise<void> {
    // Codex refuses a CODEX_HOME that does not exist.
    await mkdir(this.codexHome, { recursive: true, mode: 0o700 });
  }

  begin(io: AgentIO): void {
    io.write(this.setup.input.join("\n\n"));
  }

  async handle(event: Record<string, unknown>, io: AgentIO): Promise<void> {
    switch (event.type) {
      case "thread.started": {
        const id = str(event.thread_id);
        if (id && id !== this.setup.resume) await io.saveSession(id);
        break;
      }
      case "item.started":
        await this.item(event.item as Record<string, unknown> | undefined, io, false);
        break;
      case "item.completed":
        await this.item(event.item as Record<string, unknown> | undefined, io, true);
        break;
      case "turn.completed": {
        const usage = (event.usage ?? {}) as Record<string, unknown>;
        // OpenAI counts cached input inside input_tokens and reasoning inside output_tokens.
        await io.recordUsage({
          input_tokens: count(usage.input_tokens),
          output_tokens: count(usage.output_tokens),
        });
        io.completed();
        break;
      }
      case "turn.failed": {
        const error = event.error as { message?: unknown } | undefined;
        io.fail(str(error?.message) ?? "the turn failed");
        break;
      }
      case "error":
        // Stream retries and the like: worth seeing, not the end of the turn (turn.failed is).
        await io.emit("log", { level: "warn", phase: "agent", message: str(event.message) ?? "error" });
        break;
    }
  }

  private async item(item: Record<string, unknown> | undefined, io: AgentIO, done: boolean): Promise<void> {
    if (!item) return;
    const id = str(item.id) ?? "";
    switch (item.type) {
      case "agent_message":
        if (done && str(item.text)?.trim()) await io.emit("message", { role: "assistant", text: item.text });
        break;
      case "command_execution": {
        const command = str(item.command) ?? "";
        if (!this.started.has(id)) {
          this.started.add(id);
          await io.emit(
            "tool_call",
            toolCall({ tool: "exec_command", kind: "command", callId: id, input: { command }, command }),
          );
        }
        if (!done) break;
        this.started.delete(id);
        const exitCode = typeof item.exit_code === "number" ? item.exit_code : undefined;
        await io.emit(
          "tool_result",
          toolResult({
            tool: "exec_command",
            callId: id,
            output: str(item.aggregated_output) ?? "",
            error: item.status === "failed" || (exitCode !== undefined && exitCode !== 0),
            exitCode,
          }),
        );
        break;
      }
      case "file_change": {
        if (!done) break;
        const changes = Array.isArray(item.changes) ? (item.changes as Array<Record<string, unknown>>) : [];
        const paths = changes.map((c) => str(c.path)).filter((p): p is string => p !== undefined);
        await io.emit(
          "tool_call",
          toolCall({
            tool: "apply_patch",
            kind: "file_edit",
            callId: id,
            input: { changes },
            path: paths.join(", "),
          }),
        );
        await io.emit(
          "tool_result",
          toolResult({
            tool: "apply_patch",
            callId: id,
            output: changes.map((c) => `${str(c.kind) ?? "update"} ${str(c.path) ?? ""}`).join("\n"),
            error: item.status === "failed",
          }),
        );
        break;
      }
      case "mcp_tool_call":
      case "web_search": {
        if (!done) break;
        const tool = item.type === "web_search" ? "web_search" : (str(item.tool) ?? "mcp_tool");
        const kind = item.type === "web_search" ? "search" : "other";
        await io.emit("tool_call", toolCall({ tool, kind, callId: id, input: item }));
        await io.emit(
          "tool_result",
          toolResult({
            tool,
            callId: id,
            output: JSON.stringify(item.result ?? item.query ?? ""),
            error: item.status === "failed",
          }),
        );
        break;
      }
      case "error":
        if (done)
          await io.emit("log", { level: "warn", phase: "agent", message: str(item.message) ?? "error" });
        break;
    }
  }
}

/** A TOML basic string (what `-c key=value` parses). */
function toml(value: string): string {
  return JSON.stringify(value);
}
