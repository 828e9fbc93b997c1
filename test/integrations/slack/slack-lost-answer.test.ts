import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/dispatch.ts";
import { CHANNEL, type SlackDispatch, startSlackDispatch } from "./support.ts";

// A post whose answer is lost (a timeout, a crash before the answer was recorded) may still have been
// posted: the retry finds it by the message metadata Dispatch attaches, and posts nothing twice.

describe("a Slack post whose answer was lost", () => {
  let s: SlackDispatch;
  beforeAll(async () => {
    s = await startSlackDispatch({ env: { DISPATCH_MAX_CONCURRENT_RUNS: "0" } });
  });
  afterAll(() => s.stop());

  const postsFor = (runId: string) =>
    s.fake.calls.filter(
      (c) =>
        c.method === "chat.postMessage" &&
        (c.args.metadata as { event_payload?: { run_id?: string } } | undefined)?.event_payload?.run_id ===
          runId,
    );

  it("the status card is posted once, and the retry takes the posted card as the run's card", async () => {
    s.fake.loseAnswer("chat.postMessage");
    const ack = await s.command({ text: "$ echo card once", user_id: "U1" });
    expect(ack.status).toBe(200);
    const run = await waitFor(async () => (await s.runs()).find((r) => r.prompt === "$ echo card once"));
    const cardRef = await waitFor(async () => (await s.t.dispatch.store.getCardState(run.run_id))?.cardRef, {
      what: "the card to be recorded",
      timeoutMs: 15_000,
    });

    const posts = postsFor(run.run_id);
    expect(posts).toHaveLength(1);
    // The one message Slack holds is the card: at the channel's top level, found again by its metadata.
    const card = s.fake.message(CHANNEL, cardRef);
    expect(String(card?.text)).toContain("$ echo card once");
    expect(card?.thread_ts).toBeUndefined();
    expect(s.fake.calls.some((c) => c.method === "conversations.history")).toBe(true);
  });
});
