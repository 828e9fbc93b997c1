import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { FakeGitHub } from "../../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../../support/git-remotes.ts";
import { CHANNEL, nextTs, type SlackDispatch, startSlackDispatch, TEAM } from "./support.ts";

// biome-ignore lint/suspicious/noExplicitAny: Slack payloads and API bodies are asserted field by field
type Json = any;

/**
 * Plans that wait for approval, from Slack (docs/surfaces.md, "Waiting for you"): `/agent plan …` waits
 * with the plan on its card and Approve / Request changes / Cancel buttons; Approve continues the same run
 * (same workspace, then a pull request), Request changes opens a modal whose submission revises the plan,
 * and the buttons obey the channel's follow-up policy. Real Dispatch, fake Slack, the scripted harness
 * (whose plan is its script), local git remotes and the fake GitHub for the pull request.
 */
describe("Slack: a plan that waits for approval", () => {
  let remotes: GitRemotes;
  let github: FakeGitHub;
  let s: SlackDispatch;

  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create("acme/app", { "README.md": "# app\n" });
    github = await new FakeGitHub().start();
    github.gitRoot = remotes.root;
    s = await startSlackDispatch({
      settings: "slack:\n  followup: requester\n",
      env: { ...deliveryEnv(remotes, github), DISPATCH_POLL_INTERVAL_MS: "100" },
    });
  });
  afterAll(async () => {
    await s?.stop();
    await github?.stop();
    remotes?.remove();
  });

  const runWith = (marker: string) =>
    waitFor(async () => (await s.runs()).find((r) => String(r.prompt).includes(marker)), {
      what: `a run with ${marker}`,
    });
  const cardOf = async (runId: string) => {
    const ts = await waitFor(async () => (await s.t.dispatch.store.getCardState(runId))?.cardRef, {
      what: `the card of ${runId}`,
    });
    return { ts, message: () => s.fake.message(CHANNEL, ts) as Json };
  };
  const buttons = (message: Json): Json[] =>
    (message?.blocks ?? []).find((b: Json) => b.type === "actions")?.elements ?? [];
  const events = async (id: string): Promise<Json[]> =>
    (await s.t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events;
  const states = async (id: string) =>
    (await events(id)).filter((e) => e.type === "state").map((e) => e.data.state);

  /** Clicks a button of the run's card, as Slack posts a block action (signed, form-encoded). */
  const click = (actionId: string, runId: string, cardTs: string, user = "U1") => {
    const payload = {
      type: "block_actions",
      team: { id: TEAM, domain: "acme" },
      user: { id: user, username: "someone", team_id: TEAM },
      api_app_id: "A0APP",
      trigger_id: `${Date.now()}.${Math.random().toString(36).slice(2)}.trigger`,
      container: { type: "message", message_ts: cardTs, channel_id: CHANNEL, is_ephemeral: false },
      channel: { id: CHANNEL, name: "dev" },
      message: { type: "message", ts: cardTs, text: "status card" },
      response_url: "https://hooks.slack.invalid/actions/1",
      actions: [
        {
          type: "button",
          action_id: actionId,
          block_id: "dispatch_run_actions",
          value: runId,
          action_ts: `${Date.now() / 1000}`,
        },
      ],
    };
    return s.post(
      new URLSearchParams({ payload: JSON.stringify(payload) }).toString(),
      "application/x-www-form-urlencoded",
    );
  };

  /** Submits a modal views.open showed, with `changes` in its text input. */
  const submit = (view: Json, changes: string, user = "U1") => {
    const payload = {
      type: "view_submission",
      team: { id: TEAM, domain: "acme" },
      user: { id: user, username: "someone", team_id: TEAM },
      api_app_id: "A0APP",
      trigger_id: `${Date.now()}.submit`,
      view: {
        id: `V${Date.now()}`,
        type: "modal",
        callback_id: view.callback_id,
        private_metadata: view.private_metadata,
        hash: "1700000000.abc",
        state: {
          values: { dispatch_revise_changes: { changes: { type: "plain_text_input", value: changes } } },
        },
      },
    };
    return s.post(
      new URLSearchParams({ payload: JSON.stringify(payload) }).toString(),
      "application/x-www-form-urlencoded",
    );
  };

  it("`/agent plan …` waits with its plan and an Approve button; the click carries it out in the same run, then a PR", async () => {
    await s.command({ text: "plan in acme/app Add a file\n$ echo x > f.txt", user_id: "U1" });
    const created = await runWith("echo x > f.txt");
    const blocked = await waitForState(s.t, created.run_id, ["BLOCKED", "SUCCEEDED", "FAILED"], 30_000);
    expect(blocked.state).toBe("BLOCKED");
    expect(blocked.status_message.reason).toBe("awaiting_approval");
    // Waiting, the run gives up its executor slot.
    await waitFor(() => s.t.dispatch.executor!.activeRuns === 0, { what: "the slot to be released" });

    const card = await cardOf(created.run_id);
    await waitFor(() => JSON.stringify(card.message()?.blocks ?? []).includes("Waiting for you"), {
      what: "the card to say Waiting for you",
    });
    const shown = JSON.stringify(card.message().blocks);
    expect(shown).toContain("Waiting for approval of its plan");
    expect(shown).toContain("echo x &gt; f.txt");
    expect(shown).toContain(`/runs/${created.run_id}|the run page>`);
    expect(buttons(card.message()).map((b) => b.text.text)).toEqual([
      "Open session",
      "Approve",
      "Request changes",
      "Cancel",
    ]);
    expect(String(card.message().text)).toContain("Waiting for approval of its plan");

    // Under `followup: requester`, someone else's click is refused and changes nothing.
    await click("dispatch_approve", created.run_id, card.ts, "U2");
    expect(await s.ephemeral("U2", 1)).toContain("Only <@U1>, who started this run, may do that.");
    expect((await s.t.api("GET", `/api/v1/agent/runs/${created.run_id}`)).body.state).toBe("BLOCKED");

    await click("dispatch_approve", created.run_id, card.ts, "U1");
    expect(await s.ephemeral("U1", 1)).toContain("Approved");
    const done = await waitForState(s.t, created.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    expect(await states(created.run_id)).toEqual([
      "QUEUED",
      "INPROGRESS",
      "BLOCKED",
      "INPROGRESS",
      "SUCCEEDED",
    ]);
    // The same workspace, and the plan's command ran once.
    expect(await readFile(join(s.t.dataDir, "workspaces", created.run_id, "f.txt"), "utf8")).toBe("x\n");
    const pr = github.pulls.find((p) => p.head === done.agent_config.branch);
    expect(pr).toMatchObject({ repo: "acme/app", base: "main" });
    expect(remotes.show("acme/app", done.agent_config.branch, "f.txt")).toBe("x\n");
    await waitFor(() => !JSON.stringify(card.message().blocks).includes("dispatch_approve"), {
      what: "the card to drop its Approve button",
      timeoutMs: 15_000,
    });

    // A second click (the card of an answered plan) says so, and starts nothing.
    await click("dispatch_approve", created.run_id, card.ts, "U1");
    expect(await s.ephemeral("U1", 2)).toContain("no plan waiting for approval");
  });

  it("Request changes opens a modal; its submission revises the plan, which waits again; `approve` in the thread carries out the revised plan", async () => {
    await s.command({ text: "plan $ echo one > one.txt", user_id: "U1" });
    const created = await runWith("echo one > one.txt");
    await waitForState(s.t, created.run_id, ["BLOCKED"], 30_000);
    const card = await cardOf(created.run_id);
    await waitFor(() => JSON.stringify(card.message()?.blocks ?? []).includes("dispatch_revise"), {
      what: "the Request changes button",
    });
    const before = s.ephemerals("U1").length;

    await click("dispatch_revise", created.run_id, card.ts);
    const opened = await waitFor(() => s.fake.succeeded("views.open").at(-1), { what: "the modal" });
    const view = opened.args.view as Json;
    expect(view.callback_id).toBe("dispatch_revise_plan");
    expect(JSON.stringify(view.blocks)).toContain("What should change in the plan?");
    expect(opened.args.trigger_id).toEqual(expect.stringContaining(".trigger"));

    await submit(view, "$ echo two > two.txt");
    expect(await s.ephemeral("U1", before + 1)).toContain("the agent revises its plan");
    await waitFor(async () => (await states(created.run_id)).filter((x) => x === "BLOCKED").length === 2, {
      what: "the revised plan to wait",
      timeoutMs: 30_000,
    });
    const run = (await s.t.api("GET", `/api/v1/agent/runs/${created.run_id}`)).body;
    expect(run.artifacts.filter((a: Json) => a.artifact_type === "PLAN")).toHaveLength(2);
    await waitFor(() => JSON.stringify(card.message().blocks).includes("echo two &gt; two.txt"), {
      what: "the card to show the revised plan",
      timeoutMs: 15_000,
    });

    // Answered in the card's thread, by a mention.
    await s.mention({ text: "<@UBOT> approve keep it short", user: "U1", thread_ts: card.ts, ts: nextTs() });
    const done = await waitForState(s.t, created.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(done.state).toBe("SUCCEEDED");
    expect(
      (await events(created.run_id)).filter((e) => e.type === "tool_call").map((e) => e.data.command),
    ).toEqual(["echo two > two.txt"]);
  });
});
