import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { probeBwrap } from "../../src/sandbox/bwrap-sandbox.ts";
import type { Sandbox } from "../../src/sandbox/sandbox.ts";
import { createSandboxProvider } from "../../src/sandbox/sandbox-provider.ts";

/**
 * The read-only workspace of a plan-mode turn (SandboxExecOptions.readOnlyWorkspace): bubblewrap binds the
 * workspace read-only for that command or process only, while /tmp and a writable mount (an agent's HOME
 * beside the workspace) stay writable; the sandbox's next command sees the workspace writable again.
 */
const bwrapProblem = await probeBwrap("/usr/bin/bwrap");

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "dispatch-ro-workspace-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function newSandbox(): Promise<{ sandbox: Sandbox; workspace: string }> {
  const workspace = join(root, `run-${Math.random().toString(16).slice(2)}`);
  await mkdir(workspace);
  const provider = await createSandboxProvider({
    mode: "bwrap",
    bwrapPath: "/usr/bin/bwrap",
    hide: [],
    limits: { memoryBytes: 0, pidsMax: 0 },
    log: createLogger("silent"),
  });
  return { sandbox: await provider.create({ workspace, runId: "ro-test", agentNetwork: false }), workspace };
}

const run = (sandbox: Sandbox, command: string, readOnlyWorkspace?: boolean) =>
  sandbox.exec(command, {
    timeoutMs: 10_000,
    signal: new AbortController().signal,
    ...(readOnlyWorkspace ? { readOnlyWorkspace } : {}),
  });

describe.skipIf(bwrapProblem !== undefined)("a read-only workspace", () => {
  it("refuses a command's writes to the workspace, keeps /tmp writable, and lasts one command", async () => {
    const { sandbox, workspace } = await newSandbox();
    await writeFile(join(workspace, "README.md"), "# app\n");
    const planned = await run(
      sandbox,
      "cat README.md; echo x > new.txt; echo y >> README.md; rm README.md; echo t > /tmp/t && cat /tmp/t",
      true,
    );
    expect(planned.output).toContain("# app");
    expect(planned.output).toMatch(/new\.txt: Read-only file system/);
    expect(planned.output).toMatch(/README\.md: Read-only file system/);
    expect(planned.output).toContain("t\n");
    expect(existsSync(join(workspace, "new.txt"))).toBe(false);
    expect(readFileSync(join(workspace, "README.md"), "utf8")).toBe("# app\n");

    const normal = await run(sandbox, "echo x > new.txt");
    expect(normal.exitCode).toBe(0);
    expect(readFileSync(join(workspace, "new.txt"), "utf8")).toBe("x\n");
    await sandbox.close?.();
  });

  it("starts a process that cannot write the workspace but can write its own writable mount", async () => {
    const { sandbox, workspace } = await newSandbox();
    const home = `${workspace}.agent`;
    await mkdir(home);
    const proc = sandbox.start(
      ["bash", "-c", `echo x > ${workspace}/out.txt; echo session > ${home}/session && echo saved`],
      {
        signal: new AbortController().signal,
        mounts: [{ path: home, writable: true }],
        readOnlyWorkspace: true,
      },
    );
    let output = "";
    proc.child.stdout.setEncoding("utf8").on("data", (c: string) => {
      output += c;
    });
    proc.child.stderr.setEncoding("utf8").on("data", (c: string) => {
      output += c;
    });
    proc.child.stdin.end();
    await proc.exited;
    expect(output).toMatch(/out\.txt: Read-only file system/);
    expect(output).toContain("saved");
    expect(existsSync(join(workspace, "out.txt"))).toBe(false);
    expect(readFileSync(join(home, "session"), "utf8")).toBe("session\n");
    await sandbox.close?.();
  });
});
