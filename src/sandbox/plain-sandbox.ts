import type { RunCgroup } from "./cgroups.ts";
import type { CommandSpawner } from "./command-spawner.ts";
import { type CommandResult, runArgvInProcessGroup } from "./process-group.ts";
import { resolveInside, type Sandbox, type SandboxExecOptions, type SandboxStartOptions } from "./sandbox.ts";
import { sandboxEnv } from "./sandbox-env.ts";
import { type SandboxProcess, startInProcessGroup } from "./sandbox-process.ts";

/** A plain subprocess in the workspace: the fallback where bubblewrap is not available. */
export class PlainSandbox implements Sandbox {
  readonly kind: string = "none";
  readonly workspace: string;
  private readonly runId: string;
  private readonly cgroup: RunCgroup | undefined;
  private readonly spawner: CommandSpawner | undefined;

  /** `spawner`: Dispatch's (the provider's); without one, commands are spawned from this process. */
  constructor(workspace: string, runId: string, opts: { cgroup?: RunCgroup; spawner?: CommandSpawner } = {}) {
    this.workspace = workspace;
    this.runId = runId;
    this.cgroup = opts.cgroup;
    this.spawner = opts.spawner;
  }

  exec(command: string, opts: SandboxExecOptions): Promise<CommandResult> {
    const argv = ["bash", "-c", `${this.cgroup?.enterShell ?? ""}${command}`];
    const options = {
      cwd: this.workspace,
      env: sandboxEnv(this.workspace, this.runId),
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      ...(opts.outputLimit !== undefined ? { outputLimit: opts.outputLimit } : {}),
    };
    return this.spawner ? this.spawner.run(argv, options) : runArgvInProcessGroup(argv, options);
  }

  start(argv: string[], opts: SandboxStartOptions): SandboxProcess {
    return startInProcessGroup([...(this.cgroup?.enter ?? []), ...argv], {
      cwd: this.workspace,
      env: { ...sandboxEnv(this.workspace, this.runId), ...opts.env },
      signal: opts.signal,
    });
  }

  async resolvePath(path: string): Promise<string> {
    return resolveInside(this.workspace, path);
  }

  async close(): Promise<void> {
    await this.cgroup?.remove();
  }
}
