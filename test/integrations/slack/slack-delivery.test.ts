import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { FakeGitHub } from "../../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../../support/git-remotes.ts";
import { CHANNEL, nextTs, type SlackDispatch, startSlackDispatch, TEAM } from "./support.ts";

/**
 * Slack runs that work in a repository (docs/delivery.md): `in owner/repo[@base]` in the command, or the
 * channel's default repository set with `/agent repo`. Real Dispatch, fake Slack, local bare repositories
 * as the git server and the fake GitHub for pull requests; the scripted harness runs the `$ ` lines.
 */
describe("Slack runs delivered to a repository", () => {
  let remotes: GitRemotes;
  let github: FakeGitHub;
  let s: SlackDispatch;

  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create("acme/app", { "README.md": "# app\n" });
    remotes.branch("acme/app", "develop", { "DEVELOP.md": "next\n" });
    remotes.create("acme/lib", { "lib.txt": "lib\n" });
    github = await new FakeGitHub().start();
    github.gitRoot = remotes.root;
    s = await startSlackDispatch({
      settings: "slack:\n  allowed_users: [U1, U2, U3, U4]\n",
      env: {
        ...deliveryEnv(remotes, github),
      },
    });
  });
  afterAll(async () => {
    await s?.stop();
    await github?.stop();
    remotes?.remove();
  });

  /** The run whose prompt contains `marker`, once it exists. */
  const runWith = (marker: string) =>
    waitFor(async () => (await s.runs()).find((r) => String(r.prompt).includes(marker)), {
      what: `a run with ${marker}`,
    });
  /** The run's status card (the slash command's root message), once posted. */
  const cardTs = (runId: string) =>
    waitFor(async () => (await s.t.dispatch.store.getThreadBinding(runId))?.thread ?? undefined, {
      what: `the status card of ${runId}`,
    });
  const cardText = (ts: string) => JSON.stringify(s.fake.message(CHANNEL, ts)?.blocks ?? []);

  it("`/agent in acme/app@develop <prompt>` opens a PR against develop, linked on the card and in the reply", async () => {
    await s.command({ text: "in acme/app@develop Add a greeting\n$ echo hi > hello.txt", user_id: "U1" });
    const created = await runWith("echo hi > hello.txt");
    expect(created.prompt).toBe("Add a greeting\n$ echo hi > hello.txt");
    const run = await waitForState(s.t, created.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state).toBe("SUCCEEDED");
    expect(run.agent_config).toMatchObject({ repository: "acme/app", base_branch: "develop" });

    const branch = run.agent_config.branch as string;
    const pr = github.pulls.find((p) => p.head === branch);
    expect(pr).toMatchObject({ repo: "acme/app", base: "develop" });
    expect(remotes.show("acme/app", branch, "hello.txt")).toBe("hi\n");
    expect(remotes.show("acme/app", branch, "DEVELOP.md")).toBe("next\n");
    // The Warp Platform API's lookup (docs/api.md) finds the Slack-started run by its pull request's URL.
    const found = await s.t.api(
      "GET",
      `/api/v1/agent/run-by-external-reference?url=${encodeURIComponent(pr!.html_url)}`,
    );
    expect(found.body).toEqual({ run_id: run.run_id });

    const ts = await cardTs(run.run_id);
    const prLink = `<${pr!.html_url}|PR #${pr!.number} opened> · +1 −0 in 1 file`;
    await waitFor(() => cardText(ts).includes(prLink), {
      what: `the card to link ${pr!.html_url}`,
      timeoutMs: 15_000,
    });
    expect(cardText(ts)).toContain("in acme/app@develop");
    // The card as first posted already said where the run works.
    const firstPost = s.fake
      .succeeded("chat.postMessage")
      .find((c) => JSON.stringify(c.args).includes(run.run_id));
    expect(String(firstPost?.args.text)).toContain("(in acme/app@develop)");
    const reply = await waitFor(
      () => s.fake.succeeded("chat.postMessage").find((c) => c.args.thread_ts === ts),
      { what: "the terminal reply", timeoutMs: 15_000 },
    );
    expect(String(reply.args.text)).toContain("<@U1>");
    expect(String(reply.args.text)).toContain(prLink);
  });

  it("a channel default set with `/agent repo` is used by plain commands; `in …` beats it; `repo none` clears it", async () => {
    const where = { platform: "slack" as const, workspace: TEAM, channel: CHANNEL };
    await s.command({ text: "repo", user_id: "U2" });
    expect(await s.ephemeral("U2", 1)).toContain("This channel has no default repository");

    await s.command({ text: "repo acme/app", user_id: "U2" });
    expect(await s.ephemeral("U2", 2)).toContain("Runs started in this channel now work in `acme/app`");
    await s.command({ text: "repo", user_id: "U3" });
    const shown = await s.ephemeral("U3", 1);
    expect(shown).toContain("This channel's default repository is `acme/app`");
    expect(shown).toContain("set by <@U2>");
    expect((await s.t.dispatch.store.getChannelSettings(where))?.repository).toBe("acme/app");

    await s.command({ text: "Write notes\n$ echo notes > notes.txt", user_id: "U2" });
    const plain = await runWith("echo notes > notes.txt");
    expect(plain.agent_config.repository).toBe("acme/app");
    const done = await waitForState(s.t, plain.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(done.state).toBe("SUCCEEDED");
    const pr = github.pulls.find((p) => p.head === done.agent_config.branch);
    expect(pr).toMatchObject({ repo: "acme/app", base: "main" });
    const ts = await cardTs(done.run_id);
    await waitFor(() => cardText(ts).includes(`<${pr!.html_url}|PR #${pr!.number} opened>`), {
      what: "the card to link the PR",
      timeoutMs: 15_000,
    });
    expect(cardText(ts)).toContain("in acme/app@main");

    // A mention starts a run in the channel default too; `in owner/repo` wins over it.
    await s.mention({
      text: "<@UBOT> in acme/lib Touch lib\n$ echo more >> lib.txt",
      user: "U3",
      ts: nextTs(),
    });
    const other = await runWith("echo more >> lib.txt");
    expect(other.agent_config.repository).toBe("acme/lib");
    const otherDone = await waitForState(s.t, other.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(otherDone.state).toBe("SUCCEEDED");
    expect(github.pulls.find((p) => p.head === otherDone.agent_config.branch)).toMatchObject({
      repo: "acme/lib",
      base: "main",
    });

    await s.command({ text: "repo none", user_id: "U2" });
    expect(await s.ephemeral("U2", 3)).toContain("This channel has no default repository any more");
    // (U2 typed `repo` a moment ago: the same command again within 60 s would be a retry, ignored.)
    const n = s.ephemerals("U1").length + 1;
    await s.command({ text: "repo", user_id: "U1" });
    expect(await s.ephemeral("U1", n)).toContain("This channel has no default repository");
    await s.command({ text: "$ echo without", user_id: "U2" });
    const bare = await runWith("echo without");
    expect(bare.agent_config.repository).toBeUndefined();
  });

  it("an invalid repository gets an ephemeral error saying what is wrong, and starts no run", async () => {
    const before = (await s.runs()).length;
    await s.command({ text: "in acme/app@bad..branch do it", user_id: "U4" });
    expect(await s.ephemeral("U4", 1)).toContain(
      'repository: the base branch "bad..branch" is not a valid git branch name',
    );
    await s.command({ text: "in git@github.com:acme/app.git do it", user_id: "U4" });
    expect(await s.ephemeral("U4", 2)).toContain("SSH remotes are not supported");
    await s.command({ text: "repo acme", user_id: "U4" });
    expect(await s.ephemeral("U4", 3)).toContain('"acme" is not a repository: write owner/repo');
    const mentionTs = nextTs();
    await s.mention({ text: "<@UBOT> in a/b/c fix it", user: "U4", ts: mentionTs });
    const inThread = await waitFor(() => s.ephemerals("U4")[3], { what: "the answer to the mention" });
    expect(inThread.args.thread_ts).toBe(mentionTs);
    expect(String(inThread.args.text)).toContain('"a/b/c" is not a repository');

    await s.t.dispatch.surfaces.get("slack")!.inbound!.idle();
    expect(await s.runs()).toHaveLength(before);
    expect(
      await s.t.dispatch.store.getChannelSettings({ platform: "slack", workspace: TEAM, channel: CHANNEL }),
    ).toMatchObject({ repository: null }); // cleared by the test before, and still so
  });

  it("only people who may start runs here may change the channel default", async () => {
    await s.command({ text: "repo acme/lib", user_id: "U9" });
    expect(await s.ephemeral("U9", 1)).toContain("You are not on Dispatch's list of allowed users");
    const settings = await s.t.dispatch.store.getChannelSettings({
      platform: "slack",
      workspace: TEAM,
      channel: CHANNEL,
    });
    expect(settings?.repository).toBeNull();
  });
});
