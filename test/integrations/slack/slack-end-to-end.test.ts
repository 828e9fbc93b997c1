import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/dispatch.ts";
import { newAdminKey } from "../../support/server-process.ts";
import { CHANNEL, nextTs, type SlackDispatch, startSlackDispatch } from "./support.ts";

describe("end to end: slash command → status card → terminal reply (real executor, scripted harness)", () => {
  let s: SlackDispatch;
  beforeAll(async () => {
    s = await startSlackDispatch();
  });
  afterAll(() => s.stop());

  it("runs `$ echo hi` and replies once in the card's thread, mentioning the requester", async () => {
    const ack = await s.command({ text: "$ echo hi", user_id: "U1" });
    expect(ack.status).toBe(200);
    const run = await waitFor(async () => (await s.runs()).find((r) => r.prompt === "$ echo hi"));
    const binding = await waitFor(async () => {
      const b = await s.t.dispatch.store.getThreadBinding(run.run_id);
      return b?.thread ? b : undefined;
    });
    const card = s.fake.message(CHANNEL, binding.thread!);
    expect(String(card?.text)).toContain("$ echo hi");

    const replies = () =>
      s.fake.succeeded("chat.postMessage").filter((c) => c.args.thread_ts === binding.thread);
    const reply = await waitFor(() => replies()[0], { what: "the terminal reply", timeoutMs: 15_000 });
    expect(String(reply.args.text)).toContain("<@U1>");
    expect(String(reply.args.text)).toContain("Succeeded");
    expect((await s.t.api("GET", `/api/v1/agent/runs/${run.run_id}`)).body.state).toBe("SUCCEEDED");
    const events = (await s.t.api("GET", `/api/v1/agent/runs/${run.run_id}/events`)).body.events;
    expect(JSON.stringify(events)).toContain("hi");
    // Once: nothing else is posted in that thread afterwards.
    await s.t.dispatch.notifier?.tick();
    expect(replies()).toHaveLength(1);
  });

  it("the Cancel button's effect reaches the card: 'Cancelled by <who>'", async () => {
    await s.command({ text: "$ sleep 30", user_id: "U2" });
    const run = await waitFor(async () => (await s.runs()).find((r) => r.prompt === "$ sleep 30"));
    const binding = await waitFor(async () => {
      const b = await s.t.dispatch.store.getThreadBinding(run.run_id);
      return b?.thread ? b : undefined;
    });
    await s.clickCancel(run.run_id, { user: "U2" });
    await waitFor(
      () => JSON.stringify(s.fake.message(CHANNEL, binding.thread!)).includes("Cancelled by user-U2"),
      { what: "the card to say Cancelled by user-U2", timeoutMs: 15_000 },
    );
  });
});

describe("dedupe is persisted", () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it("a retry delivered after a restart is still recognised", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "dispatch-slack-restart-"));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const env = {
      DISPATCH_DATA_DIR: dataDir,
      DISPATCH_ADMIN_API_KEY: newAdminKey(),
      DISPATCH_MAX_CONCURRENT_RUNS: "0",
    };
    const ts = nextTs();
    const first = await startSlackDispatch({ env });
    await first.mention({ text: "<@UBOT> $ echo before restart", ts }, { eventId: "EvRESTART" });
    await waitFor(async () => (await first.runs()).length === 1);
    await first.t.dispatch.surfaces.get("slack")!.inbound!.idle();
    await first.stop();

    const second = await startSlackDispatch({ env });
    cleanup.push(() => second.stop());
    const retry = await second.mention(
      { text: "<@UBOT> $ echo before restart", ts },
      { eventId: "EvRESTART", headers: { "x-slack-retry-num": "2", "x-slack-retry-reason": "http_timeout" } },
    );
    expect(retry.status).toBe(200);
    await second.t.dispatch.surfaces.get("slack")!.inbound!.idle();
    expect(await second.runs()).toHaveLength(1);
    expect(second.fake.calls.filter((c) => c.method === "reactions.add")).toEqual([]);
  });
});
