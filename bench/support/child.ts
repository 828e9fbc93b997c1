import type { ChildProcess } from "node:child_process";

const KEPT_LINES = 40;

/**
 * A server a benchmark started as a child process (Dispatch or a bare baseline), with the last lines of
 * its output kept to explain a failure.
 */
export class BenchChild {
  readonly name: string;
  readonly proc: ChildProcess;
  exited = false;
  private readonly lines: string[] = [];
  private readonly exit: Promise<void>;

  constructor(name: string, proc: ChildProcess) {
    this.name = name;
    this.proc = proc;
    const keep = (chunk: Buffer) => {
      this.lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      this.lines.splice(0, Math.max(0, this.lines.length - KEPT_LINES));
    };
    proc.stdout?.on("data", keep);
    proc.stderr?.on("data", keep);
    this.exit = new Promise((done) =>
      proc.once("exit", () => {
        this.exited = true;
        done();
      }),
    );
  }

  tail(): string {
    return this.lines.map((l) => `  | ${l}`).join("\n") || "  (no output)";
  }

  /**
   * SIGTERM (Dispatch shuts down cleanly and writes its CPU profile), SIGKILL if that takes too long.
   * Safe to call more than once.
   */
  async stop(): Promise<void> {
    if (this.exited) return;
    this.proc.kill("SIGTERM");
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), 10_000);
    await this.exit;
    clearTimeout(timer);
  }
}
