import { afterEach, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { type GitHubDispatch, HANDLE, INSTALLATION_ID, startGitHubDispatch, uniqueIssue } from "./support.ts";

const MARKER = /<!-- dispatch:run=([A-Za-z0-9_-]+) -->/;

async function runOnIssue(g: GitHubDispatch, issue: number) {
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
  return (await g.runs()).find((r) => r.run_id === binding.runId)!;
}

describe("GitHub progress through the notifier", () => {
  let g: GitHubDispatch | undefined;
  afterEach(async () => {
    await g?.stop();
    g = undefined;
  });

  it("end to end: webhook → run through the real executor → one edited tracking comment, final comment, 🎉", async () => {
    g = await startGitHubDispatch();
    g.fake.permissions.set("octocat", "admin");
    const issue = uniqueIssue();
    const { payload } = await g.comment({
      issue,
      login: "octocat",
      body: `@${HANDLE} say hello\n$ echo hello-from-dispatch > hello.txt\n$ cat hello.txt`,
    });
    const run = await runOnIssue(g, issue);
    const done = await waitForState(g.t, run.run_id, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(done.state).toBe("SUCCEEDED");
    const final = await waitFor(
      () => g!.fake.botComments(g!.repo, issue).find((c) => c.body.includes("<!-- dispatch:final")),
      { what: "the final comment" },
    );
    expect(final.body).toContain(`@octocat ✅ **Succeeded** · #${issue}`);
    expect(final.body).toContain(`/sessions/${run.session_id}`);
    await waitFor(() => g!.fake.reactionsOn(payload.comment.id).includes("hooray"), { what: "🎉" });
    await g.settle();

    const comments = g.fake.botComments(g.repo, issue);
    // Exactly two comments: the tracking comment (edited in place, never one per step) and the final one.
    expect(comments).toHaveLength(2);
    const tracking = comments.find((c) => MARKER.test(c.body))!;
    expect(tracking.body).toContain(`<!-- dispatch:run=${run.run_id} -->`);
    expect(tracking.body).toContain("✅ **Succeeded**");
    expect(tracking.edits).toBeGreaterThanOrEqual(1);
    const posts = g.fake.succeeded("POST", new RegExp(`/issues/${issue}/comments$`));
    expect(posts).toHaveLength(2);
    const edits = g.fake.succeeded("PATCH", new RegExp(`/issues/comments/${tracking.id}$`));
    expect(edits.length).toBe(tracking.edits);
    // The tracking comment came before the final comment, and 👀 before everything.
    expect(posts[0]!.body.body).toMatch(MARKER);
    expect(g.fake.reactionsOn(payload.comment.id)).toEqual(["eyes", "hooray"]);
    // The run's transcript has what the scripted harness did.
    const events = await g.t.api("GET", `/api/v1/agent/runs/${run.run_id}/events?limit=500`);
    expect(JSON.stringify(events.body)).toContain("hello-from-dispatch");
  });

  it("a failed run: the tracking comment shows the status message, the final comment mentions the requester, 😕", async () => {
    g = await startGitHubDispatch();
    g.fake.permissions.set("octocat", "write");
    const issue = uniqueIssue();
    const { payload } = await g.comment({
      issue,
      login: "octocat",
      body: `@${HANDLE}\n$ echo boom >&2; exit 3`,
    });
    const run = await runOnIssue(g, issue);
    await waitForState(g.t, run.run_id, ["FAILED"]);
    const final = await waitFor(() =>
      g!.fake.botComments(g!.repo, issue).find((c) => c.body.includes("<!-- dispatch:final")),
    );
    expect(final.body).toContain("@octocat ❌ **Failed**");
    await waitFor(() => g!.fake.reactionsOn(payload.comment.id).includes("confused"), { what: "😕" });
    await g.settle();
    const tracking = g.fake.botComments(g.repo, issue).find((c) => MARKER.test(c.body))!;
    expect(tracking.body).toContain("❌ **Failed**");
    expect(tracking.body).toMatch(/\n> .+/); // the status message, quoted
  });

  it("a 403 secondary rate limit with retry-after: the tracking comment arrives later, once", async () => {
    // Octokit's throttling on, as in production: it must hand the 403 to the outbox, not wait inline.
    g = await startGitHubDispatch({ throttle: true });
    g.fake.permissions.set("octocat", "write");
    g.fake.failNext("POST /repos/*/*/issues/*/comments", { status: 403, retryAfter: 1, secondary: true });
    const issue = uniqueIssue();
    await g.comment({ issue, login: "octocat", body: `@${HANDLE} $ echo later` });
    const run = await runOnIssue(g, issue);
    await waitForState(g.t, run.run_id, ["SUCCEEDED"]);
    await waitFor(
      () => g!.fake.botComments(g!.repo, issue).find((c) => c.body.includes("<!-- dispatch:final")),
      { what: "the final comment", timeoutMs: 20_000 },
    );
    await g.settle();
    const attempts = g.fake.calls.filter(
      (c) => c.method === "POST" && c.path.endsWith(`/issues/${issue}/comments`),
    );
    expect(attempts.map((c) => c.status)).toEqual([403, 201, 201]);
    // Not before retry-after, and the tracking comment exists once.
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(950);
    expect(g.fake.botComments(g.repo, issue).filter((c) => MARKER.test(c.body))).toHaveLength(1);
    const outbox = await g.t.dispatch.store.listOutbox(run.run_id);
    expect(outbox.every((r) => r.state === "sent" || r.state === "superseded")).toBe(true);
  });

  it("as a GitHub App: a JWT buys an installation token for the webhook's installation", async () => {
    g = await startGitHubDispatch({ auth: "app" });
    g.fake.permissions.set("octocat", "write");
    const issue = uniqueIssue();
    await g.comment({ issue, login: "octocat", body: `@${HANDLE} $ echo as-an-app` });
    const run = await runOnIssue(g, issue);
    await waitForState(g.t, run.run_id, ["SUCCEEDED"]);
    await waitFor(() =>
      g!.fake.botComments(g!.repo, issue).find((c) => c.body.includes("<!-- dispatch:final")),
    );
    const tokens = g.fake.calls.filter(
      (c) => c.path === `/app/installations/${INSTALLATION_ID}/access_tokens`,
    );
    // One token for the installation, reused (auth-app renews it before its 1 h expiry).
    expect(tokens.map((c) => c.status)).toEqual([201]);
    expect(tokens[0]!.auth).toMatch(/^bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    const api = g.fake.calls.filter((c) => !c.path.startsWith("/app/"));
    expect(api.length).toBeGreaterThan(0);
    expect(api.every((c) => /^token ghs_/.test(c.auth ?? ""))).toBe(true);
    // Comments by the App itself ("dispatch[bot]", type Bot) are never triggers.
    expect(g.fake.botComments(g.repo, issue)[0]!.user.login).toBe(`${HANDLE}[bot]`);
  });

  it("edits are coalesced: at most one per edit window, none when nothing shown changed", async () => {
    const windowMs = 800;
    g = await startGitHubDispatch({ notifier: { editIntervalMs: { github: windowMs } } });
    g.fake.permissions.set("octocat", "write");
    const issue = uniqueIssue();
    await g.comment({ issue, login: "octocat", body: `@${HANDLE}\n$ echo a\n$ echo b\n$ echo c` });
    const run = await runOnIssue(g, issue);
    await waitForState(g.t, run.run_id, ["SUCCEEDED"]);
    await waitFor(() =>
      g!.fake.botComments(g!.repo, issue).find((c) => c.body.includes("<!-- dispatch:final")),
    );
    await g.settle();
    const tracking = g.fake.botComments(g.repo, issue).find((c) => MARKER.test(c.body))!;
    expect(tracking.body).toContain("✅ **Succeeded**");
    const writes = g.fake.calls.filter(
      (c) =>
        (c.method === "POST" && c.path.endsWith(`/issues/${issue}/comments`) && MARKER.test(c.body.body)) ||
        (c.method === "PATCH" && c.path.endsWith(`/issues/comments/${tracking.id}`)),
    );
    // The outbox scheduled the card writes at least the edit window apart (the schedule, not the wall clock
    // of a loaded machine, is what the notifier controls).
    const scheduled = (await g.t.dispatch.store.listOutbox(run.run_id))
      .filter((r) => r.kind === "card" && r.state === "sent")
      .map((r) => Date.parse(r.notBefore))
      .sort((a, b) => a - b);
    expect(scheduled).toHaveLength(writes.length);
    for (let i = 1; i < scheduled.length; i++) {
      expect(scheduled[i]! - scheduled[i - 1]!).toBeGreaterThanOrEqual(windowMs);
    }
    // Every write changed what the comment shows.
    const bodies = writes.map((c) => c.body.body.replace(/elapsed \S+/, ""));
    expect(new Set(bodies).size).toBe(bodies.length);
  });

  it("a run started through the API is never reported on GitHub", async () => {
    g = await startGitHubDispatch();
    g.fake.permissions.set("octocat", "write");
    // An API run (source API) is never reported anywhere.
    const created = await g.t.api("POST", "/api/v1/agent/runs", { prompt: "$ echo api" });
    expect(created.status).toBe(200);
    await waitForState(g.t, created.body.run_id, ["SUCCEEDED"]);
    await g.t.dispatch.notifier!.tick();
    await g.settle();
    expect(g.fake.calls).toEqual([]);
  });
});
