import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { saveCheckpointRef } from "../../src/delivery/checkpoint-ref.ts";
import { deliverChanges } from "../../src/delivery/deliver.ts";
import { checkoutRepository, type DeliveryTarget } from "../../src/delivery/repository-checkout.ts";
import { createLogger } from "../../src/log.ts";
import type { RunRecord } from "../../src/model/run.ts";
import { probeBwrap } from "../../src/sandbox/bwrap-sandbox.ts";
import type { Sandbox } from "../../src/sandbox/sandbox.ts";
import { createSandboxProvider, type SandboxProvider } from "../../src/sandbox/sandbox-provider.ts";
import { measureDiskUsage, runDiskPaths } from "../../src/workspace/disk-quota.ts";
import { prepareWorkspace } from "../../src/workspace/workspace.ts";
import { GitHttpServer } from "../support/git-http-server.ts";
import { GitRemotes } from "../support/git-remotes.ts";

/**
 * What the disk quota counts of a run's checkpoints and delivery (docs/runtime.md#workspace): the agent's
 * work, and the one copy of it in delivery's mirror; never the same commits taken out of the workspace a
 * second time for the delivery. A run
 * with a repository in a real sandbox, its checkout, checkpoints and delivery against a git server over
 * smart HTTP, each step's quota left measured as the executor measures it.
 */

const MB = 2 ** 20;
const log = createLogger("silent");
const TOKEN = "ghs_quotatoken0123456789abcdef";
const REPO = "acme/app";
const bwrap = (await probeBwrap("/usr/bin/bwrap")) === undefined;

describe.skipIf(!bwrap)("the disk quota, checkpoints and delivery", () => {
  let remotes: GitRemotes;
  let server: GitHttpServer;
  let provider: SandboxProvider;
  let dir: string;
  let sandbox: Sandbox | undefined;
  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create(REPO, { "README.md": "# app\n" });
    server = await new GitHttpServer(remotes.root, TOKEN).start();
    provider = await createSandboxProvider({
      mode: "bwrap",
      bwrapPath: "/usr/bin/bwrap",
      hide: [],
      limits: {},
      log,
    });
  });
  afterAll(async () => {
    await server?.stop();
    remotes?.remove();
  });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "dispatch-checkpoint-quota-"));
  });
  afterEach(async () => {
    await sandbox?.close?.();
    sandbox = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  const remotePolicy = { allowedHosts: [], lookup: async () => [] };

  /** A run's workspace checked out on its own branch, its sandbox, and what it holds on disk. */
  const checkedOut = async (runId: string, quotaBytes: number) => {
    const { path: workspace } = await prepareWorkspace(dir, runId);
    sandbox = await provider.create({ workspace, runId, agentNetwork: false });
    const target: DeliveryTarget & { base: string; branch: string } = {
      repository: REPO,
      remote: `${server.url}/${REPO}.git`,
      base: "main",
      branch: `dispatch/${runId}`,
      mode: "branch",
    };
    const checkout = await checkoutRepository({
      target,
      remotes: remotePolicy,
      workspace,
      fresh: true,
      token: TOKEN,
      gitAuthor: { name: "Dispatch", email: "dispatch@example.com" },
      signal: new AbortController().signal,
      emit: async () => {},
      log,
      claimExistingBranch: async () => ({ kind: "new" }),
    });
    if (!checkout.ok) throw new Error(`checkout failed: ${JSON.stringify(checkout)}`);
    if (checkout.claim) target.claim = checkout.claim;
    const box = sandbox;
    const sh = async (script: string) => {
      const result = await box.exec(`set -e\n${script}`, {
        timeoutMs: 60_000,
        signal: new AbortController().signal,
      });
      expect(result.exitCode, result.output).toBe(0);
    };
    const used = async (roots = runDiskPaths(workspace)) => (await measureDiskUsage(roots)).bytes;
    /** What is left of the quota, as the executor gives it to a checkpoint and to delivery. */
    const quotaLeftBytes = async () => Math.max(0, quotaBytes - (await used()));
    let expected: string | undefined;
    const checkpoint = async () => {
      const saved = await saveCheckpointRef({
        runId,
        target,
        workspace,
        sandbox: box,
        token: TOKEN,
        remotes: remotePolicy,
        expected,
        holdsRun: async () => true,
        quotaLeftBytes: await quotaLeftBytes(),
        signal: new AbortController().signal,
        log,
      });
      if (!saved.ok) throw new Error(`checkpoint failed: ${saved.reason}`);
      expected = saved.sha;
      return saved;
    };
    return { workspace, target, sandbox: box, sh, used, quotaLeftBytes, checkpoint };
  };

  it("delivers commits of 40% of the quota after a checkpoint brought them into the mirror", async () => {
    const runId = "run-quota-deliver";
    const quota = 20 * MB;
    const ws = await checkedOut(runId, quota);
    // 8 MB that do not compress, committed straight from a pipe (never a file in the work tree).
    await ws.sh(
      "git config user.name Agent; git config user.email agent@example.com\n" +
        "blob=$(head -c 8M /dev/urandom | git hash-object -w --stdin)\n" +
        "git update-index --add --cacheinfo 100644,$blob,big.bin && git commit -qm big",
    );
    const saved = await ws.checkpoint();
    expect(saved.bundleBytes).toBeGreaterThan(8 * MB);
    // The workspace and the mirror each hold the commit: what is left (≈ 4 MB) is less than the commit.
    expect(await ws.quotaLeftBytes()).toBeLessThan(8 * MB);

    const emitted: unknown[] = [];
    const run = {
      id: runId,
      title: "Add big.bin",
      creator: { uid: "user:alice", display_name: "Alice" },
      metadata: {},
    } as unknown as RunRecord;
    const outcome = await deliverChanges({
      run,
      target: ws.target,
      workspace: ws.workspace,
      sandbox: ws.sandbox,
      publish: true,
      token: TOKEN,
      remotes: remotePolicy,
      log,
      pullRequests: undefined,
      gitAuthor: { name: "Dispatch", email: "dispatch@example.com" },
      prDraft: false,
      sessionLink: "http://dispatch.test/runs/1",
      summary: "",
      followup: undefined,
      quotaLeftBytes: await ws.quotaLeftBytes(),
      signal: new AbortController().signal,
      recordArtifact: async () => {},
      emit: async (_type, data) => {
        emitted.push(data);
      },
    });
    expect(outcome).toMatchObject({ kind: "delivered", message: expect.stringMatching(/^Pushed branch/) });
    // The commit is on the branch (delivery's own commit after it records the file missing from the work tree).
    const size = execFileSync(
      "git",
      ["--git-dir", remotes.path(REPO), "cat-file", "-s", `refs/heads/dispatch/${runId}^:big.bin`],
      { encoding: "utf8" },
    );
    expect(Number(size)).toBe(8 * MB);
  });
});
