import { createHmac, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { FakeSlack } from "../../support/fake-slack.ts";
import { BOT_USER, CHANNEL, nextTs, SIGNING_SECRET, TEAM } from "../slack/support.ts";
import { eventPayload, type GitHubDispatch, HANDLE, startGitHubDispatch, uniqueIssue } from "./support.ts";

// biome-ignore lint/suspicious/noExplicitAny: API responses are asserted field by field
type Json = Record<string, any>;

const MARKER = "<!-- dispatch:run=";

/**
 * One run from request to merge (docs/surfaces.md, one run, many threads): a run asked for in Slack opens
 * a pull request, which becomes one of its threads; review comments, a review asking for changes and red
 * CI on that pull request steer the same run (same id, commits on the same branch), every thread shows its
 * state, and merging the pull request ends the thread. Signed webhooks shaped like @octokit/webhooks-examples,
 * the loopback fake GitHub (pulls, review comments and replies, check runs, Actions jobs and logs) and
 * FakeSlack; the scripted agent runs the `$ ` lines it is given.
 */
describe("one run from request to merge", () => {
  let g: GitHubDispatch;
  let slack: FakeSlack;
  let runId: string;
  let branch: string;
  let pr: { number: number; html_url: string };

  beforeAll(async () => {
    slack = await new FakeSlack().start();
    slack.channelMembers.set(CHANNEL, ["U1"]);
    g = await startGitHubDispatch({
      settings: "github: {}\nslack: {}\n",
      env: { SLACK_BOT_TOKEN: slack.token, SLACK_SIGNING_SECRET: SIGNING_SECRET, SLACK_API_URL: slack.url },
    });
    g.fake.permissions.set("octocat", "write");
    g.fake.permissions.set("Codertocat", "write");
    g.fake.permissions.set("reader", "read");
  }, 60_000);
  afterAll(async () => {
    await g?.stop();
    await slack?.stop();
  });

  /** An app_mention as Slack delivers it, signed. */
  async function mention(text: string, ts = nextTs()): Promise<number> {
    const body = JSON.stringify({
      token: "unused",
      team_id: TEAM,
      api_app_id: "A0APP",
      type: "event_callback",
      event_id: `Ev${randomBytes(6).toString("hex").toUpperCase()}`,
      event_time: Math.floor(Date.now() / 1000),
      authorizations: [{ team_id: TEAM, user_id: BOT_USER, is_bot: true, is_enterprise_install: false }],
      event: { type: "app_mention", user: "U1", text, ts, channel: CHANNEL, team: TEAM, event_ts: ts },
    });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = `v0=${createHmac("sha256", SIGNING_SECRET).update(`v0:${timestamp}:${body}`).digest("hex")}`;
    const res = await fetch(`${g.t.url}/slack/events`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": signature,
      },
      body,
    });
    return res.status;
  }

  const run = async (): Promise<Json> => (await g.t.api("GET", `/api/v1/agent/runs/${runId}`)).body;
  const prArtifact = (r: Json) => r.artifacts.findLast((a: Json) => a.artifact_type === "PULL_REQUEST");
  const headSha = async () => String(prArtifact(await run()).data.head_sha);
  /** Waits for the run to finish an execution that pushed `sha`'s successor; returns the new head. */
  const nextHead = (after: string) =>
    waitFor(
      async () => {
        const r = await run();
        const sha = prArtifact(r)?.data.head_sha;
        return r.state === "SUCCEEDED" && sha && sha !== after ? String(sha) : undefined;
      },
      { what: `a push after ${after.slice(0, 7)}`, timeoutMs: 30_000 },
    );
  const followups = async (): Promise<string[]> => {
    const res = await g.t.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`);
    return (res.body.events as Json[])
      .filter((e) => e.type === "followup")
      .map((e) => String(e.data.message));
  };
  const prComments = () => g.fake.issueComments(g.repo, pr.number).map((c) => c.body);
  /** The Slack status card's latest text (posted, then edited). */
  const slackCardText = async () => {
    const card = await g.t.dispatch.store.getCardState(runId, `slack:${TEAM}:${CHANNEL}`);
    return card?.cardRef ? String(slack.message(CHANNEL, card.cardRef)?.text ?? "") : "";
  };

  const reviewComment = (body: string, o: { login?: string; id?: number } = {}) => {
    const p = eventPayload("pull_request_review_comment", "created");
    p.pull_request.number = pr.number;
    p.comment.id = o.id ?? 700_000_000 + Math.floor(Math.random() * 1_000_000);
    p.comment.body = body;
    p.comment.path = "one.txt";
    p.comment.line = 1;
    p.comment.user = { ...p.comment.user, login: o.login ?? "octocat", type: "User" };
    p.sender = { ...p.sender, login: o.login ?? "octocat", type: "User" };
    return p;
  };

  it("a run asked for in Slack opens a pull request, which becomes one of its threads", async () => {
    expect(await mention(`<@${BOT_USER}> in ${g.repo} add a file\n$ echo one > one.txt`)).toBe(200);
    const created = await waitFor(async () => (await g.runs()).find((r: Json) => r.source === "SLACK"), {
      what: "the Slack run",
    });
    runId = created.run_id;
    const done = await waitForState(g.t, runId, ["SUCCEEDED"], 30_000);
    expect(done.status_message.message).toMatch(/^PR #\d+ opened/);
    branch = done.agent_config.branch;
    const pull = g.fake.pulls.find((p) => p.head === branch)!;
    pr = { number: pull.number, html_url: pull.html_url };

    const threads = await g.t.dispatch.store.listThreadBindings(runId);
    expect(threads.map((t) => [t.platform, t.channel, Boolean(t.adopted)])).toEqual([
      ["slack", CHANNEL, false],
      ["github", String(pr.number), true],
    ]);
    // Both threads show the run: the Slack card and the pull request's tracking comment.
    await waitFor(async () => (await slackCardText()).includes(`PR #${pr.number} opened`), {
      what: "Slack card",
    });
    await waitFor(
      () => prComments().some((b) => b.startsWith(MARKER) && b.includes(`PR #${pr.number} opened`)),
      {
        what: "the PR's tracking comment",
      },
    );
  });

  it("an inline review comment is a follow-up on the same run: 👀, a reply in its review thread, a commit on the branch, both cards updated", async () => {
    const before = await headSha();
    const payload = reviewComment(`@${HANDLE} also say two\n$ echo two >> one.txt`);
    const delivery = `rc-${randomBytes(4).toString("hex")}`;
    expect((await g.deliver(payload, { event: "pull_request_review_comment", delivery })).status).toBe(202);
    // The same delivery again, and the same comment under another delivery id: nothing twice.
    expect((await g.deliver(payload, { event: "pull_request_review_comment", delivery })).status).toBe(200);
    expect((await g.deliver(payload, { event: "pull_request_review_comment" })).status).toBe(200);

    const after = await nextHead(before);
    expect((await run()).run_id).toBe(runId);
    expect(g.remotes.show(g.repo, branch, "one.txt")).toBe("one\ntwo\n");
    expect(g.fake.pulls.filter((p) => p.head === branch)).toHaveLength(1);
    expect(await followups()).toHaveLength(1);
    expect((await followups())[0]).toContain("A review comment on one.txt:1:");
    await g.settle();
    expect(g.fake.reactionsOn(payload.comment.id)).toEqual(["eyes"]);
    expect(g.fake.reviewReplies.filter((r) => r.inReplyTo === payload.comment.id).map((r) => r.body)).toEqual(
      [expect.stringContaining(`run \`${runId}\``)],
    );
    await waitFor(async () => (await slackCardText()).includes(`PR #${pr.number} updated`), {
      what: "the Slack card to say updated",
    });
    await waitFor(
      () => prComments().some((b) => b.startsWith(MARKER) && b.includes(`PR #${pr.number} updated`)),
      {
        what: "the PR's tracking comment to say updated",
      },
    );
    expect(after).not.toBe(before);
  });

  it("a review requesting changes is a follow-up carrying its inline comments; a reader's review steers nothing", async () => {
    const before = await headSha();
    const review = eventPayload("pull_request_review", "submitted");
    review.pull_request.number = pr.number;
    review.review = {
      ...review.review,
      id: 880_001,
      state: "changes_requested",
      body: "Please add a third line\n$ echo three >> one.txt",
      user: { ...review.review.user, login: "octocat", type: "User" },
    };
    review.sender = { ...review.sender, login: "octocat" };
    g.fake.reviewComments.set(880_001, [
      { id: 1, path: "one.txt", line: 2, body: "Two is not enough", user: "octocat" },
    ]);
    expect((await g.deliver(review, { event: "pull_request_review" })).status).toBe(202);
    await nextHead(before);
    const asked = (await followups()).at(-1)!;
    expect(asked).toContain("@octocat requested changes");
    expect(asked).toContain("- one.txt:2: Two is not enough");
    expect(g.remotes.show(g.repo, branch, "one.txt")).toBe("one\ntwo\nthree\n");

    const count = (await followups()).length;
    const fromReader = structuredClone(review);
    fromReader.review = { ...review.review, id: 880_002, user: { ...review.review.user, login: "reader" } };
    fromReader.sender = { ...review.sender, login: "reader" };
    expect((await g.deliver(fromReader, { event: "pull_request_review" })).status).toBe(202);
    await g.settle();
    expect(await followups()).toHaveLength(count);
  });

  it("red CI on the head commit is fixed automatically, at most 3 times; other commits do nothing", async () => {
    const checkSuite = (sha: string, suiteId: number) => {
      const p = eventPayload("check_suite", "completed");
      p.check_suite = {
        ...p.check_suite,
        id: suiteId,
        head_sha: sha,
        conclusion: "failure",
        pull_requests: [{ ...p.check_suite.pull_requests[0], number: pr.number }],
      };
      return p;
    };
    // Attempt 1: a check run with its own output (the scripted agent runs the `$ ` line it quotes).
    const sha1 = await headSha();
    g.fake.checkRuns.set(5001, [
      {
        id: 9001,
        name: "lint",
        conclusion: "failure",
        app: "octocoders-linter",
        output: { title: "1 problem", text: "one.txt: needs a fix\n$ echo fix-1 >> one.txt" },
      },
      { id: 9002, name: "build", conclusion: "success", app: "octocoders-linter" },
    ]);
    expect((await g.deliver(checkSuite(sha1, 5001), { event: "check_suite" })).status).toBe(202);
    await waitFor(async () => (await followups()).at(-1)?.includes("### lint (failure)"), {
      what: "the autofix follow-up",
      timeoutMs: 15_000,
    });
    const first = (await followups()).at(-1)!;
    expect(first).toContain("one.txt: needs a fix");
    expect(first).not.toContain("### build");
    await waitFor(() => prComments().includes("CI failed (lint): fixing, attempt 1 of 3."), {
      what: "attempt 1 said",
    });
    const sha2 = await nextHead(sha1);

    // The same failure again, and a failure on a commit the run did not push: nothing.
    const count = (await followups()).length;
    await g.deliver(checkSuite(sha1, 5001), { event: "check_suite" });
    await g.deliver(checkSuite("0123456789abcdef0123456789abcdef01234567", 5003), { event: "check_suite" });
    await g.settle();
    expect(await followups()).toHaveLength(count);

    // Attempt 2: a workflow run; the failing step's log says what failed.
    const workflow = eventPayload("workflow_run", "completed");
    workflow.workflow_run = {
      ...workflow.workflow_run,
      id: 6001,
      run_attempt: 1,
      head_sha: sha2,
      conclusion: "failure",
      pull_requests: [{ number: pr.number, head: { ref: branch, sha: sha2 }, base: { ref: "master" } }],
    };
    g.fake.workflowJobs.set(6001, [
      {
        id: 7001,
        name: "test (24.x)",
        conclusion: "failure",
        steps: [
          { number: 1, name: "Checkout", conclusion: "success" },
          { number: 2, name: "npm test", conclusion: "failure" },
        ],
      },
    ]);
    g.fake.jobLogs.set(
      7001,
      [
        "2026-11-26T10:00:00.0000000Z ##[group]Run npm test",
        "2026-11-26T10:00:01.0000000Z FAIL one.test.js: expected a fix",
        "2026-11-26T10:00:01.1000000Z $ echo fix-2 >> one.txt",
        "2026-11-26T10:00:02.0000000Z ##[error]Process completed with exit code 1.",
      ].join("\n"),
    );
    await g.deliver(workflow, { event: "workflow_run" });
    await waitFor(() => prComments().includes("CI failed (test (24.x)): fixing, attempt 2 of 3."), {
      what: "attempt 2 said",
    });
    const second = (await followups()).at(-1)!;
    expect(second).toContain('Step "npm test" failed');
    expect(second).toContain("FAIL one.test.js: expected a fix");
    expect(second).not.toContain("2026-11-26T10:00:01");
    const sha3 = await nextHead(sha2);

    // Attempt 3, then the attempts are used up.
    g.fake.checkRuns.set(5004, [
      {
        id: 9004,
        name: "lint",
        conclusion: "failure",
        app: "octocoders-linter",
        output: { text: "$ echo fix-3 >> one.txt" },
      },
    ]);
    await g.deliver(checkSuite(sha3, 5004), { event: "check_suite" });
    const sha4 = await nextHead(sha3);
    expect(prComments()).toContain("CI failed (lint): fixing, attempt 3 of 3.");
    g.fake.checkRuns.set(5005, [{ id: 9005, name: "lint", conclusion: "failure", app: "octocoders-linter" }]);
    const before = (await followups()).length;
    await g.deliver(checkSuite(sha4, 5005), { event: "check_suite" });
    await waitFor(
      () => prComments().some((b) => b.includes("automatic fix attempts for this pull request are used up")),
      {
        what: "the attempts used up",
      },
    );
    await g.settle();
    expect(await followups()).toHaveLength(before);
    expect(g.remotes.show(g.repo, branch, "one.txt")).toBe("one\ntwo\nthree\nfix-1\nfix-2\nfix-3\n");
  });

  it("the pull request merged: its thread ends, every card says so, and later events on it do nothing", async () => {
    g.fake.pulls.find((p) => p.number === pr.number)!.state = "closed";
    const closed = eventPayload("pull_request", "closed");
    closed.number = pr.number;
    closed.pull_request = { ...closed.pull_request, number: pr.number, merged: true };
    expect((await g.deliver(closed, { event: "pull_request" })).status).toBe(202);
    await waitFor(
      async () =>
        (await g.t.dispatch.store.getThreadBinding(runId, `github:${g.repo}:${pr.number}`))?.ended ===
        "merged",
      {
        what: "the PR thread to end",
      },
    );
    await waitFor(async () => (await slackCardText()).includes(`PR #${pr.number} merged`), {
      what: "the Slack card to say merged",
    });
    // The API says so too, in the Warp Platform API's words.
    expect(prArtifact(await run()).data).toMatchObject({ status: "merged", state: "merged" });

    const count = (await followups()).length;
    const late = reviewComment(`@${HANDLE} one more thing\n$ echo late >> one.txt`);
    await g.deliver(late, { event: "pull_request_review_comment" });
    await g.comment({
      issue: pr.number,
      pullRequest: true,
      login: "octocat",
      body: `@${HANDLE} and another`,
    });
    await g.settle();
    expect(await followups()).toHaveLength(count);
    expect(g.fake.reviewReplies.find((r) => r.inReplyTo === late.comment.id)?.body).toContain("was merged");
    expect(prComments().some((b) => b.includes(`Pull request #${pr.number} was merged`))).toBe(true);
    expect((await run()).state).toBe("SUCCEEDED");
  });

  describe("more ways in: a label, an assignment", () => {
    it("labelling an issue starts one run from it; labelling it again while that run works starts none", async () => {
      const issue = uniqueIssue();
      // A run already working on the issue (asked in a comment).
      await g.comment({ issue, login: "octocat", body: `@${HANDLE} wait a moment\n$ sleep 3` });
      const busy = await waitFor(
        () =>
          g.t.dispatch.store.findLatestBinding({
            platform: "github",
            workspace: g.repo,
            channel: String(issue),
            thread: null,
          }),
        { what: "the comment's run" },
      );
      const labeled = eventPayload("issues", "labeled");
      labeled.issue = {
        ...labeled.issue,
        number: issue,
        title: "Add a label file",
        body: "Please add it.",
        html_url: `https://github.com/${g.repo}/issues/${issue}`,
      };
      labeled.label = { ...labeled.label, name: "Dispatch" };
      labeled.sender = { ...labeled.sender, login: "octocat" };
      expect((await g.deliver(labeled, { event: "issues" })).status).toBe(202);
      await g.settle();
      expect(
        g.fake
          .issueComments(g.repo, issue)
          .some((c) => c.body.includes(`Run \`${busy.runId}\` is already working`)),
      ).toBe(true);
      await waitForState(g.t, busy.runId, ["SUCCEEDED"], 30_000);

      // Now it is free: the label starts a run, once however often it is delivered.
      const delivery = `label-${randomBytes(4).toString("hex")}`;
      await g.deliver(labeled, { event: "issues", delivery });
      await g.deliver(labeled, { event: "issues", delivery });
      const started = await waitFor(
        async () => {
          const b = await g.t.dispatch.store.findLatestBinding({
            platform: "github",
            workspace: g.repo,
            channel: String(issue),
            thread: null,
          });
          return b && b.runId !== busy.runId ? b : undefined;
        },
        { what: "the labelled run" },
      );
      const labelledRun = (await g.t.api("GET", `/api/v1/agent/runs/${started.runId}`)).body;
      expect(labelledRun.prompt).toContain("Add a label file");
      expect(labelledRun.prompt).toContain('labelled "Dispatch"');
      expect(labelledRun.creator.uid).toBe("github:octocat");
      await g.settle();
      const bound = (await g.runs()).filter((r: Json) => String(r.trigger_url).endsWith(`/issues/${issue}`));
      expect(bound).toHaveLength(1);
      // Another label, or an unlabel, is not a trigger.
      const other = structuredClone(labeled);
      other.label = { ...labeled.label, name: "bug" };
      expect(JSON.parse((await g.deliver(other, { event: "issues" })).text)).toMatchObject({
        ignored: "other label",
      });
    });

    it("assigning an issue to the bot's user starts a run; a forged event creates nothing", async () => {
      const issue = uniqueIssue();
      const assigned = eventPayload("issues", "assigned");
      assigned.issue = { ...assigned.issue, number: issue, title: "Assigned work", body: "" };
      assigned.assignee = { ...assigned.assignee, login: HANDLE };
      assigned.sender = { ...assigned.sender, login: "octocat" };
      const forged = await g.deliver(assigned, {
        event: "issues",
        headers: { "x-hub-signature-256": `sha256=${"0".repeat(64)}` },
      });
      expect(forged.status).toBe(401);
      await g.settle();
      expect(
        await g.t.dispatch.store.findLatestBinding({
          platform: "github",
          workspace: g.repo,
          channel: String(issue),
          thread: null,
        }),
      ).toBeUndefined();
      // Every event Dispatch acts on is verified before anything is read.
      for (const [event, action] of [
        ["pull_request_review_comment", "created"],
        ["pull_request_review", "submitted"],
        ["check_suite", "completed"],
        ["workflow_run", "completed"],
        ["pull_request", "closed"],
      ] as const) {
        const res = await g.deliver(eventPayload(event, action), {
          event,
          headers: { "x-hub-signature-256": `sha256=${"0".repeat(64)}` },
        });
        expect([event, res.status]).toEqual([event, 401]);
      }
      expect((await g.deliver(assigned, { event: "issues" })).status).toBe(202);
      await waitFor(
        () =>
          g.t.dispatch.store.findLatestBinding({
            platform: "github",
            workspace: g.repo,
            channel: String(issue),
            thread: null,
          }),
        { what: "the assigned run" },
      );
    });
  });
});
