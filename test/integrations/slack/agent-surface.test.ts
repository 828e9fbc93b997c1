import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { saveScreenshot } from "../../support/screenshots.ts";
import { slackThreadPage } from "../../support/slack-thread-page.ts";
import { launchChromium, runBrowserTests } from "../../web/chromium.ts";
import { BOT_USER, CHANNEL, nextTs, type SlackDispatch, startSlackDispatch, TEAM } from "./support.ts";

/**
 * Slack's agent surface against the fake Slack Web API: an assistant thread (a DM with the app) suggests
 * prompts, starts a run from a message, says what the agent is doing while it works and clears that at
 * the end; a run in a channel's thread streams its steps (chat.startStream / appendStream / stopStream
 * with task and plan chunks in Slack's shapes); a stream that fails leaves the status card to carry the
 * run with nothing lost; the App Home lists a person's runs.
 */

const DM = "D0DM";
/** A scripted run that stays in progress until its workspace has a `gate` file, then prints. */
const GATED = "Tidy the changelog\n$ until [ -e gate ]; do sleep 0.02; done\n$ echo tidied";

describe("Slack's agent surface", () => {
  let s: SlackDispatch;

  const event = (e: Record<string, unknown>) =>
    s.post(
      JSON.stringify({
        token: "unused",
        team_id: TEAM,
        api_app_id: "A0APP",
        type: "event_callback",
        event_id: `Ev${randomBytes(6).toString("hex").toUpperCase()}`,
        event_time: Math.floor(Date.now() / 1000),
        authorizations: [{ team_id: TEAM, user_id: BOT_USER, is_bot: true, is_enterprise_install: false }],
        event: e,
      }),
      "application/json",
    );
  const openGate = (runId: string) => writeFile(join(s.t.dataDir, "workspaces", runId, "gate"), "");
  const calls = (method: string) => s.fake.succeeded(method).map((c) => c.args);
  const runIn = (channel: string, thread: string) =>
    waitFor(
      async () => {
        for (const run of await s.runs()) {
          const binding = await s.t.dispatch.store.getThreadBinding(run.run_id);
          if (binding?.channel === channel && binding.thread === thread) return run;
        }
        return undefined;
      },
      { what: `the run of ${channel}/${thread}` },
    );

  beforeAll(async () => {
    s = await startSlackDispatch();
    s.fake.channelMembers.set(DM, ["U1", BOT_USER]);
  });
  afterAll(() => s?.stop());

  it("suggests prompts when an assistant thread starts", async () => {
    const thread = nextTs();
    const res = await event({
      type: "assistant_thread_started",
      assistant_thread: {
        user_id: "U1",
        context: { channel_id: CHANNEL, team_id: TEAM, enterprise_id: null },
        channel_id: DM,
        thread_ts: thread,
      },
      event_ts: nextTs(),
    });
    expect(res.status).toBe(200);
    const set = await waitFor(
      async () => calls("assistant.threads.setSuggestedPrompts").find((a) => a.thread_ts === thread),
      { what: "suggested prompts" },
    );
    expect(set.channel_id).toBe(DM);
    const prompts = set.prompts as Array<{ title: string; message: string }>;
    expect(prompts.map((p) => p.title)).toContain("Fix a failing test");
    expect(prompts.every((p) => p.message.length > 0)).toBe(true);
  });

  it("starts a run from a message in the assistant thread, shows its status while it works, clears it at the end", async () => {
    const thread = nextTs();
    const res = await event({
      type: "message",
      channel: DM,
      channel_type: "im",
      user: "U1",
      text: GATED,
      ts: nextTs(),
      thread_ts: thread,
      team: TEAM,
    });
    expect(res.status).toBe(200);
    const run = await runIn(DM, thread);
    await waitForState(s.t, run.run_id, ["INPROGRESS"]);
    const statuses = () =>
      calls("assistant.threads.setStatus")
        .filter((a) => a.channel_id === DM && a.thread_ts === thread)
        .map((a) => String(a.status));
    // While it works: what the agent is doing, in words.
    await waitFor(async () => statuses().find((st) => st.startsWith("is running until [ -e gate ]")), {
      what: "a status naming the running command",
    });
    const titled = calls("assistant.threads.setTitle").find((a) => a.thread_ts === thread);
    expect(titled).toMatchObject({ channel_id: DM, title: "Tidy the changelog" });
    await openGate(run.run_id);
    await waitForState(s.t, run.run_id, ["SUCCEEDED"]);
    // At the end the status line is cleared, after every other status.
    await waitFor(async () => (statuses().at(-1) === "" ? true : undefined), { what: "the status cleared" });
    expect(
      statuses()
        .slice(0, -1)
        .every((st) => st !== ""),
    ).toBe(true);
    // The card and the final reply are in the assistant thread as in any thread.
    await waitFor(
      async () =>
        calls("chat.postMessage").some(
          (a) =>
            a.channel === DM &&
            a.thread_ts === thread &&
            String(a.text).includes("*Succeeded* · Tidy the changelog"),
        ) || undefined,
      { what: "the final reply in the assistant thread" },
    );
    expect(calls("chat.startStream").filter((a) => a.channel === DM)).toEqual([]);
  });

  it("streams a channel run's steps as tasks in Slack's shapes, then stops the stream with the outcome", async () => {
    const ts = nextTs();
    expect((await s.mention({ text: `<@${BOT_USER}> ${GATED}`, ts })).status).toBe(200);
    const run = await runIn(CHANNEL, ts);
    const started = await waitFor(async () => calls("chat.startStream").find((a) => a.thread_ts === ts), {
      what: "chat.startStream in the run's thread",
    });
    expect(started).toMatchObject({
      channel: CHANNEL,
      recipient_user_id: "U1",
      recipient_team_id: TEAM,
      task_display_mode: "timeline",
    });
    const streamTs = await waitFor(async () => streamOf(CHANNEL, ts), { what: "the stream" });
    await openGate(run.run_id);
    await waitForState(s.t, run.run_id, ["SUCCEEDED"]);
    const stopped = await waitFor(async () => calls("chat.stopStream").find((a) => a.ts === streamTs), {
      what: "chat.stopStream",
    });
    const chunks = s.fake.message(CHANNEL, streamTs)!.chunks as Array<Record<string, unknown>>;
    expect(chunks[0]).toEqual({ type: "plan_update", title: "Tidy the changelog" });
    const tasks = chunks.filter((c) => c.type === "task_update");
    // One task per tool call: in progress, then complete with its exit code and output.
    const gate = tasks.filter((c) => String(c.title).startsWith("shell until [ -e gate ]"));
    expect(gate.map((c) => c.status)).toEqual(["in_progress", "complete"]);
    const echo = tasks.filter((c) => c.title === "shell echo tidied");
    expect(echo.at(-1)).toMatchObject({ status: "complete", details: "exit 0", output: "tidied" });
    expect(new Set(tasks.map((c) => c.id)).size).toBe(2);
    expect(calls("chat.appendStream").every((a) => a.ts === streamTs)).toBe(true);
    const last = (stopped.chunks as Array<Record<string, unknown>>).at(-1);
    expect(last).toEqual({ type: "markdown_text", text: "*Succeeded*" });
    expect(s.fake.message(CHANNEL, streamTs)!.streaming).toBe(false);
    if (runBrowserTests) {
      // The README's picture of the thread: what was sent, drawn in Block Kit's shapes.
      // Once the card shows the end too (its edits are coalesced) and the final reply is there.
      await waitFor(
        async () => {
          const thread = s.fake.thread(CHANNEL, ts);
          const card = thread.find((m) => Array.isArray(m.blocks) && (m.blocks as unknown[]).length > 1);
          return String(card?.text).startsWith("Succeeded") &&
            thread.some((m) => String(m.text).includes("*Succeeded* · "))
            ? true
            : undefined;
        },
        { what: "the card's last edit and the final reply" },
      );
      const chromium = await launchChromium();
      try {
        const page = await chromium.newPage({ viewport: { width: 760, height: 760 } });
        await page.setContent(
          slackThreadPage({ user: "ada", text: `@Dispatch ${GATED}` }, s.fake.thread(CHANNEL, ts)),
        );
        await saveScreenshot(page, "slack-thread.png");
      } finally {
        await chromium.close();
      }
    }
  });

  it("falls back to the status card when streaming fails, with nothing lost", async () => {
    // Not available at all: the stream never starts.
    s.fake.failNext("chat.startStream", { error: "not_allowed_token_type" });
    const first = nextTs();
    await s.mention({ text: `<@${BOT_USER}> ${GATED}`, ts: first });
    const a = await runIn(CHANNEL, first);
    await waitFor(
      async () => s.fake.calls.find((c) => c.method === "chat.startStream" && c.args.thread_ts === first),
      {
        what: "the refused chat.startStream",
      },
    );
    await openGate(a.run_id);
    await waitForState(s.t, a.run_id, ["SUCCEEDED"]);
    await expectCardAndReply(a.run_id, first);
    expect(calls("chat.appendStream").filter((c) => c.ts === first)).toEqual([]);

    // Failing mid-way: the thread stops streaming; the card and the reply still say everything.
    const second = nextTs();
    const twoGates =
      "Tidy the changelog\n$ until [ -e gate ]; do sleep 0.02; done\n$ until [ -e gate2 ]; do sleep 0.02; done\n$ echo tidied";
    await s.mention({ text: `<@${BOT_USER}> ${twoGates}`, ts: second });
    const b = await runIn(CHANNEL, second);
    const streamTs = await waitFor(async () => streamOf(CHANNEL, second), { what: "the second stream" });
    s.fake.failNext("chat.appendStream", { error: "message_not_in_streaming_state" });
    await openGate(b.run_id);
    const failed = () =>
      s.fake.calls.filter((c) => c.method === "chat.appendStream" && c.args.ts === streamTs);
    await waitFor(async () => (failed().some((c) => !(c as { ok?: boolean }).ok) ? true : undefined), {
      what: "the failed chat.appendStream",
    });
    await writeFile(join(s.t.dataDir, "workspaces", b.run_id, "gate2"), "");
    await waitForState(s.t, b.run_id, ["SUCCEEDED"]);
    await expectCardAndReply(b.run_id, second);
    // Nothing more was streamed after the failure.
    expect(failed()).toHaveLength(1);
    expect(s.fake.calls.filter((c) => c.method === "chat.stopStream" && c.args.ts === streamTs)).toEqual([]);
  });

  it("lists a person's runs on their App Home", async () => {
    expect(
      (await event({ type: "app_home_opened", user: "U1", channel: DM, tab: "home", event_ts: nextTs() }))
        .status,
    ).toBe(200);
    const view = await waitFor(async () => s.fake.homeViews.get("U1"), { what: "U1's App Home" });
    const blocks = view.blocks as Array<{ type: string; text: { text: string } }>;
    expect(blocks[0]).toEqual({ type: "header", text: { type: "plain_text", text: "My runs" } });
    const rows = blocks.slice(1).map((b) => b.text.text);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows[0]).toMatch(
      /^:white_check_mark: \*<http:\/\/[^|]+\/sessions\/[^|]+\|Tidy the changelog>\*\nSucceeded/,
    );
    // Someone with no runs sees how to start one.
    await event({ type: "app_home_opened", user: "U9", channel: "D0OTHER", tab: "home", event_ts: nextTs() });
    const empty = await waitFor(async () => s.fake.homeViews.get("U9"), { what: "U9's App Home" });
    expect(JSON.stringify(empty.blocks)).toContain("No runs yet");
  });

  /** The ts of the message streamed into `thread`, once there is one. */
  function streamOf(channel: string, thread: string): string | undefined {
    return s.fake.streamIn(channel, thread);
  }

  /** The run's card shows its final state and the thread got the final reply, with the link to the whole session. */
  async function expectCardAndReply(runId: string, thread: string) {
    const cardRef = await waitFor(
      async () => (await s.t.dispatch.store.getCardState(runId))?.cardRef ?? undefined,
      {
        what: "the card",
      },
    );
    await waitFor(
      async () =>
        JSON.stringify(s.fake.message(CHANNEL, cardRef)?.blocks ?? "").includes("Succeeded")
          ? true
          : undefined,
      { what: "the card showing Succeeded" },
    );
    await waitFor(
      async () =>
        calls("chat.postMessage").some(
          (a) => a.thread_ts === thread && String(a.text).includes("*Succeeded* · Tidy the changelog"),
        ) || undefined,
      { what: "the final reply" },
    );
  }
});
