import { execFileSync } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkoutRepository, type DeliveryTarget } from "../../src/delivery/repository-checkout.ts";
import { createLogger } from "../../src/log.ts";
import { mirrorPath, prepareWorkspace } from "../../src/workspace/workspace.ts";
import { GitHttpServer } from "../support/git-http-server.ts";
import { GitRemotes } from "../support/git-remotes.ts";

/**
 * The worker's repository cache (docs/delivery.md, "How"): runs in the same repository check out from it,
 * over a real git server speaking smart HTTP. What a run sees is its repository as the remote has it now;
 * what the remote sees is one listing of branches per run while nothing changed.
 */

const log = createLogger("silent");
const TOKEN = "ghs_cachetoken0123456789abcdef";
const REPO = "acme/app";

function git(args: string[]): string {
  return execFileSync("git", args, {
    encoding: "utf8",
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
    },
  }).trim();
}

describe("the repository cache", () => {
  let remotes: GitRemotes;
  let server: GitHttpServer;
  let dataDir: string;
  let runs = 0;

  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create(REPO, { "README.md": "# app\n", "src/main.ts": "export const version = 1;\n" });
    server = await new GitHttpServer(remotes.root, TOKEN).start();
    dataDir = await mkdtemp(join(tmpdir(), "dispatch-repository-cache-"));
  });
  afterAll(async () => {
    await server.stop();
    remotes.remove();
    await rm(dataDir, { recursive: true, force: true });
  });

  /** A new run's checkout in the shared data directory: its workspace and the requests it made. */
  const checkout = async () => {
    const { path: workspace } = await prepareWorkspace(dataDir, `run-${++runs}`);
    const target: DeliveryTarget = {
      repository: REPO,
      remote: `${server.url}/${REPO}.git`,
      base: "main",
      branch: `dispatch/run-${runs}`,
      mode: "branch",
    };
    const before = server.authorizations.length;
    const result = await checkoutRepository({
      target,
      remotes: { allowedHosts: [], lookup: async () => [] },
      workspace,
      fresh: true,
      token: TOKEN,
      gitAuthor: { name: "Dispatch", email: "dispatch@example.com" },
      signal: new AbortController().signal,
      emit: async () => {},
      log,
      claimExistingBranch: async () => ({ kind: "new" }),
    });
    expect(result).toMatchObject({ ok: true, base: "main" });
    return { workspace, requests: server.authorizations.length - before };
  };

  it("fetches a repository once, then only lists its branches for each run, which sees it as the remote has it", async () => {
    const first = await checkout();
    const second = await checkout();
    const third = await checkout();
    expect(second.requests).toBeLessThan(first.requests);
    expect(third.requests).toBe(second.requests);
    for (const { workspace } of [first, second, third]) {
      expect(await readFile(join(workspace, "src", "main.ts"), "utf8")).toBe("export const version = 1;\n");
      expect(git(["-C", workspace, "status", "--porcelain"])).toBe("");
      git(["-C", workspace, "fsck", "--no-progress", "--connectivity-only"]);
      expect(git(["--git-dir", mirrorPath(workspace), "rev-parse", "refs/dispatch/delivered"])).toBe(
        git(["--git-dir", remotes.path(REPO), "rev-parse", "main"]),
      );
      // The agent's copy shares no file with the cache or the mirror: what it writes stays its own.
      const packs = join(workspace, ".git", "objects", "pack");
      for (const name of await readdir(packs)) expect((await stat(join(packs, name))).nlink).toBe(1);
    }

    // The remote moved on: the next run fetches what is new and starts from it.
    remotes.branch(REPO, "main", { "src/main.ts": "export const version = 2;\n" });
    const fourth = await checkout();
    expect(fourth.requests).toBeGreaterThan(second.requests);
    expect(await readFile(join(fourth.workspace, "src", "main.ts"), "utf8")).toBe(
      "export const version = 2;\n",
    );
    git(["-C", fourth.workspace, "fsck", "--no-progress", "--connectivity-only"]);
  });
});
