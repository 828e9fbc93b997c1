import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/dispatch.ts";
import { FakeGitHub } from "../../support/fake-github.ts";
import { type LinearDispatch, REPO, startLinearDispatch } from "./support.ts";

/**
 * A Linear run's work products: the pull request (on a loopback fake of GitHub) names the Linear issue the
 * way Linear's GitHub integration reads it, is linked on the issue, and the final response links it.
 */
describe("a pull request from a Linear run", { timeout: 120_000 }, () => {
  const github = new FakeGitHub();
  let l: LinearDispatch;
  beforeAll(async () => {
    await github.start();
    l = await startLinearDispatch({
      env: {
        GITHUB_TOKEN: github.token,
        GITHUB_API_URL: github.url,
        GITHUB_BOT_HANDLE: "dispatch",
        GITHUB_WEBHOOK_SECRET: "github-webhook-secret",
      },
    });
    github.gitRoot = l.remotes.root;
  });
  afterAll(async () => {
    await l?.stop();
    await github.stop();
  });

  it("says `Fixes ENG-n`, is linked on the issue and in the final response", async () => {
    const issue = l.fake.issue(l.team, { title: "Add a file", description: "$ echo fixed > fix.txt" });
    const event = l.fake.created(issue, l.ada);
    await l.deliver(event);
    const final = await l.activity(
      event.agentSession.id,
      (a) => a.content.type === "response",
      "the final",
      60_000,
    );
    const pr = github.pulls.find((p) => p.repo === REPO && p.title.includes(issue.identifier));
    expect(pr?.body).toContain(`Fixes ${issue.identifier}`);
    expect(String(final.content.body)).toContain(`[PR #${pr!.number}](${pr!.html_url})`);
    await waitFor(() => issue.links.find((link) => link.url === pr!.html_url), {
      what: "the PR linked on the issue",
    });
    expect(issue.links.find((link) => link.url === pr!.html_url)?.title).toContain(`PR #${pr!.number}`);
    const plan = l.fake.sessionUpdates.filter((u) => u.id === event.agentSession.id && u.input.plan).at(-1);
    expect(plan?.input.plan).toContainEqual({
      content: `Deliver to ${REPO}@main: PR #${pr!.number}`,
      status: "completed",
    });
  });
});
