import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliFor } from "../support/cli.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";

// `dispatch run --repo`, `dispatch get` and `dispatch diff` as a user runs them: child processes of
// src/main.ts against a live Dispatch that delivers to local bare repositories and a fake GitHub.

let remotes: GitRemotes;
let github: FakeGitHub;
let t: TestDispatch;

beforeAll(async () => {
  remotes = new GitRemotes();
  remotes.create("acme/app", { "README.md": "# app\n", "src/login.ts": "export const retries = 1;\n" });
  remotes.branch("acme/app", "develop", { "src/login.ts": "export const retries = 2;\n" });
  github = await new FakeGitHub().start();
  github.gitRoot = remotes.root;
  t = await startTestDispatch({
    ...deliveryEnv(remotes, github),
  });
});
afterAll(async () => {
  await t?.stop();
  await github?.stop();
  remotes?.remove();
});

const dispatch = cliFor(() => t);

const NO_STACK = /^\s+at /m;

describe("dispatch run --repo, get and diff", () => {
  it("delivers to owner/repo@base, shows the pull request, and prints a patch that applies to the base", async () => {
    const created = await dispatch([
      "run",
      "$ sed -i 's/retries = 2/retries = 5/' src/login.ts",
      "--title",
      "More retries",
      "--repo",
      "acme/app@develop",
    ]);
    expect(created.stderr).not.toMatch(NO_STACK);
    expect(created.code).toBe(0);
    const runId = created.stdout.trim();
    const run = await waitForState(t, runId, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state).toBe("SUCCEEDED");
    expect(run.agent_config).toMatchObject({ repository: "acme/app", base_branch: "develop" });
    const pull = github.pulls.find((p) => p.head === run.agent_config.branch)!;
    expect(pull.base).toBe("develop");

    const shown = await dispatch(["get", runId]);
    expect(shown.code).toBe(0);
    const line = (key: string) =>
      shown.stdout
        .split("\n")
        .find((l) => l.startsWith(`${key} `))
        ?.slice(key.length)
        .trim();
    expect(line("repository")).toBe("acme/app@develop");
    expect(line("branch")).toBe(run.agent_config.branch);
    expect(line("pull request")).toBe(pull.html_url);
    expect(line("delivery")).toBe(`PR #${pull.number} opened · +1 −1 in 1 file`);
    expect(line("diff")).toBe(`+1 −1 in 1 file (dispatch diff ${runId})`);

    const diff = await dispatch(["diff", runId]);
    expect(diff.code).toBe(0);
    expect(diff.stderr).toBe("");
    expect(diff.stdout).toContain("-export const retries = 2;\n+export const retries = 5;\n");
    const dir = mkdtempSync(join(tmpdir(), "dispatch-apply-"));
    try {
      execFileSync("git", ["clone", "--quiet", "--branch", "develop", remotes.path("acme/app"), dir]);
      execFileSync("git", ["-C", dir, "apply", "-"], { input: diff.stdout });
      expect(readFileSync(join(dir, "src/login.ts"), "utf8")).toBe("export const retries = 5;\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("says clearly why a run has no patch, exiting 1", async () => {
    const plain = await t.api("POST", "/api/v1/agent/runs", { prompt: "$ echo no repository" });
    await waitForState(t, plain.body.run_id, ["SUCCEEDED"], 30_000);
    const r = await dispatch(["diff", plain.body.run_id]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      `dispatch: run ${plain.body.run_id} has no patch: it names no repository (create runs with --repo owner/repo to have their changes delivered).\n`,
    );

    const unchanged = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "$ cat README.md",
      config: { repository: "acme/app" },
    });
    await waitForState(t, unchanged.body.run_id, ["SUCCEEDED"], 30_000);
    const none = await dispatch(["diff", unchanged.body.run_id]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/has no patch: it changed nothing\.\n$/);
    const shown = await dispatch(["get", unchanged.body.run_id]);
    expect(shown.stdout).toMatch(/^repository\s+acme\/app@main$/m);
    expect(shown.stdout).toMatch(/^delivery\s+No changes$/m);

    const missing = await dispatch(["diff", "no-such-run"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^dispatch: .*\(HTTP 404 resource_not_found\)\n$/);
    expect(missing.stderr).not.toMatch(NO_STACK);

    const usage = await dispatch(["diff"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("give the run id");
  });

  it("documents --repo and diff in the usage", async () => {
    const help = await dispatch(["--help"]);
    expect(help.stdout).toContain("--repo owner/repo[@base]");
    expect(help.stdout).toContain("dispatch diff <run id>");
    const runHelp = await dispatch(["diff", "--help"]);
    expect(runHelp.code).toBe(0);
    expect(runHelp.stdout).toContain("dispatch diff <run id>");
  });
});
