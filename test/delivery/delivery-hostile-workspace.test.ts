import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeBwrap } from "../../src/sandbox/bwrap-sandbox.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";

const bwrapProblem = await probeBwrap("/usr/bin/bwrap");

/**
 * An agent that plants git hooks, an fsmonitor command and a clean filter in its workspace's repository:
 * delivery commits inside the sandbox and works on Dispatch's own mirror, so none of them runs in
 * Dispatch's process (each would write a marker into a host directory the sandbox cannot see).
 */
describe.skipIf(bwrapProblem !== undefined)("delivery from a hostile workspace", () => {
  let remotes: GitRemotes;
  let github: FakeGitHub;
  let t: TestDispatch;
  const host = mkdtempSync(join(tmpdir(), "dispatch-host-"));

  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create("acme/app", { "README.md": "# app\n" });
    github = await new FakeGitHub().start();
    github.gitRoot = remotes.root;
    t = await startTestDispatch(
      {
        ...deliveryEnv(remotes, github),
        DISPATCH_SANDBOX: "bwrap",
      },
      { surfaceOptions: { github: { throttle: false } } },
    );
  });
  afterAll(async () => {
    await t?.stop();
    await github?.stop();
    remotes?.remove();
    rmSync(host, { recursive: true, force: true });
  });

  it("runs none of the workspace's hooks, fsmonitor or filters in Dispatch's process", async () => {
    const mark = (name: string) => `touch ${join(host, name)}`;
    const prompt = [
      `$ printf '#!/bin/sh\\n${mark("pre-commit")}\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`,
      `$ printf '#!/bin/sh\\n${mark("pre-push")}\\n' > .git/hooks/pre-push && chmod +x .git/hooks/pre-push`,
      `$ git config core.fsmonitor '${mark("fsmonitor")}'`,
      `$ git config filter.evil.clean '${mark("filter")}; cat'`,
      `$ git config core.sshCommand '${mark("ssh")}'`,
      "$ echo '* filter=evil' > .gitattributes",
      "$ echo changed > README.md",
    ].join("\n");
    const created = await t.api("POST", "/api/v1/agent/runs", { prompt, config: { repository: "acme/app" } });
    const run = await waitForState(t, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.status_message?.message).toMatch(/^PR #\d+ opened/);
    expect(remotes.show("acme/app", run.agent_config.branch, "README.md")).toBe("changed\n");
    for (const marker of ["pre-commit", "pre-push", "fsmonitor", "filter", "ssh"]) {
      expect(existsSync(join(host, marker)), marker).toBe(false);
    }
  });
});
