import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import type { SlackCall } from "../../support/fake-slack.ts";
import { CHANNEL, type SlackDispatch, startSlackDispatch, TEAM } from "./support.ts";

/**
 * Stalls are never silent: a run whose agent goes quiet for DISPATCH_STALL_AFTER_S gets its
 * status card edited to say so, with Retry; the note goes once the agent makes progress again; Retry
 * starts the same request again in the card's thread and cancels the stalled run.
 */

/** The agent: waits for `go-a` (quiet), makes steady progress, then waits for `go-c` (quiet again). */
const SCRIPT = [
  "$ while ! test -f go-a; do sleep 0.05; done",
  ...Array.from({ length: 15 }, () => "$ sleep 0.2"),
  "$ while ! test -f go-c; do sleep 0.05; done",
].join("\n");

const text = (call: SlackCall | Record<string, unknown> | undefined) =>
  JSON.stringify((call && "args" in call ? call.args : call) ?? {});
const saysStalled = (call: SlackCall | Record<string, unknown> | undefined) =>
  /No progress for/.test(text(call));
const hasRetry = (call: SlackCall | Record<string, unknown> | undefined) =>
  text(call).includes('"action_id":"dispatch_retry"');

describe("a stalled run's Slack card (DISPATCH_STALL_AFTER_S=1)", () => {
  let s: SlackDispatch;
  beforeAll(async () => {
    s = await startSlackDispatch({
      env: { DISPATCH_STALL_AFTER_S: "1" },
      // Card edits as soon as they are due: the test looks at every edit the card gets.
      dispatch: { notifier: { editIntervalMs: { slack: 50 } } },
    });
  });
  afterAll(() => s.stop());

  it("says 'no progress' with Retry, drops it on progress, and Retry restarts the request in the thread", async () => {
    const ack = await s.command({ text: SCRIPT, user_id: "U1" });
    expect(ack.status).toBe(200);
    const run = await waitFor(async () => (await s.runs()).find((r) => r.prompt === SCRIPT));
    const binding = await waitFor(async () => {
      const b = await s.t.dispatch.store.getThreadBinding(run.run_id);
      return b?.thread ? b : undefined;
    });
    const cardTs = binding.thread!;
    const workspace = join(s.t.dataDir, "workspaces", run.run_id);
    const cardEdits = () => s.fake.succeeded("chat.update").filter((c) => c.args.ts === cardTs);

    // Quiet past the threshold: the card says so, with Cancel and Retry.
    await waitFor(() => saysStalled(s.fake.message(CHANNEL, cardTs)), {
      what: "the card to say 'No progress for'",
      timeoutMs: 20_000,
    });
    const stalledCard = s.fake.message(CHANNEL, cardTs);
    expect(hasRetry(stalledCard)).toBe(true);
    expect(text(stalledCard)).toContain('"action_id":"dispatch_cancel"');
    expect((await s.t.api("GET", `/api/v1/agent/runs/${run.run_id}`)).body.state).toBe("INPROGRESS");

    // Progress again (events, while updated_at stays put): an edit drops the note and the Retry button.
    const stalledAt = cardEdits().findIndex((c) => saysStalled(c));
    await writeFile(join(workspace, "go-a"), "");
    await waitFor(
      () =>
        cardEdits()
          .slice(stalledAt + 1)
          .find((c) => !saysStalled(c) && !hasRetry(c)),
      {
        what: "an edit of the card without the note once the agent moves again",
        timeoutMs: 20_000,
      },
    );

    // Quiet again at go-c: the note is back; U2 clicks Retry.
    await waitFor(
      () => saysStalled(s.fake.message(CHANNEL, cardTs)) && hasRetry(s.fake.message(CHANNEL, cardTs)),
      {
        what: "the card to say 'No progress for' again",
        timeoutMs: 20_000,
      },
    );
    const click = await clickRetry(s, run.run_id, cardTs, "U2");
    expect(click.status).toBe(200);

    const retried = await waitFor(
      async () => (await s.runs()).find((r) => r.prompt === SCRIPT && r.run_id !== run.run_id),
      { what: "the retried run", timeoutMs: 15_000 },
    );
    await waitForState(s.t, run.run_id, ["CANCELLED"], 15_000);
    expect(retried.title).toBe(run.title);
    expect(retried.creator.uid).toContain("U2");
    const newBinding = await s.t.dispatch.store.getThreadBinding(retried.run_id);
    expect(newBinding).toMatchObject({
      platform: "slack",
      channel: CHANNEL,
      thread: cardTs,
      requester: "U2",
    });
    // The new run posts its own card in the same thread.
    const newCard = await waitFor(
      async () => (await s.t.dispatch.store.getCardState(retried.run_id))?.cardRef ?? undefined,
      { what: "the retried run's card", timeoutMs: 15_000 },
    );
    const posted = s.fake
      .succeeded("chat.postMessage")
      .find((c) => c.args.thread_ts === cardTs && text(c).includes(retried.run_id));
    expect(posted).toBeDefined();
    expect(newCard).not.toBe(cardTs);
    await waitFor(() => String(s.fake.message(CHANNEL, cardTs)?.text ?? "").includes("Cancelled by"), {
      what: "the stalled run's card to say who cancelled it",
      timeoutMs: 15_000,
    });

    await s.t.api("POST", `/api/v1/agent/runs/${retried.run_id}/cancel`);
  });
});

/** Clicks Retry on a status card, as Slack posts a block action (signed). */
function clickRetry(s: SlackDispatch, runId: string, cardTs: string, user: string) {
  const payload = {
    type: "block_actions",
    team: { id: TEAM, domain: "acme" },
    user: { id: user, username: user.toLowerCase(), team_id: TEAM },
    api_app_id: "A0APP",
    trigger_id: `${Date.now()}.retry`,
    container: { type: "message", message_ts: cardTs, channel_id: CHANNEL, is_ephemeral: false },
    channel: { id: CHANNEL, name: "dev" },
    message: { type: "message", ts: cardTs, text: "status card" },
    response_url: "https://hooks.slack.invalid/actions/1",
    actions: [
      {
        type: "button",
        action_id: "dispatch_retry",
        block_id: "dispatch_run_actions",
        value: runId,
        text: { type: "plain_text", text: "Retry" },
        action_ts: `${Date.now() / 1000}`,
      },
    ],
  };
  const form = new URLSearchParams({ payload: JSON.stringify(payload) });
  return s.post(form.toString(), "application/x-www-form-urlencoded");
}
