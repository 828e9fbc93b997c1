import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

/**
 * Local bare repositories standing in for a git server: `root` is what GITHUB_SERVER_URL points at
 * (`file://<root>`), and `owner/repo` lives at `<root>/owner/repo.git`. Seeded through a scratch clone;
 * read back with plain git.
 */
export class GitRemotes {
  readonly root = mkdtempSync(join(tmpdir(), "dispatch-remotes-"));
  readonly serverUrl = `file://${this.root}`;

  /** A repository whose `main` (or `branch`) holds `files`, one commit. */
  create(repo: string, files: Record<string, string>, branch = "main"): string {
    const bare = this.path(repo);
    mkdirSync(dirname(bare), { recursive: true });
    git(["init", "--quiet", "--bare", `--initial-branch=${branch}`, bare]);
    const scratch = mkdtempSync(join(tmpdir(), "dispatch-seed-"));
    try {
      git(["init", "--quiet", `--initial-branch=${branch}`, scratch]);
      for (const [name, content] of Object.entries(files)) {
        mkdirSync(dirname(join(scratch, name)), { recursive: true });
        writeFileSync(join(scratch, name), content);
      }
      git(["-C", scratch, "add", "--all"]);
      git([
        "-C",
        scratch,
        "-c",
        "user.name=Seed",
        "-c",
        "user.email=seed@example.com",
        "commit",
        "--quiet",
        "-m",
        "seed",
      ]);
      git(["-C", scratch, "push", "--quiet", bare, `HEAD:refs/heads/${branch}`]);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    return bare;
  }

  /** Adds a branch `name` with one more commit on top of `from`, writing `files`. */
  branch(repo: string, name: string, files: Record<string, string>, from = "main"): void {
    const scratch = mkdtempSync(join(tmpdir(), "dispatch-seed-"));
    try {
      git(["clone", "--quiet", "--branch", from, this.path(repo), scratch]);
      for (const [file, content] of Object.entries(files)) {
        mkdirSync(dirname(join(scratch, file)), { recursive: true });
        writeFileSync(join(scratch, file), content);
      }
      git(["-C", scratch, "add", "--all"]);
      git([
        "-C",
        scratch,
        "-c",
        "user.name=Seed",
        "-c",
        "user.email=seed@example.com",
        "commit",
        "--quiet",
        "-m",
        `on ${name}`,
      ]);
      git(["-C", scratch, "push", "--quiet", "origin", `HEAD:refs/heads/${name}`]);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }

  /** A pre-receive hook that refuses every push to `branchPattern` (a shell glob) with `message`. */
  protect(repo: string, branchPattern: string, message: string): void {
    const hook = join(this.path(repo), "hooks", "pre-receive");
    writeFileSync(
      hook,
      `#!/bin/sh\nwhile read old new ref; do\n  case "$ref" in refs/heads/${branchPattern}) echo "${message}" >&2; exit 1;; esac\ndone\nexit 0\n`,
    );
    chmodSync(hook, 0o755);
  }

  /**
   * Holds every push of a branch to `repo` in its pre-receive hook until `release()`; `started()` says a
   * push is being held. For tests of what happens while a push is under way. A run's checkpoint (the hidden
   * ref refs/dispatch/checkpoints/<run>, pushed after each step) is not held.
   */
  holdPushes(repo: string): { started(): boolean; release(): void } {
    const gate = mkdtempSync(join(tmpdir(), "dispatch-gate-"));
    const hook = join(this.path(repo), "hooks", "pre-receive");
    writeFileSync(
      hook,
      `#!/bin/sh\ngrep -q ' refs/heads/' || exit 0\ntouch '${gate}/started'\nwhile [ ! -f '${gate}/release' ]; do sleep 0.05; done\nexit 0\n`,
    );
    chmodSync(hook, 0o755);
    return {
      started: () => existsSync(join(gate, "started")),
      release: () => writeFileSync(join(gate, "release"), ""),
    };
  }

  path(repo: string): string {
    return join(this.root, `${repo}.git`);
  }

  branches(repo: string): string[] {
    return git(["--git-dir", this.path(repo), "for-each-ref", "--format=%(refname:short)", "refs/heads/"])
      .split("\n")
      .filter(Boolean);
  }

  /** Commit subjects of `branch`, newest first. */
  log(repo: string, branch: string): string[] {
    return git(["--git-dir", this.path(repo), "log", "--format=%s", branch])
      .split("\n")
      .filter(Boolean);
  }

  /** The full message of `branch`'s tip. */
  message(repo: string, branch: string): string {
    return git(["--git-dir", this.path(repo), "log", "-1", "--format=%B", branch]);
  }

  show(repo: string, branch: string, file: string): string {
    return git(["--git-dir", this.path(repo), "show", `${branch}:${file}`]);
  }

  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

function git(args: string[]): string {
  return execFileSync("git", args, {
    encoding: "utf8",
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: tmpdir(),
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
    },
  });
}

/**
 * The variables that point Dispatch at `remotes` for git and at the fake GitHub for its REST API (token
 * mode), with file:// remotes allowed: what every delivery test starts Dispatch with.
 */
export function deliveryEnv(
  remotes: GitRemotes,
  github: { url: string; token: string },
): Record<string, string> {
  return {
    GITHUB_SERVER_URL: remotes.serverUrl,
    GITHUB_API_URL: github.url,
    GITHUB_TOKEN: github.token,
    GITHUB_WEBHOOK_SECRET: "webhook-secret-1",
    GITHUB_BOT_HANDLE: "dispatch",
    DISPATCH_ALLOW_FILE_REMOTES: "true",
  };
}
