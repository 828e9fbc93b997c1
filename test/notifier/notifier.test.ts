import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { slackNotifierPlatform } from "../../src/integrations/slack/notifier-platform.ts";
import { WebApiSlackPoster } from "../../src/integrations/slack/web-api.ts";
import { createLogger } from "../../src/log.ts";
import { NOTIFIER_PRINCIPAL } from "../../src/notifier/index.ts";
import { Notifier, type NotifierOptions } from "../../src/notifier/notifier.ts";
import { inProcessRunsApiFor, type RunsApi } from "../../src/runs/runs-api.ts";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { FakeSlack, type SlackCall } from "../support/fake-slack.ts";

const log = createLogger(process.env.TEST_LOG_LEVEL ?? "silent");

/** Fast timings: a tick every 20 ms, edits at least 150 ms apart, retries from 20 ms. */
const FAST: Partial<NotifierOptions> = {
  tickMs: 20,
  editIntervalMs: { slack: 150 },
  outbox: { pollMs: 20, retryBaseMs: 20, retryMaxMs: 200, maxAttempts: 6, leaseMs: 2000 },
};

let slack: FakeSlack;
let t: TestDispatch;
let runs: RunsApi;

async function startWithNotifier(options: Partial<NotifierOptions> = FAST, env: Record<string, string> = {}) {
  t = await startTestDispatch(
    {
      SLACK_BOT_TOKEN: slack.token,
      SLACK_SIGNING_SECRET: "test-signing-secret",
      SLACK_API_URL: slack.url,
      DISPATCH_POLL_INTERVAL_MS: "20",
      ...env,
    },
    { notifier: options },
  );
  runs = await inProcessRunsApiFor(t.dispatch.runService, t.dispatch.budgets, () => t.url, {
    ...NOTIFIER_PRINCIPAL,
    // The tests play the Slack app with it (create, follow up, cancel): a surface that steers, not a reader.
    role: "member",
  });
}

/** What the Slack app does for a mention (thread = the mention) or a slash command (thread null). */
async function slackRun(
  prompt: string,
  where: { channel?: string; mention?: string | null; requester?: string } = {},
): Promise<string> {
  const channel = where.channel ?? "C1";
  const requester = where.requester ?? "U1";
  const created = await runs.create({
    prompt,
    source: "SLACK",
    creator: { type: "user", uid: `slack:T1:${requester}`, display_name: "Alice" },
    trigger_url: "https://fake.slack.com/archives/C1/p1",
  });
  const mention = where.mention === undefined ? null : where.mention;
  await t.dispatch.store.bindThread({
    runId: created.run_id,
    platform: "slack",
    workspace: "T1",
    channel,
    thread: mention,
    triggerRef: mention,
    requester,
    createdAt: new Date().toISOString(),
  });
  t.dispatch.notifier?.poke();
  return created.run_id;
}

const ok = (method: string, filter: (c: SlackCall) => boolean = () => true) =>
  slack.succeeded(method).filter(filter);
const inChannel = (channel: string) => (c: SlackCall) => c.args.channel === channel;
async function cardRef(runId: string): Promise<string> {
  return waitFor(async () => (await t.dispatch.store.getCardState(runId))?.cardRef, { what: "card posted" });
}
/** Successful card writes of a run (its post, then its updates), as texts. */
function cardTexts(channel: string, ts: string): string[] {
  const post = slack.succeeded("chat.postMessage").filter((c) => c.args.channel === channel);
  const first = post.filter(
    (c) => String(c.args.text).includes("/sessions/") && !String(c.args.text).includes("<@"),
  );
  const posted = first.find((c) => slack.message(channel, ts) && c.args.text !== undefined);
  const updates = slack
    .succeeded("chat.update")
    .filter((c) => c.args.channel === channel && c.args.ts === ts);
  return [...(posted ? [String(posted.args.text)] : []), ...updates.map((c) => String(c.args.text))];
}
const finalReplies = (channel: string) =>
  ok("chat.postMessage", (c) => c.args.channel === channel && String(c.args.text).includes("<@"));

beforeEach(async () => {
  slack = await new FakeSlack().start();
});
afterEach(async () => {
  await t?.stop();
  await slack.stop();
});

describe("notifier: status card through the real executor", () => {
  it("posts one card per run and edits it in place through Queued → In progress → Succeeded", async () => {
    await startWithNotifier(FAST, { DISPATCH_MAX_CONCURRENT_RUNS: "1" });
    // The first run keeps the only executor slot busy, so the second one is seen Queued.
    const blocker = await slackRun("$ sleep 0.4", { channel: "C0" });
    await waitForState(t, blocker, ["INPROGRESS"]);
    const id = await slackRun("$ echo hello", { channel: "C1", mention: "1700000000.000001" });
    const ts = await cardRef(id);
    await waitForState(t, id, ["SUCCEEDED"]);
    await waitFor(() => String(slack.message("C1", ts)?.text).startsWith("Succeeded"), {
      what: "final card",
    });
    const texts = cardTexts("C1", ts);
    expect(texts[0]).toMatch(/^Queued: /);
    expect(texts.some((x) => x.startsWith("In progress: "))).toBe(true);
    expect(texts.at(-1)).toMatch(/^Succeeded: /);
    // One message: the card was posted once (a reply in the mention's thread) and then only updated.
    const posts = ok("chat.postMessage", inChannel("C1"));
    await waitFor(() => finalReplies("C1").length === 1, { what: "terminal reply" });
    expect(posts.filter((c) => !String(c.args.text).includes("<@"))).toHaveLength(1);
    expect(posts[0]!.args.thread_ts).toBe("1700000000.000001");
    // Edits are coalesced: the outbox scheduled the card messages that went out at least the edit window
    // apart (the schedule, not the wall clock of a loaded machine, is what the notifier controls).
    const sentCards = (await t.dispatch.store.listOutbox(id))
      .filter((r) => r.kind === "card" && r.state === "sent")
      .map((r) => Date.parse(r.notBefore))
      .sort((a, b) => a - b);
    expect(sentCards.length).toBe(ok("chat.update", (c) => c.args.ts === ts).length + 1);
    for (let i = 1; i < sentCards.length; i++)
      expect(sentCards[i]! - sentCards[i - 1]!).toBeGreaterThanOrEqual(FAST.editIntervalMs!.slack!);
    // The final card has no Cancel button; the reply mentions the requester exactly once, in the thread.
    expect(JSON.stringify(slack.message("C1", ts)?.blocks)).not.toContain("dispatch_cancel");
    const [reply] = finalReplies("C1");
    expect(String(reply!.args.text).match(/<@U1>/g)).toHaveLength(1);
    expect(reply!.args.thread_ts).toBe("1700000000.000001");
    await waitFor(() => ok("reactions.add").some((c) => c.args.name === "white_check_mark"), { what: "✅" });
    expect(
      ok("reactions.add", (c) => c.args.timestamp === "1700000000.000001").map((c) => c.args.name),
    ).toEqual(["white_check_mark"]);
  });

  it("a slash command's card becomes the root of the run's thread; failure shows the status message", async () => {
    await startWithNotifier();
    const id = await slackRun("$ echo about to fail\n$ exit 3", { channel: "C2", mention: null });
    const ts = await cardRef(id);
    const post = ok("chat.postMessage", inChannel("C2"))[0]!;
    expect(post.args.thread_ts).toBeUndefined();
    expect((await t.dispatch.store.getThreadBinding(id))?.thread).toBe(ts);
    const failed = await waitForState(t, id, ["FAILED"]);
    expect(failed.status_message?.message).toBeTruthy();
    await waitFor(() => String(slack.message("C2", ts)?.text).startsWith("Failed"), { what: "failed card" });
    expect(String(slack.message("C2", ts)?.text)).toContain(failed.status_message.message);
    await waitFor(() => finalReplies("C2").length === 1, { what: "terminal reply" });
    const reply = finalReplies("C2")[0]!;
    expect(reply.args.thread_ts).toBe(ts);
    expect(String(reply.args.text)).toContain(failed.status_message.message);
    expect(ok("reactions.add")).toHaveLength(0); // a slash command has no message to react to
  });

  it("a cancelled run's card says who cancelled it; a follow-up execution gets its own terminal reply", async () => {
    await startWithNotifier();
    const id = await slackRun("$ sleep 30", { channel: "C3", mention: "1700000000.000003" });
    const ts = await cardRef(id);
    await waitForState(t, id, ["INPROGRESS"]);
    await runs.cancel(id, { by: { type: "user", uid: "slack:T1:U9", display_name: "Bob" } });
    await waitFor(() => String(slack.message("C3", ts)?.text).startsWith("Cancelled by Bob"), {
      what: "cancelled card",
    });
    await waitFor(() => finalReplies("C3").length === 1, { what: "first terminal reply" });
    await waitFor(() => ok("reactions.add").some((c) => c.args.name === "no_entry_sign"), { what: "🚫" });

    await runs.followup(id, "$ echo again");
    await waitForState(t, id, ["SUCCEEDED"]);
    await waitFor(() => finalReplies("C3").length === 2, { what: "second terminal reply" });
    await waitFor(() => String(slack.message("C3", ts)?.text).startsWith("Succeeded"), {
      what: "card again",
    });
    expect(
      ok("chat.postMessage", (c) => c.args.channel === "C3" && !String(c.args.text).includes("<@")),
    ).toHaveLength(1);
  });

  it("elapsed time alone does not edit the card every tick", async () => {
    await startWithNotifier({ ...FAST, editIntervalMs: { slack: 50 } });
    const id = await slackRun("$ sleep 1.2", { channel: "C4" });
    const ts = await cardRef(id);
    await waitForState(t, id, ["SUCCEEDED"]);
    await waitFor(() => String(slack.message("C4", ts)?.text).startsWith("Succeeded"), {
      what: "final card",
    });
    // ~60 ticks happened; only the state changes (In progress, Succeeded) were worth an edit.
    expect(ok("chat.update", (c) => c.args.ts === ts).length).toBeLessThanOrEqual(2);
  });
});

describe("notifier: one run, many threads", () => {
  it("reports to every bound thread; a follow-up's reply goes to the origin and the thread that asked", async () => {
    await startWithNotifier();
    // Created as the API would (not a Slack source): the notifier finds it by its threads.
    const created = await runs.create({ prompt: "$ sleep 0.3" });
    const bind = (channel: string, thread: string, requester: string) =>
      t.dispatch.store.bindThread({
        runId: created.run_id,
        platform: "slack",
        workspace: "T1",
        channel,
        thread,
        triggerRef: thread,
        requester,
        createdAt: new Date().toISOString(),
      });
    await bind("C5", "1700000000.000005", "U1"); // the origin
    await bind("C6", "1700000000.000006", "U2"); // a second thread, bound later
    const id = created.run_id;
    const originCard = await waitFor(
      async () => (await t.dispatch.store.getCardState(id, "slack:T1:C5"))?.cardRef,
      {
        what: "origin card",
      },
    );
    const otherCard = await waitFor(
      async () => (await t.dispatch.store.getCardState(id, "slack:T1:C6"))?.cardRef,
      {
        what: "second card",
      },
    );
    const first = await waitForState(t, id, ["SUCCEEDED"]);
    for (const [channel, ts] of [
      ["C5", originCard],
      ["C6", otherCard],
    ] as const) {
      await waitFor(() => String(slack.message(channel, ts)?.text).startsWith("Succeeded"), {
        what: `${channel} card`,
      });
    }
    // The end of the first execution: a reply in each thread, each mentioning its own requester.
    await waitFor(() => finalReplies("C5").length === 1 && finalReplies("C6").length === 1, {
      what: "a reply in each thread",
    });
    expect(String(finalReplies("C6")[0]!.args.text)).toContain("<@U2>");
    expect(finalReplies("C6")[0]!.args.thread_ts).toBe("1700000000.000006");

    // A follow-up from the origin: its reply goes there; the other thread's card follows, silently.
    await runs.followup(id, "$ echo second");
    const second = await waitFor(
      async () => {
        const run = await runs.get(id);
        return run.state === "SUCCEEDED" && run.finished_at !== first.finished_at ? run : undefined;
      },
      { what: "the follow-up's execution to succeed" },
    );
    await waitFor(() => finalReplies("C5").length === 2, { what: "second reply at the origin" });
    await waitFor(
      async () => (await t.dispatch.store.getCardState(id, "slack:T1:C6"))?.lastFinal === second.finished_at,
      { what: "second thread's card caught up" },
    );
    expect(finalReplies("C6")).toHaveLength(1);

    // A follow-up asked from the second thread: the reply goes there, and to the origin.
    await t.dispatch.store.markThreadAsked(id, "slack:T1:C6", new Date().toISOString());
    await runs.followup(id, "$ echo third");
    await waitFor(() => finalReplies("C6").length === 2 && finalReplies("C5").length === 3, {
      what: "replies in both threads",
    });
    // One card per thread, posted once each, then edited.
    const cards = (channel: string) =>
      ok("chat.postMessage", (c) => c.args.channel === channel && !String(c.args.text).includes("<@"));
    expect([cards("C5").length, cards("C6").length]).toEqual([1, 1]);
  });
});

describe("notifier: delivery", () => {
  it("Slack answering 429 with Retry-After, then 500s: the card still arrives, once, after Retry-After", async () => {
    await startWithNotifier();
    slack.failNext("chat.postMessage", { status: 429, retryAfter: 1 }, { status: 500 }, { status: 500 });
    const id = await slackRun("$ true", { channel: "C5" });
    const ts = await cardRef(id);
    const attempts = slack.calls.filter((c) => c.method === "chat.postMessage" && c.args.channel === "C5");
    expect(attempts.length).toBeGreaterThanOrEqual(4);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(950); // Retry-After: 1
    await waitForState(t, id, ["SUCCEEDED"]);
    await waitFor(() => finalReplies("C5").length === 1, { what: "terminal reply" });
    await waitFor(() => String(slack.message("C5", ts)?.text).startsWith("Succeeded"), {
      what: "final card",
    });
    expect(
      ok("chat.postMessage", (c) => c.args.channel === "C5" && !String(c.args.text).includes("<@")),
    ).toHaveLength(1);
    expect(finalReplies("C5")).toHaveLength(1);
  });

  it("a rate-limited channel does not delay another channel's card", async () => {
    await startWithNotifier();
    slack.failNext("chat.postMessage", { status: 429, retryAfter: 2 });
    const slow = await slackRun("$ true", { channel: "CSLOW" });
    const limited = await waitFor(() => slack.calls.find((c) => c.args.channel === "CSLOW"), { what: "429" });
    const fast = await slackRun("$ true", { channel: "CFAST" });
    await cardRef(fast);
    expect(ok("chat.postMessage", inChannel("CFAST"))).toHaveLength(1);
    expect(ok("chat.postMessage", inChannel("CSLOW"))).toHaveLength(0); // still waiting for its Retry-After
    await cardRef(slow);
    expect(ok("chat.postMessage", inChannel("CSLOW"))[0]!.at - limited.at).toBeGreaterThanOrEqual(1950);
  });

  it("dead-letters after the bounded attempts, logs it and shows it in /metrics", async () => {
    await startWithNotifier({ ...FAST, outbox: { ...FAST.outbox, maxAttempts: 3 } });
    slack.failNext("chat.postMessage", { status: 500 }, { status: 500 }, { status: 500 });
    const id = await slackRun("$ sleep 5", { channel: "C6" });
    await waitFor(async () => (await t.dispatch.store.listOutbox(id)).some((r) => r.state === "dead"), {
      what: "dead letter",
    });
    expect(
      slack.calls.filter((c) => c.method === "chat.postMessage" && c.args.channel === "C6"),
    ).toHaveLength(3);
    // The row is dead in the store a moment before the deliverer counts it: wait for both on /metrics.
    const metrics = await waitFor(
      async () => {
        const text = await fetch(`${t.url}/metrics`).then((r) => r.text());
        return /dispatch_notifier_deliveries_total\{kind="card",outcome="dead"\} 1/.test(text)
          ? text
          : undefined;
      },
      { what: "the dead delivery on /metrics" },
    );
    expect(metrics).toMatch(/dispatch_outbox_messages\{state="dead"\} 1/);
    // A permanent error is not retried at all.
    slack.failNext("chat.postMessage", { error: "channel_not_found" });
    const other = await slackRun("$ true", { channel: "C7" });
    await waitFor(async () => (await t.dispatch.store.listOutbox(other)).some((r) => r.state === "dead"), {
      what: "permanent error dead letter",
    });
    expect(slack.calls.filter((c) => c.method === "chat.postMessage" && c.args.channel === "C7").length).toBe(
      1,
    );
  });
});

describe("notifier: restarts and several instances", () => {
  /** A notifier of our own on the test Dispatch's store (the app's own notifier is not configured). */
  function notifier(owner: string, options: Partial<NotifierOptions>) {
    return new Notifier({
      runsApi: runs,
      store: t.dispatch.store,
      platforms: [
        slackNotifierPlatform({
          slack: new WebApiSlackPoster(slack.token, { apiUrl: slack.url, log }),
          store: t.dispatch.store,
          editIntervalMs: options.editIntervalMs?.slack ?? 1000,
        }),
      ],
      log,
      owner,
      options,
    });
  }

  async function startWithoutNotifier() {
    t = await startTestDispatch({ DISPATCH_POLL_INTERVAL_MS: "20" });
    runs = await inProcessRunsApiFor(t.dispatch.runService, t.dispatch.budgets, () => t.url, {
      ...NOTIFIER_PRINCIPAL,
      role: "member",
    });
    expect(t.dispatch.notifier).toBeUndefined();
  }

  it("killed mid-delivery and restarted: nothing lost, nothing duplicated", async () => {
    await startWithoutNotifier();
    const first = notifier("first", {
      ...FAST,
      // Long backoff: the first instance dies while it holds a claimed row between attempts. Its lease
      // outlives the time to the kill, so it cannot claim that row again itself before dying.
      outbox: { ...FAST.outbox, retryBaseMs: 60_000, retryMaxMs: 60_000, leaseMs: 2000 },
    });
    first.start();
    slack.failNext("chat.postMessage", { status: 500 });
    const a = await slackRun("$ true", { channel: "CA", mention: "1700000000.000010" });
    const b = await slackRun("$ true", { channel: "CB" });
    await waitFor(() => slack.calls.some((c) => c.method === "chat.postMessage"), { what: "first attempt" });
    await first.kill();
    const rowsAtKill = [...(await t.dispatch.store.listOutbox(a)), ...(await t.dispatch.store.listOutbox(b))];
    expect(rowsAtKill.some((r) => r.state === "sending")).toBe(true);
    await waitForState(t, a, ["SUCCEEDED"]);
    await waitForState(t, b, ["SUCCEEDED"]);

    const second = notifier("second", FAST);
    second.start();
    try {
      for (const [id, channel] of [
        [a, "CA"],
        [b, "CB"],
      ] as const) {
        const ts = await cardRef(id);
        await waitFor(() => String(slack.message(channel, ts)?.text).startsWith("Succeeded"), {
          what: `final card in ${channel}`,
        });
        await waitFor(() => finalReplies(channel).length === 1, { what: `terminal reply in ${channel}` });
        expect(
          ok("chat.postMessage", (c) => c.args.channel === channel && !String(c.args.text).includes("<@")),
        ).toHaveLength(1);
        await waitFor(
          async () =>
            (await t.dispatch.store.listOutbox(id)).every(
              (r) => r.state === "sent" || r.state === "superseded",
            ),
          { what: "outbox drained" },
        );
      }
      expect(finalReplies("CA")).toHaveLength(1);
      expect(finalReplies("CB")).toHaveLength(1);
      expect(ok("reactions.add")).toHaveLength(1);
    } finally {
      await second.stop();
    }
  });

  it("two notifier instances on one store never send the same message", async () => {
    await startWithoutNotifier();
    const one = notifier("one", FAST);
    const two = notifier("two", FAST);
    one.start();
    two.start();
    try {
      const ids: Array<[string, string]> = [];
      for (let i = 0; i < 6; i++) {
        const channel = `CX${i}`;
        ids.push([
          await slackRun(i % 2 ? "$ true" : "$ sleep 0.2", { channel, mention: `1700000001.00000${i}` }),
          channel,
        ]);
        one.poke();
        two.poke();
      }
      for (const [id, channel] of ids) {
        await waitForState(t, id, ["SUCCEEDED"]);
        await waitFor(() => finalReplies(channel).length >= 1, { what: `reply in ${channel}` });
        await waitFor(
          async () =>
            (await t.dispatch.store.listOutbox(id)).every(
              (r) => r.state === "sent" || r.state === "superseded",
            ),
          { what: "outbox drained" },
        );
      }
      let sentRows = 0;
      for (const [id, channel] of ids) {
        const rows = await t.dispatch.store.listOutbox(id);
        sentRows += rows.filter((r) => r.state === "sent").length;
        expect(finalReplies(channel)).toHaveLength(1);
        expect(
          ok("chat.postMessage", (c) => c.args.channel === channel && !String(c.args.text).includes("<@")),
        ).toHaveLength(1);
      }
      const sentCalls = slack.calls.filter((c) => (c as SlackCall & { ok?: boolean }).ok).length;
      expect(sentCalls).toBe(sentRows); // every Slack call is exactly one outbox row
      expect(ok("reactions.add")).toHaveLength(6);
    } finally {
      await Promise.all([one.stop(), two.stop()]);
    }
  });
});
