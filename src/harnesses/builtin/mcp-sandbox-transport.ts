import { type JSONRPCMessage, type MCPTransport, validateJSONRPCMessage } from "@ai-sdk/mcp";
import type { Sandbox } from "../../sandbox/sandbox.ts";
import type { SandboxProcess } from "../../sandbox/sandbox-process.ts";

/** Bytes of a server's stderr kept, to say why it stopped. */
const STDERR_KEPT = 2000;

/**
 * The MCP stdio transport (newline-delimited JSON-RPC) over a process in the run's sandbox: the server
 * sees what the agent's commands see (the workspace, an environment built from nothing plus its declared
 * `env`), never Dispatch's files, environment or processes. It ends with the run's signal or `close()`.
 */
export class SandboxStdioTransport implements MCPTransport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private readonly sandbox: Sandbox;
  private readonly argv: string[];
  private readonly env: Record<string, string>;
  private readonly signal: AbortSignal;
  private proc: SandboxProcess | undefined;
  private pending: Buffer = Buffer.alloc(0);
  private stderr = "";

  constructor(opts: { sandbox: Sandbox; argv: string[]; env: Record<string, string>; signal: AbortSignal }) {
    this.sandbox = opts.sandbox;
    this.argv = opts.argv;
    this.env = opts.env;
    this.signal = opts.signal;
  }

  /** The end of what the server wrote to stderr: why it failed, when it did. */
  get stderrTail(): string {
    return this.stderr.trim();
  }

  async start(): Promise<void> {
    if (this.proc) throw new Error("the MCP server was started already");
    const proc = this.sandbox.start(this.argv, { signal: this.signal, env: this.env });
    this.proc = proc;
    proc.child.stdout.on("data", (chunk: Buffer) => this.receive(chunk));
    proc.child.stderr.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString("utf8")).slice(-STDERR_KEPT);
    });
    void proc.exited.then((exit) => {
      if (exit.error) this.onerror?.(exit.error);
      this.onclose?.();
    });
    await new Promise<void>((resolve, reject) => {
      proc.child.once("spawn", resolve);
      proc.child.once("error", reject);
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.proc?.child.stdin;
    if (!stdin || stdin.destroyed) throw new Error("the MCP server is not running");
    if (!stdin.write(`${JSON.stringify(message)}\n`)) {
      await new Promise<void>((resolve) => {
        stdin.once("drain", resolve);
        stdin.once("close", resolve);
      });
    }
  }

  async close(): Promise<void> {
    await this.proc?.stop();
  }

  private receive(chunk: Buffer): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    for (let end = this.pending.indexOf(10); end !== -1; end = this.pending.indexOf(10)) {
      const line = this.pending.subarray(0, end).toString("utf8").trim();
      this.pending = this.pending.subarray(end + 1);
      if (line === "") continue;
      try {
        this.onmessage?.(validateJSONRPCMessage(JSON.parse(line)));
      } catch (err) {
        this.onerror?.(err instanceof Error ? err : new Error(String(err)));
      }
    }
  }
}
