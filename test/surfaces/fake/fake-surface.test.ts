import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../../support/dispatch.ts";
import { FakeChat, fakeChatSurface, PLATFORM, sign } from "./surface.ts";

/**
 * A surface is a folder: this one lives only here, is registered through startDispatch's `surfaces` (as a
 * line of src/surfaces/registry.ts would), and carries a run from its webhook to its thread's card and
 * final reply through the same inbox, run service, access rule and notifier as Slack and GitHub.
 */
describe("a surface added as a folder", () => {
  let t: TestDispatch;
  const chat = new FakeChat();

  beforeAll(async () => {
    t = await startTestDispatch(
      { DISPATCH_POLL_INTERVAL_MS: "50" },
      { surfaces: [fakeChatSurface(chat)], notifier: { tickMs: 50, outbox: { pollMs: 50 } } },
    );
  });
  afterAll(() => t?.stop());

  const deliver = (event: object, signature?: string) => {
    const body = JSON.stringify(event);
    return fetch(`${t.url}/fakechat/events`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-fakechat-signature": signature ?? sign(body) },
      body,
    });
  };

  it("accepts a signed delivery once, runs it, and answers in its thread with a card and a final reply", async () => {
    const event = { id: "ev-1", thread: "th-1", user: "ada", text: "$ echo from a new surface" };
    expect((await deliver(event, "00")).status).toBe(401);
    expect((await deliver(event)).status).toBe(202);
    expect((await deliver(event)).status).toBe(202); // a redelivery changes nothing
    await t.dispatch.surfaces.get(PLATFORM)!.inbound!.idle();

    const runs = (await t.api("GET", "/api/v1/agent/runs")).body.runs;
    expect(runs).toHaveLength(1);
    expect(runs[0].source).toBe("FAKECHAT");
    const run = await waitForState(t, runs[0].run_id, ["SUCCEEDED"], 30_000);
    expect((await t.dispatch.store.getThreadBinding(run.run_id))?.platform).toBe(PLATFORM);

    await waitFor(() => chat.messages.find((m) => m.kind === "reply"), { what: "the final reply" });
    const card = chat.messages.find((m) => m.kind === "card")!;
    await waitFor(() => card.text.startsWith("SUCCEEDED"), { what: "the card to say it succeeded" });
    expect(card.thread).toBe("th-1");
    expect(chat.messages.filter((m) => m.kind === "card")).toHaveLength(1); // edited in place
    expect(chat.messages.filter((m) => m.kind === "reply").map((m) => m.text)).toEqual(["@ada succeeded"]);
  });
});
