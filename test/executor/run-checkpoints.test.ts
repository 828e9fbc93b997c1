import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { lstat, mkdir, mkdtemp, readFile, readlink, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { checkoutRepository, type DeliveryTarget } from "../../src/delivery/repository-checkout.ts";
import { RunCheckpoints } from "../../src/executor/run-checkpoints.ts";
import { createLogger } from "../../src/log.ts";
import type { RunRecord } from "../../src/model/run.ts";
import type { Sandbox } from "../../src/sandbox/sandbox.ts";
import { createSandboxProvider, type SandboxProvider } from "../../src/sandbox/sandbox-provider.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { listTree } from "../../src/workspace/tree-listing.ts";
import { prepareWorkspace } from "../../src/workspace/workspace.ts";
import { type StoreSuite, storeSuite, waitPast } from "../store/conformance/suite.ts";
import { waitFor } from "../support/dispatch.ts";
import { GitHttpServer } from "../support/git-http-server.ts";
import { GitRemotes } from "../support/git-remotes.ts";

/**
 * A run's checkpoint taken on one worker and restored on another, each with its own data directory, on
 * one SQLite store: the workspace of a run with a repository through the hidden ref on a real git server
 * over smart HTTP (the token GitHub takes), the agent's area and other workspaces through the store.
 */

const log = createLogger("silent");
const TOKEN = "ghs_checkpointtoken0123456789";
const REPO = "acme/app";
const AUTHOR = { name: "Dispatch", email: "dispatch@example.com" };

let remotes: GitRemotes;
let server: GitHttpServer;
let provider: SandboxProvider;

beforeAll(async () => {
  remotes = new GitRemotes();
  const files: Record<string, string> = {
    "README.md": "# app\n",
    "src/keep.txt": "kept\n",
    "src/edit.txt": "before\n",
    "src/gone.txt": "deleted by the agent\n",
    ".gitignore": "build/\n",
  };
  remotes.create(REPO, files);
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
  await server.stop();
  remotes.remove();
});

/** Plain git, as a person would look at a workspace or the remote. */
function git(args: string[]): string {
  return execFileSync("git", args, {
    encoding: "utf8",
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: tmpdir(),
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
    },
  }).trim();
}

describe("run checkpoints", () => {
  let dir: string;
  let store: SqliteStore;
  let runs: StoreSuite;
  const sandboxes: Sandbox[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "dispatch-checkpoints-"));
    store = new SqliteStore(join(dir, "dispatch.db"));
    await store.migrate();
    await store.ensureTeam({ id: "t1", name: "Team one" });
    runs = storeSuite(() => store);
  });
  afterEach(async () => {
    for (const sandbox of sandboxes.splice(0)) await sandbox.close?.();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A worker with its own data directory, holding `run`, its workspace new. */
  const worker = async (
    id: string,
    run: RunRecord,
    opts: { repository?: boolean; quotaBytes?: number } = {},
  ) => {
    const { path: workspace } = await prepareWorkspace(join(dir, id), run.id);
    const sandbox = await provider.create({ workspace, runId: run.id, agentNetwork: false });
    sandboxes.push(sandbox);
    const target: DeliveryTarget = {
      repository: REPO,
      remote: `${server.url}/${REPO}.git`,
      base: "main",
      branch: `dispatch/${run.id}`,
      mode: "branch",
    };
    const remotePolicy = { allowedHosts: [], lookup: async () => [] };
    if (opts.repository) {
      const checkout = await checkoutRepository({
        target,
        remotes: remotePolicy,
        workspace,
        fresh: true,
        token: TOKEN,
        gitAuthor: AUTHOR,
        signal: new AbortController().signal,
        emit: async () => {},
        log,
        claimExistingBranch: async () => ({ kind: "new" }),
      });
      expect(checkout.ok).toBe(true);
    }
    const checkpoints = new RunCheckpoints({
      store,
      workerId: id,
      run,
      workspace,
      log,
      ...(opts.quotaBytes ? { diskQuota: { limitBytes: opts.quotaBytes, intervalMs: 60_000 } } : {}),
      ...(opts.repository ? { repository: { target, token: TOKEN, remotes: remotePolicy, sandbox } } : {}),
    });
    const sh = async (script: string) => {
      const result = await sandbox.exec(`set -e\n${script}`, {
        timeoutMs: 60_000,
        signal: new AbortController().signal,
      });
      expect(result.exitCode, result.output).toBe(0);
      return result.output.trim();
    };
    return { workspace, sandbox, checkpoints, sh };
  };

  /** Moves the run to `to`, as lease recovery and a claim by another worker do. */
  const moveRun = async (run: RunRecord, to: string) => {
    await waitPast(2);
    await store.recoverExpiredLeases();
    expect((await store.claimNextRun(to, 60_000))?.id).toBe(run.id);
  };

  const claimed = async () => {
    const run = await runs.create();
    // A lease of 1 ms: the run is the first worker's until the test moves it.
    expect((await store.claimNextRun("worker-a", 1))?.id).toBe(run.id);
    return run;
  };

  const ls = (bare: string, prefix: string) =>
    git(["--git-dir", bare, "for-each-ref", "--format=%(refname) %(objectname)", prefix]);

  it("carries a repository's working tree, local commits and the agent's session to another worker", async () => {
    const run = await claimed();
    const a = await worker("worker-a", run, { repository: true });
    // What an agent leaves mid-run: a local commit, then edits, a new file, a deletion, an executable,
    // a symlink, something staged, something ignored; and its session files beside the workspace.
    await a.sh(`
      git config user.name Agent; git config user.email agent@example.com
      echo committed > committed.txt && git add committed.txt && git commit -qm "local commit"
      echo after > src/edit.txt
      mkdir -p new/deeper && echo untracked > new/deeper/file.txt
      rm src/gone.txt
      printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod 755 run.sh
      ln -s src/keep.txt link-to-keep
      echo staged > staged.txt && git add staged.txt
      mkdir -p build && echo artefact > build/out.o`);
    await mkdir(join(`${a.workspace}.agent`, "home", ".claude", "projects"), { recursive: true });
    await writeFile(join(`${a.workspace}.agent`, "sessions.json"), '{"claude":"session-1"}');
    await writeFile(
      join(`${a.workspace}.agent`, "home", ".claude", "projects", "session-1.jsonl"),
      '{"turn":1}\n',
    );
    const statusBefore = await a.sh("git status --porcelain --untracked-files=all");
    const headBefore = await a.sh("git rev-parse HEAD && git symbolic-ref HEAD");

    const saved = await a.checkpoints.save();
    expect(saved).toMatchObject({ saved: true, ref: expect.stringMatching(/^[0-9a-f]{40}$/) });
    if (!saved.saved) return;
    // The agent's index, branch and HEAD are as they were.
    expect(await a.sh("git status --porcelain --untracked-files=all")).toBe(statusBefore);
    expect(await a.sh("git rev-parse HEAD && git symbolic-ref HEAD")).toBe(headBefore);
    // On the remote: the hidden ref, no new branch, nothing a pull request could show.
    const bare = remotes.path(REPO);
    expect(ls(bare, "refs/dispatch/")).toBe(`refs/dispatch/checkpoints/${run.id} ${saved.ref}`);
    expect(remotes.branches(REPO)).toEqual(["main"]);
    expect(server.authorizations.length).toBeGreaterThan(0);

    await moveRun(run, "worker-b");
    const b = await worker("worker-b", run, { repository: true });
    expect(await b.checkpoints.restore()).toMatchObject({ restored: true, execution: 1, ref: saved.ref });

    // Uncommitted is uncommitted again (staging aside: what was staged is a change, not staged).
    const lines = (status: string) => status.split("\n").sort();
    expect(lines(await b.sh("git status --porcelain --untracked-files=all"))).toEqual(
      lines(statusBefore.replace("A  staged.txt", "?? staged.txt")),
    );
    expect(await b.sh("git log -1 --format=%s && git symbolic-ref HEAD")).toBe(
      `local commit\nrefs/heads/dispatch/${run.id}`,
    );
    expect(await readFile(join(b.workspace, "src", "edit.txt"), "utf8")).toBe("after\n");
    expect(await readFile(join(b.workspace, "new", "deeper", "file.txt"), "utf8")).toBe("untracked\n");
    expect(existsSync(join(b.workspace, "src", "gone.txt"))).toBe(false);
    expect((await lstat(join(b.workspace, "run.sh"))).mode & 0o777).toBe(0o755);
    expect(await readlink(join(b.workspace, "link-to-keep"))).toBe("src/keep.txt");
    // What .gitignore ignores is not part of a repository's checkpoint.
    expect(existsSync(join(b.workspace, "build"))).toBe(false);
    expect(await readFile(join(`${b.workspace}.agent`, "sessions.json"), "utf8")).toBe(
      '{"claude":"session-1"}',
    );
    expect(
      await readFile(join(`${b.workspace}.agent`, "home", ".claude", "projects", "session-1.jsonl"), "utf8"),
    ).toBe('{"turn":1}\n');

    // The stale worker can neither record a checkpoint nor move the ref; the new one can, incrementally.
    expect(await a.checkpoints.save()).toEqual({
      saved: false,
      reason: "the run is no longer this worker's",
    });
    expect(ls(bare, "refs/dispatch/")).toBe(`refs/dispatch/checkpoints/${run.id} ${saved.ref}`);
    // Were the ref moved anyway (a push that slipped past the fence, a record lost), the worker holding the
    // run puts its own checkpoint there.
    git(["--git-dir", bare, "update-ref", `refs/dispatch/checkpoints/${run.id}`, "refs/heads/main"]);
    await b.sh("echo again > src/edit.txt");
    const next = await b.checkpoints.save();
    expect(next).toMatchObject({ saved: true });
    if (!next.saved) return;
    expect(next.ref).not.toBe(saved.ref);
    expect(git(["--git-dir", bare, "rev-parse", `${next.ref}^2`])).toBe(saved.ref);
    expect(await store.loadCheckpoint(run.id)).toMatchObject({ workerId: "worker-b", refSha: next.ref });
    // Nothing changed since: the same commit stays.
    expect(await b.checkpoints.save()).toMatchObject({ saved: true, ref: next.ref });
    expect(await a.checkpoints.save()).toMatchObject({ saved: false });
    expect(ls(bare, "refs/dispatch/")).toBe(`refs/dispatch/checkpoints/${run.id} ${next.ref}`);
  });

  it("keeps a run without a repository in the store, within its disk quota", async () => {
    const run = await claimed();
    const a = await worker("worker-a", run, { quotaBytes: 4 * 2 ** 20 });
    await a.sh(`
      mkdir -p notes/empty-dir && echo draft > notes/draft.md && chmod 600 notes/draft.md
      ln -s /etc/hostname host-link`);
    const saved = await a.checkpoints.save();
    expect(saved).toMatchObject({ saved: true, bytes: expect.any(Number) });
    expect(saved.saved && saved.ref).toBeFalsy();

    // Over the quota: refused with why, and the checkpoint before it stays.
    await writeFile(join(a.workspace, "big.bin"), randomBytes(5 * 2 ** 20));
    const refused = await a.checkpoints.save();
    expect(refused).toMatchObject({
      saved: false,
      reason: expect.stringMatching(/over the 4 MB a checkpoint may hold/),
    });

    await moveRun(run, "worker-b");
    const b = await worker("worker-b", run);
    expect(await b.checkpoints.restore()).toMatchObject({ restored: true });
    expect(await readFile(join(b.workspace, "notes", "draft.md"), "utf8")).toBe("draft\n");
    expect((await lstat(join(b.workspace, "notes", "draft.md"))).mode & 0o777).toBe(0o600);
    expect((await lstat(join(b.workspace, "notes", "empty-dir"))).isDirectory()).toBe(true);
    expect(await readlink(join(b.workspace, "host-link"))).toBe("/etc/hostname");
    expect(existsSync(join(b.workspace, "big.bin"))).toBe(false);
  });

  /** Until nothing under the workspace changed for long enough that an unchanged listing can be trusted. */
  const settled = async (workspace: string) => {
    const real = await realpath(workspace);
    await waitFor(
      async () =>
        (await listTree(dirname(real), [basename(real), `${basename(real)}.agent`])).settled || undefined,
      { timeoutMs: 15_000, what: "the workspace to settle" },
    );
  };

  it("writes nothing while nothing changed, then saves the next change, which another worker restores", async () => {
    const run = await claimed();
    const a = await worker("worker-a", run);
    await a.sh("mkdir -p src && echo one > src/a.txt && echo two > src/b.txt");
    await settled(a.workspace);
    expect(await a.checkpoints.save()).toMatchObject({ saved: true });
    const first = await store.loadCheckpoint(run.id);
    expect(await a.checkpoints.save()).toMatchObject({ saved: true, unchanged: true, bytes: 0 });
    expect(await store.loadCheckpoint(run.id)).toEqual(first);

    // A change of the same size within the same second, a deletion, a new empty directory: all seen.
    await a.sh("echo uno > src/a.txt && rm src/b.txt && mkdir empty");
    const changed = await a.checkpoints.save();
    expect(changed).toMatchObject({ saved: true });
    expect(changed.saved && changed.unchanged).toBeFalsy();

    await moveRun(run, "worker-b");
    const b = await worker("worker-b", run);
    expect(await b.checkpoints.restore()).toMatchObject({ restored: true });
    expect(await readFile(join(b.workspace, "src", "a.txt"), "utf8")).toBe("uno\n");
    expect(existsSync(join(b.workspace, "src", "b.txt"))).toBe(false);
    expect((await lstat(join(b.workspace, "empty"))).isDirectory()).toBe(true);
  });

  it("neither commits in the sandbox nor pushes a repository's checkpoint while nothing changed", async () => {
    const run = await claimed();
    const a = await worker("worker-a", run, { repository: true });
    await a.sh("echo edited > src/edit.txt");
    await settled(a.workspace);
    const saved = await a.checkpoints.save();
    expect(saved).toMatchObject({ saved: true, ref: expect.stringMatching(/^[0-9a-f]{40}$/) });
    const asked = server.authorizations.length;
    expect(await a.checkpoints.save()).toMatchObject({
      saved: true,
      unchanged: true,
      ref: saved.saved && saved.ref,
    });
    expect(server.authorizations.length).toBe(asked);

    await a.sh("echo again > src/edit.txt");
    const next = await a.checkpoints.save();
    expect(next).toMatchObject({ saved: true, ref: expect.stringMatching(/^[0-9a-f]{40}$/) });
    expect(next.saved && next.ref).not.toBe(saved.saved && saved.ref);
    await moveRun(run, "worker-b");
    const b = await worker("worker-b", run, { repository: true });
    expect(await b.checkpoints.restore()).toMatchObject({ restored: true, ref: next.saved && next.ref });
    expect(await readFile(join(b.workspace, "src", "edit.txt"), "utf8")).toBe("again\n");
  });

  it("asks the store one boolean before a checkpoint, and a stale worker snapshots nothing", async () => {
    const run = await claimed();
    const a = await worker("worker-a", run);
    const asked: string[] = [];
    const counted = new RunCheckpoints({
      store: {
        holdsRun: (...args) => {
          asked.push("holdsRun");
          return store.holdsRun(...args);
        },
        saveCheckpoint: (...args) => {
          asked.push("saveCheckpoint");
          return store.saveCheckpoint(...args);
        },
        loadCheckpoint: (...args) => {
          asked.push("loadCheckpoint");
          return store.loadCheckpoint(...args);
        },
        deleteCheckpoint: (...args) => {
          asked.push("deleteCheckpoint");
          return store.deleteCheckpoint(...args);
        },
      },
      workerId: "worker-a",
      run,
      workspace: a.workspace,
      log,
    });
    await a.sh("echo draft > notes.md");
    expect(await counted.save()).toMatchObject({ saved: true });
    expect(asked).toEqual(["holdsRun", "saveCheckpoint"]);

    // The execution ended while the step's checkpoint was under way: given up quietly, nothing written.
    await a.sh("echo more >> notes.md");
    const ended = new AbortController();
    ended.abort();
    expect(await counted.save(ended.signal)).toEqual({ saved: false, reason: "the execution ended" });
    expect(asked).toEqual(["holdsRun", "saveCheckpoint", "holdsRun"]);

    // Moved to another worker: the stale one snapshots nothing, the checkpoint is kept.
    const before = await store.loadCheckpoint(run.id);
    await moveRun(run, "worker-b");
    expect(await counted.save()).toEqual({ saved: false, reason: "the run is no longer this worker's" });
    expect(asked).toEqual(["holdsRun", "saveCheckpoint", "holdsRun", "holdsRun"]);
    expect(await store.loadCheckpoint(run.id)).toEqual(before);
  });

  it("restores nothing for a run without a checkpoint", async () => {
    const run = await claimed();
    const a = await worker("worker-a", run);
    expect(await a.checkpoints.restore()).toEqual({ restored: false });
  });
});
