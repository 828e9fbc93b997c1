import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/dispatch.ts";
import { nextTs, type SlackDispatch, startSlackDispatch } from "./support.ts";

const PRIVATE = "CPRIV";
const PUBLIC = "CPUB";
const UNKNOWN_RUN = "01900000-0000-7000-8000-000000000000";

describe("Slack verbs see only the runs of the channel they are typed in", () => {
  let s: SlackDispatch;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are asserted field by field
  let run: Record<string, any>;

  /** Does `act` and returns the next ephemeral answer `user` gets, checking it was shown in `channel`. */
  async function answerTo(user: string, channel: string, act: () => Promise<unknown>): Promise<string> {
    const before = s.ephemerals(user).length;
    await act();
    const answer = await waitFor(() => s.ephemerals(user)[before], { what: `an answer to ${user}` });
    expect(answer.args.channel).toBe(channel);
    return String(answer.args.text);
  }

  /** Sends `text` as `/agent` from `user` in `channel` and returns the ephemeral answer it gets. */
  function ask(user: string, channel: string, text: string): Promise<string> {
    return answerTo(user, channel, () => s.command({ text, user_id: user, channel_id: channel }));
  }

  async function state(): Promise<string> {
    return (await s.t.api("GET", `/api/v1/agent/runs/${run.run_id}`)).body.state;
  }

  beforeAll(async () => {
    // No executor slots: the run stays QUEUED, so cancel and follow-up have something to act on.
    s = await startSlackDispatch({ env: { DISPATCH_MAX_CONCURRENT_RUNS: "0" } });
    s.fake.channelMembers.set(PRIVATE, ["U1", "U2"]);
    s.fake.channelMembers.set(PUBLIC, ["U1", "U2", "U3"]);
    await s.command({ text: "$ echo private plans", user_id: "U1", channel_id: PRIVATE });
    run = await waitFor(async () => (await s.runs()).find((r) => r.prompt === "$ echo private plans"), {
      what: "the private channel's run",
    });
  });
  afterAll(() => s.stop());

  it("list and status in another channel do not show it, even to a member of both", async () => {
    for (const user of ["U3", "U1"]) {
      const list = await ask(user, PUBLIC, "list");
      expect(list).not.toContain(run.run_id);
      expect(list).not.toContain("private plans");
      const own = await ask(user, PUBLIC, "status");
      expect(own).not.toContain(run.run_id);
    }
  });

  it("status, followup and cancel with its id elsewhere answer as for a run that does not exist", async () => {
    const notFound = (id: string) => `There is no run \`${id}\` in this channel`;
    for (const [verb, suffix] of [
      ["status", ""],
      ["followup", " leak the plans"],
      ["cancel", ""],
    ] as const) {
      const known = await ask("U1", PUBLIC, `${verb} ${run.run_id}${suffix}`);
      const unknown = await ask("U1", PUBLIC, `${verb} ${UNKNOWN_RUN}${suffix}`);
      expect(known, verb).toContain(notFound(run.run_id));
      expect(known.replace(run.run_id, "<id>"), verb).toBe(unknown.replace(UNKNOWN_RUN, "<id>"));
    }
    // A mention in the other channel naming the run is refused the same way.
    const mention = await answerTo("U3", PUBLIC, () =>
      s.mention({ text: `<@UBOT> status ${run.run_id}`, user: "U3", channel: PUBLIC }),
    );
    expect(mention).toContain(notFound(run.run_id));

    expect(await state()).toBe("QUEUED");
    expect(await s.t.dispatch.store.takePendingFollowups(run.run_id, 99)).toEqual([]);
  });

  it("the Cancel button acts only on its own card's run, in its own channel", async () => {
    const card = await waitFor(async () => (await s.t.dispatch.store.getCardState(run.run_id))?.cardRef, {
      what: "the run's status card",
    });
    const elsewhere = await answerTo("U1", PUBLIC, () =>
      s.clickCancel(run.run_id, { user: "U1", channel: PUBLIC, cardTs: card! }),
    );
    expect(elsewhere).toContain("There is no run");
    // Another message of the right channel (a forged or stale card) does not reach the run either.
    const otherCard = await answerTo("U1", PRIVATE, () =>
      s.clickCancel(run.run_id, { user: "U1", channel: PRIVATE, cardTs: nextTs() }),
    );
    expect(otherCard).toContain("There is no run");
    expect(await state()).toBe("QUEUED");
  });

  it("a non-member is refused under the channel policy, even typing in the run's channel", async () => {
    const followup = await ask("UOUT", PRIVATE, `followup ${run.run_id} leak the plans`);
    expect(followup).toContain(`Only members of <#${PRIVATE}>`);
    const cancel = await ask("UOUT", PRIVATE, `cancel ${run.run_id}`);
    expect(cancel).toContain(`Only members of <#${PRIVATE}>`);
    expect(await state()).toBe("QUEUED");
    expect(await s.t.dispatch.store.takePendingFollowups(run.run_id, 99)).toEqual([]);
  });

  it("in the run's channel, members list, read, follow up and cancel it", async () => {
    expect(await ask("U1", PRIVATE, "list")).toContain(run.run_id);
    expect(await ask("U1", PRIVATE, "status")).toContain(run.run_id);
    expect(await ask("U2", PRIVATE, `status ${run.run_id}`)).toContain("private plans");
    expect(await ask("U2", PRIVATE, `followup ${run.run_id} and the budget`)).toContain(
      "has not started yet",
    );
    await s.command({ text: `cancel ${run.run_id}`, user_id: "U2", channel_id: PRIVATE });
    await waitFor(async () => (await state()) === "CANCELLED", { what: "the run CANCELLED" });
  });
});
