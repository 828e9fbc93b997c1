import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { type GitHubDispatch, HANDLE, startGitHubDispatch, uniqueIssue } from "./support.ts";

const MARKER = /<!-- dispatch:run=([A-Za-z0-9_-]+) -->/;

// biome-ignore lint/suspicious/noExplicitAny: API responses are asserted field by field
type Json = Record<string, any>;

/**
 * Runs started from GitHub comments work in the triggering repository (docs/delivery.md): signed
 * issue_comment webhooks → Dispatch → the scripted harness edits files → Dispatch commits and pushes
 * over smart HTTP (git's own http-backend behind the fake's token) to the bare repository the webhook
 * examples name (Codertocat/Hello-World, default branch master) and opens or updates pull requests on
 * the fake GitHub; the tracking comment shows where the work went.
 */
describe("GitHub-triggered runs deliver to the triggering repository", () => {
  let g: GitHubDispatch;
  beforeAll(async () => {
    g = await startGitHubDispatch({ gitOverHttp: true });
    g.fake.permissions.set("octocat", "write");
  });
  afterAll(() => g?.stop());

  async function runOn(issue: number): Promise<Json> {
    const binding = await waitFor(
      () =>
        g.t.dispatch.store.findLatestBinding({
          platform: "github",
          workspace: g.repo,
          channel: String(issue),
          thread: null,
        }),
      { what: `a run bound to #${issue}` },
    );
    return (await g.t.api("GET", `/api/v1/agent/runs/${binding.runId}`)).body;
  }

  const finished = (runId: string) =>
    waitForState(g.t, runId, ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"], 30_000);

  /** The run's tracking comment once it contains `text`. */
  const trackingWith = (issue: number, text: string) =>
    waitFor(
      () => g.fake.botComments(g.repo, issue).find((c) => MARKER.test(c.body) && c.body.includes(text)),
      { what: `the tracking comment on #${issue} to say ${JSON.stringify(text)}`, timeoutMs: 15_000 },
    );

  const pullsOf = (branch: string) => g.fake.pulls.filter((p) => p.repo === g.repo && p.head === branch);

  describe("a comment on an issue, then a follow-up on it", () => {
    const issue = uniqueIssue();
    let branch: string;
    let runId: string;

    it("pushes a dispatch/ branch from the default branch and opens a PR that closes the issue; the tracking comment links it", async () => {
      await g.comment({
        issue,
        login: "octocat",
        issueTitle: "The fix is missing",
        body: `@${HANDLE} fix it\n$ echo fixed > fix.txt`,
      });
      const run = await finished((await runOn(issue)).run_id);
      runId = run.run_id;
      expect(run.status_message?.message).toMatch(/^PR #\d+ opened: /);
      expect(run.state).toBe("SUCCEEDED");
      expect(run.agent_config).toMatchObject({
        repository: g.repo,
        base_branch: "master",
        delivery: "pull_request",
      });
      branch = run.agent_config.branch;
      expect(branch).toMatch(/^dispatch\/[0-9a-f]{8}-/);

      // The branch is on the git server, one commit on top of master.
      expect(g.remotes.show(g.repo, branch, "fix.txt")).toBe("fixed\n");
      expect(g.remotes.log(g.repo, branch)).toEqual([`#${issue} The fix is missing`, "seed"]);
      expect(g.remotes.message(g.repo, branch)).toContain("Co-authored-by: octocat");
      expect(g.remotes.log(g.repo, "master")).toEqual(["seed"]);

      const [pr, ...more] = pullsOf(branch);
      expect(more).toEqual([]);
      expect(pr).toMatchObject({ base: "master", title: `#${issue} The fix is missing`, state: "open" });
      expect(pr!.body).toContain(`Closes #${issue}`);
      expect(pr!.body).toContain(run.session_link);

      const tracking = await trackingWith(issue, "✅ **Succeeded**");
      expect(tracking.body).toContain(
        `in \`${g.repo}@master\` · [PR #${pr!.number} opened](${pr!.html_url}) · +1 −0 in 1 file`,
      );
      const final = await waitFor(
        () => g.fake.botComments(g.repo, issue).find((c) => c.body.includes("<!-- dispatch:final")),
        { what: "the final comment" },
      );
      expect(final.body).toContain(`[PR #${pr!.number} opened](${pr!.html_url})`);
    });

    it("a follow-up comment pushes a second commit to the same branch and PR, comments on the PR; the tracking comment says updated", async () => {
      expect(runId).toBeDefined();
      const pr = pullsOf(branch)[0]!;
      await g.comment({ issue, login: "octocat", body: `@${HANDLE} say more\n$ echo more >> fix.txt` });
      const run = await waitFor(
        async () => {
          const r = (await g.t.api("GET", `/api/v1/agent/runs/${runId}`)).body as Json;
          const updated = r.artifacts.some(
            (a: Json) => a.artifact_type === "PULL_REQUEST" && typeof a.data.updated_at === "string",
          );
          return r.state === "SUCCEEDED" && updated ? r : undefined;
        },
        { what: "the follow-up to be delivered", timeoutMs: 30_000 },
      );
      expect(run.status_message?.message).toBe(`PR #${pr.number} updated: ${pr.html_url} (+2 −0 in 1 file)`);

      expect(g.remotes.log(g.repo, branch)).toHaveLength(3);
      expect(g.remotes.show(g.repo, branch, "fix.txt")).toBe("fixed\nmore\n");
      // The same pull request: no second one.
      expect(pullsOf(branch)).toHaveLength(1);
      expect(g.fake.pulls.filter((p) => p.body.includes(`Closes #${issue}`))).toHaveLength(1);

      const last = run.artifacts.findLast((a: Json) => a.artifact_type === "PULL_REQUEST");
      expect(last.data).toMatchObject({ number: pr.number, branch, repository: g.repo, base: "master" });
      const onPr = g.fake.issueComments(g.repo, pr.number);
      expect(
        onPr.filter((c) => !c.body.startsWith("<!-- dispatch")).map((c) => c.body.split("\n")[0]),
      ).toEqual([`Follow-up pushed: ${String(last.data.head_sha).slice(0, 12)} — say more`]);
      // The pull request is one of the run's threads: its own tracking comment follows the run there too.
      const onPrTracking = await trackingWith(pr.number, `[PR #${pr.number} updated]`);
      expect(onPrTracking.body).toContain(`PR #${pr.number} updated`);

      const tracking = await trackingWith(issue, `[PR #${pr.number} updated]`);
      expect(tracking.body).toContain(
        `in \`${g.repo}@master\` · [PR #${pr.number} updated](${pr.html_url}) · +2 −0 in 1 file`,
      );
      // One tracking comment for the run, edited in place.
      expect(g.fake.botComments(g.repo, issue).filter((c) => MARKER.test(c.body))).toHaveLength(1);
    });
  });

  it("a comment on a pull request of the same repository pushes onto the PR's head branch, no new PR", async () => {
    g.remotes.branch(g.repo, "feature/greeting", { "greeting.txt": "hi\n" }, "master");
    const pr = g.fake.openPull(g.repo, { head: "feature/greeting", base: "master", title: "Add a greeting" });
    const pulls = g.fake.pulls.length;
    const branches = g.remotes.branches(g.repo).sort();
    await g.comment({
      issue: pr.number,
      pullRequest: true,
      issueTitle: pr.title,
      login: "octocat",
      body: `@${HANDLE} shout it\n$ echo HI > greeting.txt`,
    });
    const run = await finished((await runOn(pr.number)).run_id);
    expect(run.status_message?.message).toBe(`PR #${pr.number} updated: ${pr.html_url} (+1 −0 in 1 file)`);
    expect(run.state).toBe("SUCCEEDED");
    expect(run.agent_config).toMatchObject({
      repository: g.repo,
      base_branch: "master",
      branch: "feature/greeting",
    });

    expect(g.remotes.log(g.repo, "feature/greeting")).toEqual([
      `#${pr.number} Add a greeting`,
      "on feature/greeting",
      "seed",
    ]);
    expect(g.remotes.show(g.repo, "feature/greeting", "greeting.txt")).toBe("HI\n");
    expect(g.remotes.branches(g.repo).sort()).toEqual(branches);
    expect(g.fake.pulls.length).toBe(pulls);
    const followUp = g.fake
      .issueComments(g.repo, pr.number)
      .find((c) => c.body.startsWith("Follow-up pushed:"));
    expect(followUp?.body).toContain(
      `Follow-up pushed: ${String(run.artifacts.findLast((a: Json) => a.artifact_type === "PULL_REQUEST").data.head_sha).slice(0, 12)} — `,
    );

    const tracking = await trackingWith(pr.number, "✅ **Succeeded**");
    expect(tracking.body).toContain(
      `in \`${g.repo}@master\` · [PR #${pr.number} updated](${pr.html_url}) · +1 −0 in 1 file`,
    );
  });

  it("a comment on a pull request from a fork delivers a new dispatch/ branch and its own PR against the fork PR's base", async () => {
    g.remotes.branch(g.repo, "release", { "CHANGELOG.md": "# 1.0\n" }, "master");
    const fork = g.fake.openPull(g.repo, {
      head: "patch-1",
      headRepo: "someone/Hello-World",
      base: "release",
      title: "Fix a typo",
    });
    await g.comment({
      issue: fork.number,
      pullRequest: true,
      issueTitle: fork.title,
      login: "octocat",
      body: `@${HANDLE} redo it here\n$ echo redone > typo.txt`,
    });
    const run = await finished((await runOn(fork.number)).run_id);
    expect(run.status_message?.message).toMatch(/^PR #\d+ opened: /);
    expect(run.state).toBe("SUCCEEDED");
    expect(run.agent_config).toMatchObject({ repository: g.repo, base_branch: "release" });
    const branch = run.agent_config.branch as string;
    expect(branch).toMatch(/^dispatch\//);
    expect(g.remotes.log(g.repo, branch)).toEqual([`#${fork.number} Fix a typo`, "on release", "seed"]);
    expect(g.remotes.branches(g.repo)).not.toContain("patch-1");

    const [own] = pullsOf(branch);
    expect(own).toMatchObject({ base: "release", headRepo: g.repo });
    expect(own!.body).toContain(`Follows up #${fork.number}`);
    await trackingWith(
      fork.number,
      `in \`${g.repo}@release\` · [PR #${own!.number} opened](${own!.html_url})`,
    );
  });

  it("a pull request GitHub cannot show gets a reply, and no run", async () => {
    const missing = uniqueIssue();
    await g.comment({ issue: missing, pullRequest: true, login: "octocat", body: `@${HANDLE} fix it` });
    const reply = await waitFor(() => g.fake.botComments(g.repo, missing)[0], { what: "a reply" });
    expect(reply.body).toContain(
      `@octocat Could not start the run: pull request #${missing} could not be read`,
    );
    await g.settle();
    expect(
      await g.t.dispatch.store.findLatestBinding({
        platform: "github",
        workspace: g.repo,
        channel: String(missing),
        thread: null,
      }),
    ).toBeFalsy();
  });

  it("the token reaches the git server only: not the transcript, the session page or the workspace's .git/config", async () => {
    const issue = uniqueIssue();
    await g.comment({
      issue,
      login: "octocat",
      body: `@${HANDLE} show me\n$ cat .git/config\n$ git remote -v\n$ env | sort\n$ echo seen > seen.txt`,
    });
    const run = await finished((await runOn(issue)).run_id);
    expect(run.state).toBe("SUCCEEDED");

    const basic = Buffer.from(`x-access-token:${g.fake.token}`).toString("base64");
    // git used the token: the server saw it on the fetch and on the push.
    expect(g.gitServer!.authorizations.filter((a) => a === `Basic ${basic}`).length).toBeGreaterThanOrEqual(
      2,
    );

    const events = await g.t.api("GET", `/api/v1/agent/runs/${run.run_id}/events?limit=1000`);
    expect(events.status).toBe(200);
    const transcript = JSON.stringify(events.body);
    // The commands ran and their output is there: the remote without credentials, the push.
    expect(transcript).toContain(`${g.gitServer!.url}/${g.repo}.git`);
    expect(transcript).toContain("Pushed");
    const page = await fetch(`${g.t.url}/sessions/${run.session_id}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const gitConfig = readFileSync(join(g.t.dataDir, "workspaces", run.run_id, ".git", "config"), "utf8");
    expect(gitConfig).toContain(`${g.gitServer!.url}/${g.repo}.git`);
    for (const secret of [g.fake.token, basic]) {
      expect(transcript).not.toContain(secret);
      expect(html).not.toContain(secret);
      expect(gitConfig).not.toContain(secret);
    }
    expect(gitConfig).not.toMatch(/extraheader|x-access-token/i);
  });
});
