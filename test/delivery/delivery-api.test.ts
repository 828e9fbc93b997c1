import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";

/**
 * Runs created through the API that name a repository: the scripted harness edits files, Dispatch
 * commits, pushes a dispatch/… branch to a local bare repository and opens a pull request on the fake
 * GitHub, whose REST calls and git data are checked as GitHub would see them.
 */
describe("delivery of API runs", () => {
  let remotes: GitRemotes;
  let github: FakeGitHub;
  let t: TestDispatch;

  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create("acme/app", { "README.md": "# app\n", "src/login.ts": "export const retries = 1;\n" });
    remotes.create("acme/plain", { "a.txt": "a\n" });
    github = await new FakeGitHub().start();
    github.gitRoot = remotes.root;
    t = await startTestDispatch(
      {
        ...deliveryEnv(remotes, github),
      },
      {
        surfaceOptions: { github: { throttle: false } },
        notifier: { tickMs: 50, editIntervalMs: { github: 200 }, outbox: { pollMs: 50 } },
      },
    );
  });
  /** Dispatch's tracking comment on a pull request (the run's card there). */
  const onPrTracking = (number: number) =>
    [...github.comments.values()].find(
      (c) => c.issue_number === number && c.body.startsWith("<!-- dispatch:run="),
    );

  afterAll(async () => {
    await t?.stop();
    await github?.stop();
    remotes?.remove();
  });

  it("commits, pushes a dispatch/ branch and opens a draft pull request with the artifacts", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", {
      title: "Fix the flaky login test",
      prompt: "Raise the retries\n$ sed -i 's/retries = 1/retries = 3/' src/login.ts\n$ echo new > notes.txt",
      config: { repository: "acme/app" },
    });
    expect(created.status).toBe(200);
    const run = await waitForState(t, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.status_message?.message).toMatch(
      /^PR #\d+ opened: https:\/\/github.com\/acme\/app\/pull\/\d+ \(\+2 −1 in 2 files\)$/,
    );
    expect(run.state).toBe("SUCCEEDED");
    const branch = run.agent_config.branch as string;
    expect(branch).toMatch(/^dispatch\/[0-9a-f]{8}-fix-the-flaky-login-test$/);
    expect(run.agent_config).toMatchObject({
      repository: "acme/app",
      base_branch: "main",
      delivery: "pull_request",
    });

    expect(remotes.branches("acme/app")).toContain(branch);
    expect(remotes.show("acme/app", branch, "src/login.ts")).toBe("export const retries = 3;\n");
    expect(remotes.log("acme/app", branch)).toEqual(["Fix the flaky login test", "seed"]);
    expect(remotes.message("acme/app", branch)).toContain(`Run ${run.session_link}`);

    const pr = github.pulls.find((p) => p.head === branch)!;
    expect(pr).toMatchObject({
      repo: "acme/app",
      base: "main",
      draft: true,
      title: "Fix the flaky login test",
    });
    expect(pr.body).toContain(run.session_link);
    expect(pr.body).toContain("Requested by");

    const prArtifact = run.artifacts.find(
      (a: { artifact_type: string }) => a.artifact_type === "PULL_REQUEST",
    );
    expect(prArtifact.data).toMatchObject({
      url: pr.html_url,
      branch,
      number: pr.number,
      repository: "acme/app",
      base: "main",
    });
    const file = run.artifacts.find((a: { artifact_type: string }) => a.artifact_type === "FILE");
    expect(file.data).toMatchObject({
      filename: "changes.patch",
      mime_type: "text/x-diff",
      description: "+2 −1 in 2 files",
    });
  });

  it("pushes a follow-up's work as a second commit on the same branch and updates the same pull request", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", {
      title: "Add a changelog",
      prompt: "$ echo '# Changes' > CHANGELOG.md",
      config: { repository: "acme/app" },
    });
    const first = await waitForState(t, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(first.status_message?.message).toMatch(/^PR #\d+ opened/);
    const branch = first.agent_config.branch as string;
    const pr = github.pulls.find((p) => p.head === branch)!;

    const followup = await t.api("POST", `/api/v1/agent/runs/${first.run_id}/followups`, {
      message: "Mention the fix too\n$ echo '- fixed login' >> CHANGELOG.md",
    });
    expect(followup.status).toBe(200);
    const second = await waitFor(
      async () => {
        const r = await t.api("GET", `/api/v1/agent/runs/${first.run_id}`);
        return r.body.state === "SUCCEEDED" && r.body.status_message?.message?.includes("updated")
          ? r.body
          : undefined;
      },
      { timeoutMs: 30_000, what: "the follow-up to be delivered" },
    );
    expect(second.status_message.message).toMatch(new RegExp(`^PR #${pr.number} updated: `));
    expect(remotes.log("acme/app", branch)).toEqual(["Add a changelog", "Add a changelog", "seed"]);
    expect(remotes.show("acme/app", branch, "CHANGELOG.md")).toBe("# Changes\n- fixed login\n");
    expect(github.pulls.filter((p) => p.head === branch)).toHaveLength(1);
    const onPr = [...github.comments.values()].filter((c) => c.issue_number === pr.number);
    const pushed = onPr.filter((c) => c.body.startsWith("Follow-up pushed"));
    expect(pushed.map((c) => c.body)).toEqual([
      expect.stringMatching(/^Follow-up pushed: [0-9a-f]{12} — Mention the fix too/),
    ]);
    // The pull request became a thread of the API run: its tracking comment follows the run there.
    await waitFor(() => onPrTracking(pr.number)?.body.includes("updated"), {
      what: "the PR's tracking comment",
    });
    const prArtifacts = second.artifacts.filter(
      (a: { artifact_type: string }) => a.artifact_type === "PULL_REQUEST",
    );
    expect(prArtifacts).toHaveLength(1);
    expect(prArtifacts[0].data.updated_at).toBeDefined();
    const patches = second.artifacts.filter((a: { artifact_type: string }) => a.artifact_type === "FILE");
    expect(patches).toHaveLength(2);
  });

  it("succeeds with 'No changes' and opens no pull request when nothing changed", async () => {
    const before = github.pulls.length;
    const created = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "Only look around\n$ cat README.md",
      config: { repository: "acme/app" },
    });
    const run = await waitForState(t, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state).toBe("SUCCEEDED");
    expect(run.status_message?.message).toBe("No changes");
    expect(github.pulls.length).toBe(before);
    expect(remotes.branches("acme/app")).not.toContain(run.agent_config.branch);
  });

  it("two runs with the same title made at once each get a branch and a pull request of their own", async () => {
    const create = (n: number) =>
      t.api("POST", "/api/v1/agent/runs", {
        title: "Same title twice",
        prompt: `$ echo ${n} > twin-${n}.txt`,
        config: { repository: "acme/app" },
      });
    const [a, b] = await Promise.all([create(1), create(2)]);
    const runs = await Promise.all(
      [a, b].map((c) => waitForState(t, c.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000)),
    );
    expect(runs.map((r) => r.state)).toEqual(["SUCCEEDED", "SUCCEEDED"]);
    const [first, second] = runs.map((r) => r.agent_config.branch as string);
    expect(first).not.toBe(second);
    expect(github.pulls.filter((p) => p.head === first || p.head === second)).toHaveLength(2);
  });

  it("fails with delivery_failed and keeps the patch when the push is refused", async () => {
    remotes.protect("acme/plain", "dispatch/*", "error: GH006: Protected branch update failed");
    const created = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "$ echo b > b.txt",
      config: { repository: "acme/plain", delivery: "branch" },
    });
    const run = await waitForState(t, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state).toBe("FAILED");
    expect(run.status_message).toMatchObject({
      error_code: "resource_unavailable",
      reason: "delivery_failed",
    });
    expect(run.status_message.message).toMatch(
      /^Push to dispatch\/\S+ refused: .*pre-receive hook declined.*Protected branch/,
    );
    expect(run.artifacts.map((a: { artifact_type: string }) => a.artifact_type)).toEqual(["FILE"]);
  });

  it("opens no pull request when the run is cancelled while its branch is being pushed", async () => {
    remotes.create("acme/held", { "a.txt": "a\n" });
    const held = remotes.holdPushes("acme/held");
    const created = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "$ echo b > b.txt",
      config: { repository: "acme/held" },
    });
    const id = created.body.run_id as string;
    await waitFor(() => held.started(), { timeoutMs: 30_000, what: "the push to be under way" });
    expect((await t.api("POST", `/api/v1/agent/runs/${id}/cancel`)).status).toBe(200);
    await waitForState(t, id, ["CANCELLED"]);
    held.release();
    const events = await waitFor(
      async () => {
        const page = await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`);
        const list = page.body.events as Array<{ type: string; data: { message?: string } }>;
        return list.some((e) => e.type === "log" && e.data.message?.startsWith("Changes kept as a patch"))
          ? list
          : undefined;
      },
      { timeoutMs: 30_000, what: "delivery to end after the cancel" },
    );
    // The push that had started completed; nothing was opened after the cancel.
    expect(events.some((e) => e.type === "log" && e.data.message?.startsWith("Pushed "))).toBe(true);
    const run = (await t.api("GET", `/api/v1/agent/runs/${id}`)).body;
    expect(run.state).toBe("CANCELLED");
    expect(remotes.branches("acme/held")).toContain(run.agent_config.branch);
    expect(github.pulls.filter((p) => p.repo === "acme/held")).toEqual([]);
    expect(run.artifacts.map((a: { artifact_type: string }) => a.artifact_type)).toEqual(["FILE"]);
  });

  it("refuses at create what cannot be delivered", async () => {
    const bad = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "x",
      config: { repository: "not a repo" },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/config.repository/);
    const url = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "x",
      config: { repository: "https://user:pw@example.com/a/b.git" },
    });
    expect(url.status).toBe(400);
    expect(url.body.detail).toMatch(/credentials/);
    const branch = await t.api("POST", "/api/v1/agent/runs", { prompt: "x", config: { branch: "x" } });
    expect(branch.status).toBe(400);
  });
});
