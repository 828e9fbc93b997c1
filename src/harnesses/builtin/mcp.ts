import { createMCPClient, type MCPClient } from "@ai-sdk/mcp";
import { jsonSchema, type ToolSet, tool } from "ai";
import { mcpUrlAllowed } from "../../model/mcp-url-allowlist.ts";
import type { McpServerConfig } from "../../model/run.ts";
import type { Sandbox } from "../../sandbox/sandbox.ts";
import { SandboxStdioTransport } from "./mcp-sandbox-transport.ts";
import { capText, formatForModel, type ToolOutput } from "./tools/tool-output.ts";

/** A configured MCP server that could not be started or listed: the run fails naming it. */
export class McpStartError extends Error {
  readonly server: string;
  constructor(server: string, message: string) {
    super(message);
    this.server = server;
  }
}

export interface McpConnection {
  /** Tools of every server, named `<server>__<tool>`. */
  tools: ToolSet;
  /** Which server and tool each offered name stands for. */
  origin: Map<string, { server: string; tool: string }>;
  close(): Promise<void>;
}

export interface McpOptions {
  /** Where stdio servers run: the run's sandbox, like the agent's commands. */
  sandbox: Sandbox;
  /** `url` servers the operator allows (`mcp.allowed_urls`); any other is refused. */
  allowedUrls: readonly string[];
  signal: AbortSignal;
  /** How long a server may take to start and list its tools. */
  startTimeoutMs?: number;
  outputChars?: number;
}

const DEFAULT_START_TIMEOUT_MS = 30_000;

/**
 * Connects to every configured MCP server through the AI SDK's MCP client and offers their tools,
 * namespaced by server name. A stdio server is a process whoever created the run chose: it runs in the
 * run's sandbox, in the workspace, with an environment built from nothing but the sandbox basics and the
 * env given in its config, and dies with the run. A `url` server is reached by Dispatch itself, so only
 * the operator's allowed URLs are. Everything opened is closed by `close()`, also when a later server
 * fails to start.
 */
export async function connectMcpServers(
  servers: Record<string, McpServerConfig> | undefined,
  opts: McpOptions,
): Promise<McpConnection> {
  const clients: MCPClient[] = [];
  const tools: ToolSet = {};
  const origin = new Map<string, { server: string; tool: string }>();
  const close = async () => {
    await Promise.allSettled(clients.splice(0).map((c) => c.close()));
  };
  try {
    for (const [name, server] of Object.entries(servers ?? {})) {
      const client = await startClient(name, server, opts);
      clients.push(client);
      let listed: Awaited<ReturnType<MCPClient["listTools"]>>;
      try {
        listed = await client.listTools({
          options: { timeout: opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS, signal: opts.signal },
        });
      } catch (err) {
        throw new McpStartError(name, `MCP server "${name}" did not list its tools: ${errorText(err)}`);
      }
      const prefix = toolName(name);
      for (const def of listed.tools) {
        const offered = `${prefix}__${toolName(def.name)}`.slice(0, 64);
        origin.set(offered, { server: name, tool: def.name });
        tools[offered] = tool({
          description: `[MCP server ${name}] ${def.description ?? def.name}`,
          inputSchema: jsonSchema(
            (def.inputSchema ?? { type: "object" }) as Parameters<typeof jsonSchema>[0],
          ),
          execute: async (input): Promise<ToolOutput> => {
            try {
              const result = await client.callTool({
                name: def.name,
                arguments: (input ?? {}) as Record<string, unknown>,
                options: { signal: opts.signal },
              });
              const capped = capText(callResultText(result), opts.outputChars ?? 30_000);
              return {
                output: capped.text,
                ...(capped.truncated ? { truncated: true } : {}),
                ...(result.isError ? { error: true } : {}),
              };
            } catch (err) {
              return {
                output: `error: MCP tool ${def.name} on ${name} failed: ${errorText(err)}`,
                error: true,
              };
            }
          },
          toModelOutput: ({ output }) => ({ type: "text", value: formatForModel(output as ToolOutput) }),
        });
      }
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { tools, origin, close };
}

async function startClient(name: string, server: McpServerConfig, opts: McpOptions): Promise<MCPClient> {
  const timeout = opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  if (server.url && !mcpUrlAllowed(server.url, opts.allowedUrls)) {
    throw new McpStartError(
      name,
      `MCP server "${name}": ${server.url} is not an allowed MCP server URL; the operator allows URLs with mcp.allowed_urls in dispatch.config.yaml`,
    );
  }
  let transport: SandboxStdioTransport | undefined;
  try {
    if (server.command) {
      transport = new SandboxStdioTransport({
        sandbox: opts.sandbox,
        argv: [server.command, ...(server.args ?? [])],
        env: server.env ?? {},
        signal: opts.signal,
      });
      return await createMCPClient({
        transport,
        clientName: "dispatch",
        initializationOptions: { timeout, signal: opts.signal },
      });
    }
    if (server.url) {
      return await createMCPClient({
        transport: { type: "http", url: server.url, ...(server.headers ? { headers: server.headers } : {}) },
        clientName: "dispatch",
        initializationOptions: { timeout, signal: opts.signal },
      });
    }
    throw new Error("neither command nor url is set");
  } catch (err) {
    await transport?.close();
    const stderr = transport?.stderrTail;
    throw new McpStartError(
      name,
      `MCP server "${name}" failed to start: ${errorText(err)}${stderr ? ` (its stderr: ${stderr})` : ""}`,
    );
  }
}

function callResultText(result: Awaited<ReturnType<MCPClient["callTool"]>>): string {
  const content = (result as { content?: unknown }).content;
  if (Array.isArray(content)) {
    return content
      .map((part: { type?: string; text?: string }) =>
        part.type === "text"
          ? String(part.text ?? "")
          : `[${part.type ?? "content"}: ${JSON.stringify(part)}]`,
      )
      .join("\n");
  }
  const structured = (result as { structuredContent?: unknown; toolResult?: unknown }).structuredContent;
  return JSON.stringify(structured ?? (result as { toolResult?: unknown }).toolResult ?? result);
}

/** Provider tool names allow [A-Za-z0-9_-]. */
function toolName(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, "_");
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error && !err.message.includes(cause.message)
      ? `${err.message} (${cause.message})`
      : err.message;
  }
  return String(err);
}
