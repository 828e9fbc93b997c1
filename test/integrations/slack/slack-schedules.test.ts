import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/dispatch.ts";
import { CHANNEL, type SlackDispatch, startSlackDispatch, TEAM } from "./support.ts";

/**
 * `/agent schedule|schedules|unschedule` against a live Dispatch with the Slack app, a FakeSlack and a
 * scheduler on a test clock: what people are answered, who may do what, and a scheduled run's status
 * card posted in the channel the schedule was made in.
 */
const OTHER = "COTHER";
const BLOCKED = "CBLOCKED";
let clock = Date.parse("2030-01-01T00:00:10.000Z"); // a Tuesday
let s: SlackDispatch;

beforeAll(async () => {
  s = await startSlackDispatch({
    settings: `slack:\n  allowed_channels: [${CHANNEL}, ${OTHER}]\n`,
    dispatch: { scheduler: { now: () => clock, maxSleepMs: 50 } },
  });
  s.fake.channelMembers.set(OTHER, ["U1", "U2"]);
});
afterAll(() => s?.stop());

/** Sends `text` as `/agent` from `user` in `channel` and returns the ephemeral answer it gets there. */
async function ask(text: string, user = "U1", channel = CHANNEL): Promise<string> {
  const before = s.ephemerals(user).length;
  const ack = await s.command({ text, user_id: user, channel_id: channel });
  expect(ack.status).toBe(200);
  const answer = await waitFor(() => s.ephemerals(user)[before], { what: `an answer to "${text}"` });
  expect(answer.args.channel).toBe(channel);
  return String(answer.args.text);
}

// biome-ignore lint/suspicious/noExplicitAny: API responses are asserted field by field
async function schedules(): Promise<Array<Record<string, any>>> {
  return (await s.t.api("GET", "/api/v1/agent/schedules")).body.schedules;
}

describe("Slack schedule verbs", () => {
  it("help lists them", async () => {
    const help = await ask("help");
    expect(help).toContain('/agent schedule "<cron>" [name:<name>] <prompt>');
    expect(help).toContain("/agent schedules");
    expect(help).toContain("/agent unschedule <name>");
  });

  it("schedule makes a schedule named after its prompt, reporting to the channel, and says when it runs", async () => {
    const answer = await ask('schedule "0 9 * * 1-5" Summarise open PRs model=scripted');
    expect(answer).toContain("Scheduled *summarise-open-prs*: `0 9 * * 1-5` UTC");
    // Slack renders the date token in each viewer's time zone; the fallback is UTC.
    expect(answer).toContain(`<!date^${Date.parse("2030-01-01T09:00:00Z") / 1000}^`);
    expect(answer).toContain("|2030-01-01 09:00 UTC>");
    const created = (await schedules()).find((x) => x.name === "summarise-open-prs");
    expect(created).toMatchObject({
      cron_schedule: "0 9 * * 1-5",
      prompt: "Summarise open PRs",
      agent_config: { model_id: "scripted" },
      enabled: true,
      created_by: { type: "user", uid: `slack:${TEAM}:U1` },
    });
    // The same words from someone else: the name is taken, the next one is free.
    expect(await ask('schedule "0 9 * * 1-5" Summarise open PRs', "U2")).toContain(
      "Scheduled *summarise-open-prs-2*",
    );
  });

  it("name: names it; a taken name, an invalid cron and an unquoted cron are refused with the reason", async () => {
    expect(await ask('schedule "30 7 * * *" name:nightly-report Write the report')).toContain(
      "Scheduled *nightly-report*",
    );
    const taken = await ask('schedule "0 8 * * *" name:nightly-report Something else');
    expect(taken).toContain('this team has a schedule named "nightly-report"');
    expect(taken).toContain("Choose another `name:`");
    const fields = await ask('schedule "0 9 * *" Check the build');
    expect(fields).toContain("Could not schedule it: cron_schedule:");
    expect(fields).toContain("give the 5 fields minute hour day-of-month month day-of-week");
    expect(await ask('schedule "61 * * * *" Check the build')).toContain("is not a valid cron expression");
    expect(await ask("schedule 0 9 * * * Check the build")).toContain("put the cron expression in quotes");
    expect((await schedules()).map((x) => x.name)).not.toContain("check-the-build");
  });

  it("schedules lists the channel's own, with their next run or paused", async () => {
    expect(await ask('schedule "0 12 * * *" name:other-lunch Order lunch', "U1", OTHER)).toContain(
      "Scheduled *other-lunch*",
    );
    const nightly = (await schedules()).find((x) => x.name === "nightly-report")!;
    await s.t.api("POST", `/api/v1/agent/schedules/${nightly.id}/pause`);
    const list = await ask("schedules");
    expect(list).toContain("*nightly-report* — `30 7 * * *` UTC · paused");
    expect(list).toMatch(
      /\*summarise-open-prs\* — `0 9 \* \* 1-5` UTC · next <!date\^\d+\^[^|]+\|2030-01-01 09:00 UTC>/,
    );
    expect(list).not.toContain("other-lunch");
    const elsewhere = await ask("schedules", "U1", OTHER);
    expect(elsewhere).toContain("other-lunch");
    expect(elsewhere).not.toContain("nightly-report");
    // A mention answers the same, in the thread of the message.
    const before = s.ephemerals("U2").length;
    await s.mention({ text: "<@UBOT> schedules", user: "U2", channel: OTHER });
    const mentioned = await waitFor(() => s.ephemerals("U2")[before], { what: "the mention's answer" });
    expect(String(mentioned.args.text)).toContain("other-lunch");
  });

  it("unschedule deletes only a schedule of this channel, and only for a member of it", async () => {
    const notHere = await ask("unschedule other-lunch");
    expect(notHere).toBe(
      await ask("unschedule no-such-schedule").then((t) => t.replace("no-such-schedule", "other-lunch")),
    );
    expect((await schedules()).map((x) => x.name)).toContain("other-lunch");
    // U3 is not a member of OTHER (the channel policy, as for cancel).
    expect(await ask("unschedule other-lunch", "U3", OTHER)).toContain("Only members of <#COTHER>");
    expect((await schedules()).map((x) => x.name)).toContain("other-lunch");
    expect(await ask("unschedule other-lunch", "U2", OTHER)).toContain("Deleted the schedule *other-lunch*");
    expect((await schedules()).map((x) => x.name)).not.toContain("other-lunch");
  });

  it("a channel outside the allowlist is refused before anything is made", async () => {
    const refused = await ask('schedule "0 9 * * *" name:blocked Do it', "U1", BLOCKED);
    expect(refused).toContain("not enabled in this channel");
    expect(await ask("schedules", "U1", BLOCKED)).toContain("not enabled in this channel");
    expect((await schedules()).map((x) => x.name)).not.toContain("blocked");
  });
});

describe("a schedule made in Slack reports to its channel", () => {
  it("its run posts the status card in the channel and replies to the requester when it finishes", async () => {
    expect(await ask('schedule "* * * * *" name:ticker $ echo scheduled hello')).toContain(
      "Scheduled *ticker*",
    );
    const ticker = (await schedules()).find((x) => x.name === "ticker")!;
    clock += 60_000; // the next minute: the scheduler fires it
    const run = await waitFor(
      async () =>
        (await s.t.api("GET", `/api/v1/agent/runs?schedule_id=${ticker.id}`)).body.runs[0] as
          | Record<string, unknown>
          | undefined,
      { what: "the scheduled run" },
    );
    expect(run).toMatchObject({ source: "SCHEDULED_AGENT", title: "ticker" });
    // The status card: a new message of the channel (no thread), which becomes the run's thread.
    const binding = await waitFor(
      async () => {
        const b = await s.t.dispatch.store.getThreadBinding(String(run.run_id));
        return b?.thread ? b : undefined;
      },
      { what: "the status card", timeoutMs: 15_000 },
    );
    expect(binding).toMatchObject({ platform: "slack", workspace: TEAM, channel: CHANNEL, requester: "U1" });
    const card = s.fake
      .succeeded("chat.postMessage")
      .find(
        (c) => c.args.channel === CHANNEL && !c.args.thread_ts && JSON.stringify(c.args).includes("ticker"),
      );
    expect(card).toBeDefined();
    const reply = await waitFor(
      () => s.fake.succeeded("chat.postMessage").find((c) => c.args.thread_ts === binding.thread),
      { what: "the terminal reply", timeoutMs: 15_000 },
    );
    expect(String(reply.args.text)).toContain("<@U1>");
    expect(String(reply.args.text)).toContain("Succeeded");
    await ask("unschedule ticker");
  });
});

describe("schedule limits", () => {
  it("a schedule over the person's limit is refused with the limit and what to do, and not made", async () => {
    const limited = await startSlackDispatch({ env: { DISPATCH_SCHEDULES_PER_CREATOR: "1" } });
    const say = async (text: string) => {
      const before = limited.ephemerals("U5").length;
      await limited.command({ text, user_id: "U5" });
      const answer = await waitFor(() => limited.ephemerals("U5")[before], {
        what: `an answer to "${text}"`,
      });
      return String(answer.args.text);
    };
    try {
      expect(await say('schedule "0 9 * * *" name:first Do it')).toContain("Scheduled *first*");
      const refused = await say('schedule "0 9 * * *" name:second Do it again');
      expect(refused).toContain("Could not schedule it: you have 1 schedule in this team");
      expect(refused).toContain("DISPATCH_SCHEDULES_PER_CREATOR");
      const names = (await limited.t.api("GET", "/api/v1/agent/schedules")).body.schedules.map(
        (x: { name: string }) => x.name,
      );
      expect(names).toEqual(["first"]);
    } finally {
      await limited.stop();
    }
  });
});

describe("remote mode (the bot fronts another Dispatch)", () => {
  it("says schedules cannot be made from Slack here, and makes none", async () => {
    const remote = await startSlackDispatch({
      env: { DISPATCH_RUN_SERVICE_URL: s.t.url, DISPATCH_RUN_SERVICE_API_KEY: s.t.key },
    });
    try {
      for (const text of [
        'schedule "0 9 * * *" name:remote-one Do it',
        "schedules",
        "unschedule summarise-open-prs",
      ]) {
        const before = remote.ephemerals("U1").length;
        await remote.command({ text, user_id: "U1" });
        const answer = await waitFor(() => remote.ephemerals("U1")[before], {
          what: `an answer to "${text}"`,
        });
        expect(String(answer.args.text)).toContain("Schedules cannot be made from Slack here");
      }
      const names = (await schedules()).map((x) => x.name);
      expect(names).not.toContain("remote-one");
      expect(names).toContain("summarise-open-prs");
    } finally {
      await remote.stop();
    }
  });
});
