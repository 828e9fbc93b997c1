import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type GitHubDispatch,
  HANDLE,
  startGitHubDispatch,
  uniqueIssue,
} from "../integrations/github/support.ts";
import { waitFor } from "../support/dispatch.ts";
import { Browser, csrfOf, runIdsOf, submitFirstForm } from "./browser.ts";

/**
 * The one access rule for GitHub sign-ins: a person signed in from GitHub sees the runs of the
 * repositories where they have `min_permission` and nothing of the others, whose runs they can neither
 * read nor steer — before, a writer of any one installed repository read every run of every repository.
 */
describe("a run's audience for a GitHub sign-in", () => {
  let g: GitHubDispatch;
  let ownRun: string;
  let privateRun: string;

  beforeAll(async () => {
    g = await startGitHubDispatch({ env: { DISPATCH_MAX_CONCURRENT_RUNS: "0" } });
    g.fake.permissions.set("octocat", "write");
    g.fake.repoPermissions.set("acme/private:octocat", "read"); // below min_permission (write)

    const issue = uniqueIssue();
    expect((await g.comment({ body: `@${HANDLE} $ echo in the open`, login: "octocat", issue })).status).toBe(
      202,
    );
    await g.settle();
    ownRun = (await waitFor(async () => (await g.runs()).find((r) => r.prompt.includes("in the open"))))
      .run_id;
    // A run on another repository of the installation (as its own issue comment would have made it).
    const created = await g.t.api("POST", "/api/v1/agent/runs", { prompt: "$ echo the private roadmap" });
    privateRun = created.body.run_id;
    await g.t.dispatch.store.bindThread({
      runId: privateRun,
      platform: "github",
      workspace: "acme/private",
      channel: "7",
      thread: null,
      triggerRef: null,
      requester: "hubot",
      createdAt: new Date().toISOString(),
    });
  });
  afterAll(() => g?.stop());

  /** Signs a browser in as `login` with `/login/github` and a `login <code>` comment. */
  const signIn = async (login: string): Promise<Browser> => {
    const browser = new Browser(g.t.url);
    const waiting = await browser.get("/login/github");
    const code = /data-sign-in-code="([A-Z0-9]{4}-[A-Z0-9]{4})"/.exec(waiting.html)![1]!;
    expect((await g.comment({ body: `@${HANDLE} login ${code}`, login, issue: uniqueIssue() })).status).toBe(
      202,
    );
    await g.settle();
    // The page names the account and asks to continue: the button signs in.
    const page = await submitFirstForm(browser, await browser.get("/login/github"));
    expect(page.status).toBe(303);
    return browser;
  };

  it("shows and lets them steer the runs of repositories they may write, and no other", async () => {
    const browser = await signIn("octocat");
    const home = await browser.get("/");
    expect(home.status).toBe(200);
    expect(runIdsOf(home)).toEqual([ownRun]);
    expect(home.html).not.toContain("private roadmap");

    const hidden = await browser.get(`/runs/${privateRun}`);
    expect(hidden.status).toBe(404);
    expect(hidden.html).not.toContain("private roadmap");
    expect((await browser.get(`/runs/${privateRun}/events`)).status).toBe(404);

    const own = await browser.get(`/runs/${ownRun}`);
    expect(own.status).toBe(200);
    expect((await browser.get(`/runs/${privateRun}/items`)).status).toBe(404);
    const csrf = csrfOf(own);
    const actions: Array<[string, Record<string, string>]> = [
      ["followup", { csrf, message: "$ echo steered without permission" }],
      ["cancel", { csrf }],
      ["retry", { csrf, retry_key: "0123456789abcdef0123456789abcdef" }],
    ];
    for (const [action, form] of actions) {
      expect((await browser.post(`/runs/${privateRun}/${action}`, form)).status, action).toBe(404);
    }
    expect((await g.t.api("GET", `/api/v1/agent/runs/${privateRun}`)).body.state).toBe("QUEUED");
    const events = await g.t.api("GET", `/api/v1/agent/runs/${privateRun}/events`);
    expect(JSON.stringify(events.body)).not.toContain("steered without permission");
    expect((await g.runs()).filter((r) => r.prompt.includes("private roadmap"))).toHaveLength(1);

    // Their own repository's run they steer.
    expect((await browser.post(`/runs/${ownRun}/cancel`, { csrf })).status).toBe(303);
    expect((await g.t.api("GET", `/api/v1/agent/runs/${ownRun}`)).body.state).toBe("CANCELLED");

    // What decided it was GitHub's answer for that repository.
    expect(
      g.fake.calls.some((c) => c.path.includes("/repos/acme/private/collaborators/octocat/permission")),
    ).toBe(true);
  });
});
