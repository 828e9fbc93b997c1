import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, link, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeBwrap } from "../../src/sandbox/bwrap-sandbox.ts";
import { measureDiskUsage, runDiskPaths } from "../../src/workspace/disk-quota.ts";
import { bundlePath, mirrorPath } from "../../src/workspace/workspace.ts";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { GitRemotes } from "../support/git-remotes.ts";
import { isAlive, runProcesses } from "../support/server-process.ts";

const MB = 2 ** 20;
const bwrap = (await probeBwrap("/usr/bin/bwrap")) === undefined;

describe("measuring a workspace's disk usage", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "dispatch-du-"));
  });
  afterAll(async () => {
    await chmod(join(dir, "ws", "locked"), 0o700).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });

  it("counts allocated blocks: fallocated files fully, sparse ones not, hard links once, hidden dirs too", async () => {
    const ws = join(dir, "ws");
    await mkdir(join(ws, "locked"), { recursive: true });
    execFileSync("fallocate", ["-l", "8M", join(ws, "allocated.bin")]);
    execFileSync("truncate", ["-s", "1G", join(ws, "sparse.bin")]);
    await link(join(ws, "allocated.bin"), join(ws, "same-inode.bin"));
    execFileSync("fallocate", ["-l", "4M", join(ws, "locked", "hidden.bin")]);
    await chmod(join(ws, "locked"), 0o000);
    // A symlink to a big file outside the workspace is not followed.
    execFileSync("fallocate", ["-l", "16M", join(dir, "outside.bin")]);
    await symlink(join(dir, "outside.bin"), join(ws, "link-out"));

    const usage = await measureDiskUsage(ws);
    expect(usage.over).toBe(false);
    expect(usage.bytes).toBeGreaterThanOrEqual(12 * MB);
    expect(usage.bytes).toBeLessThan(13 * MB);
  });

  it("adds up several roots, counting a file linked from two of them once and a missing root as 0", async () => {
    const other = join(dir, "other");
    await mkdir(other);
    execFileSync("fallocate", ["-l", "2M", join(other, "own.bin")]);
    await link(join(dir, "outside.bin"), join(other, "linked-in.bin"));
    await link(join(dir, "outside.bin"), join(other, "linked-twice.bin"));
    const usage = await measureDiskUsage([join(dir, "ws"), other, join(dir, "absent")]);
    // The workspace's 12 MB, the other root's 2 MB, and the 16 MB file linked twice counted once.
    expect(usage.bytes).toBeGreaterThanOrEqual(30 * MB);
    expect(usage.bytes).toBeLessThan(31 * MB);
  });

  it("counts a large tree (read off the event loop) as it counts a small one (read at once), as du does", async () => {
    const tree = async (name: string, files: number) => {
      const root = join(dir, name);
      await mkdir(join(root, "sub", "locked"), { recursive: true });
      for (let i = 0; i < files; i++) {
        await writeFile(join(root, i % 3 ? "sub" : ".", `f${i}`), "x".repeat(i * 700));
        if (i % 10 === 0) await link(join(root, i % 3 ? "sub" : ".", `f${i}`), join(root, `l${i}`));
      }
      await writeFile(join(root, "sub", "locked", "inside"), "y".repeat(9000));
      await chmod(join(root, "sub", "locked"), 0o000);
      return root;
    };
    for (const root of [await tree("small", 12), await tree("large", 150)]) {
      const usage = await measureDiskUsage(root);
      await chmod(join(root, "sub", "locked"), 0o700); // made readable by the count; du needs it too
      expect(usage).toEqual({
        bytes: Number(execFileSync("du", ["-sxB1", root], { encoding: "utf8" }).split("\t")[0]),
        over: false,
      });
    }
  });

  it("charges a run for delivery's mirror, not for the bundles Dispatch streams into it", async () => {
    const workspace = join(dir, "workspaces", "run");
    await mkdir(workspace, { recursive: true });
    await mkdir(join(mirrorPath(workspace), "objects"), { recursive: true });
    execFileSync("fallocate", ["-l", "3M", join(workspace, "own.bin")]);
    execFileSync("fallocate", ["-l", "2M", join(mirrorPath(workspace), "objects", "received.pack")]);
    // A delivery's and a checkpoint's bundle, on their way into the mirror: each may be as large as what
    // is left of the quota, and both may be there at once (a step's checkpoint beside the delivery).
    execFileSync("fallocate", ["-l", "8M", bundlePath(workspace, "incoming")]);
    execFileSync("fallocate", ["-l", "8M", bundlePath(workspace, "checkpoint")]);
    const usage = await measureDiskUsage(runDiskPaths(workspace));
    expect(usage.bytes).toBeGreaterThanOrEqual(5 * MB);
    expect(usage.bytes).toBeLessThan(6 * MB);
  });

  it("stops counting once past the limit", async () => {
    const usage = await measureDiskUsage(join(dir, "ws"), 1 * MB);
    expect(usage.over).toBe(true);
    expect(usage.bytes).toBeGreaterThan(1 * MB);
  });
});

describe("the per-run disk quota", () => {
  let t: TestDispatch;
  beforeAll(async () => {
    t = await startTestDispatch({ DISPATCH_RUN_DISK_QUOTA_MB: "16" }, { diskCheckIntervalMs: 100 });
  });
  afterAll(async () => {
    await t.stop();
  });

  const create = async (prompt: string) =>
    (await t.api("POST", "/api/v1/agent/runs", { prompt })).body.run_id as string;
  const quotaFailure = {
    message: expect.stringMatching(
      /^The run holds at least 64 MB on disk \(its workspace, \/tmp and HOME\), over its disk quota of 16 MB; .* raise DISPATCH_RUN_DISK_QUOTA_MB on the server$/,
    ),
    error_code: "budget_exceeded",
    reason: "disk_quota_exceeded",
    retryable: false,
  };

  it("stops a run whose workspace grows past the quota: FAILED, saying so, its processes gone", async () => {
    const id = await create("$ fallocate -l 64M big.bin && sleep 30\n$ echo never");
    const pids = await waitFor(() => {
      const found = runProcesses(id);
      return found.length > 0 ? found : undefined;
    });
    // The sleep's 30 s bound the wait: only the quota ends the run inside it.
    const run = await waitForState(t, id, ["FAILED", "SUCCEEDED", "ERROR"], 25_000);
    expect(run.state).toBe("FAILED");
    expect(run.status_message).toEqual(quotaFailure);
    await waitFor(() => !pids.some(isAlive) && runProcesses(id).length === 0, {
      what: "every process of the run to be gone",
    });
    const events = (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events as Array<{
      type: string;
      data: Record<string, unknown>;
    }>;
    expect(events.filter((e) => e.type === "tool_call").map((e) => e.data.command)).toEqual([
      "fallocate -l 64M big.bin && sleep 30",
    ]);
  });

  it("fails a run that went over the quota even when it finished between two measurements", async () => {
    const id = await create("$ fallocate -l 64M big.bin");
    const run = await waitForState(t, id, ["FAILED", "SUCCEEDED", "ERROR"]);
    expect(run.state).toBe("FAILED");
    expect(run.status_message).toEqual(quotaFailure);
  });

  it.skipIf(!bwrap)("counts the run's /tmp, which lies on disk beside its workspace", async () => {
    const id = await create("$ fallocate -l 64M /tmp/big.bin && sleep 30\n$ echo never");
    // The sleep's 30 s bound the wait: only the quota ends the run inside it.
    const run = await waitForState(t, id, ["FAILED", "SUCCEEDED", "ERROR"], 25_000);
    expect(run.state).toBe("FAILED");
    expect(run.status_message).toEqual(quotaFailure);
    // An execution's /tmp goes with it: removed once the sandbox is closed, after the run's slot is freed.
    await waitFor(() => !existsSync(join(t.dataDir, "workspaces", `${id}.tmp`)) || undefined, {
      what: "the run's /tmp to be removed",
    });
  });

  it("counts an external agent's HOME, in the run's private area beside its workspace", async () => {
    const id = await create("$ sleep 30\n$ echo never");
    await waitFor(() => runProcesses(id).length > 0 || undefined, { what: "the run's command to start" });
    // What a Claude Code, Codex or Gemini CLI leaves in its HOME (caches, sessions) while it works.
    const home = join(t.dataDir, "workspaces", `${id}.agent`, "home");
    await mkdir(home, { recursive: true });
    execFileSync("fallocate", ["-l", "64M", join(home, "cache.bin")]);
    const run = await waitForState(t, id, ["FAILED", "SUCCEEDED", "ERROR"], 25_000);
    expect(run.state).toBe("FAILED");
    expect(run.status_message).toEqual(quotaFailure);
  });

  it("lets a run under the quota succeed", async () => {
    const id = await create("$ fallocate -l 4M small.bin");
    expect((await waitForState(t, id, ["FAILED", "SUCCEEDED", "ERROR"])).state).toBe("SUCCEEDED");
  });
});

describe.skipIf(!bwrap)("the disk quota and delivery", () => {
  let remotes: GitRemotes;
  let t: TestDispatch;
  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create("acme/app", { "README.md": "# app\n" });
    t = await startTestDispatch(
      { DISPATCH_RUN_DISK_QUOTA_MB: "16", DISPATCH_ALLOW_FILE_REMOTES: "true" },
      { diskCheckIntervalMs: 100 },
    );
  });
  afterAll(async () => {
    await t?.stop();
    remotes?.remove();
  });

  it("takes the new commits out of the workspace only up to what is left of the quota", async () => {
    // 9 MB that do not compress, committed straight from a pipe (never a file in the work tree): the
    // workspace stays under the 16 MB quota, but its bundle would not fit beside it.
    const created = await t.api("POST", "/api/v1/agent/runs", {
      prompt:
        "$ blob=$(head -c 9M /dev/urandom | git hash-object -w --stdin) && git update-index --add --cacheinfo 100644,$blob,big.bin && git commit -qm big",
      config: { repository: `file://${remotes.path("acme/app")}`, delivery: "branch" },
    });
    expect(created.status, created.text).toBe(200);
    const run = await waitForState(t, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state, JSON.stringify(run.status_message)).toBe("FAILED");
    expect(run.status_message).toMatchObject({
      reason: "delivery_failed",
      message: expect.stringMatching(
        /^The new commits take more than the [67] MB left of the run's disk quota, so they were not taken out of the workspace; .* raise DISPATCH_RUN_DISK_QUOTA_MB on the server$/,
      ),
    });
    expect(remotes.branches("acme/app")).toEqual(["main"]);
  });
});
