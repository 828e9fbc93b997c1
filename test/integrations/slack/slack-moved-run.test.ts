import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor } from "../../support/dispatch.ts";
import { newAdminKey } from "../../support/server-process.ts";
import { CHANNEL, SIGNING_SECRET, type SlackDispatch, startSlackDispatch } from "./support.ts";

/**
 * A run asked for in Slack moves to another worker (docs/architecture.md, "Runs survive their worker"):
 * the first Dispatch stops (a deploy) while the agent sleeps, a second one on the same database (another
 * data directory, as another machine) continues it. Slack sees one run: one status card, edited to the
 * end, and one final reply, never a second card or an error.
 */
describe("a Slack run that moves to another worker", () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("keeps one card and one final reply", async () => {
    const shared = await mkdtemp(join(tmpdir(), "dispatch-slack-moved-"));
    cleanups.push(() => rm(shared, { recursive: true, force: true }));
    const env = {
      DATABASE_URL: `sqlite:${join(shared, "dispatch.db")}`,
      DISPATCH_ADMIN_API_KEY: newAdminKey(),
      DISPATCH_SHUTDOWN_GRACE_MS: "200",
      DISPATCH_POLL_INTERVAL_MS: "100",
    };
    const first: SlackDispatch = await startSlackDispatch({
      env: { ...env, DISPATCH_DATA_DIR: join(shared, "first") },
    });
    cleanups.push(() => first.stop());

    await first.command({ text: "$ echo one > one.txt\n$ sleep 5\n$ cat one.txt", user_id: "U1" });
    const run = await waitFor(async () => (await first.runs())[0]);
    const binding = await waitFor(async () => {
      const b = await first.t.dispatch.store.getThreadBinding(run.run_id);
      return b?.thread ? b : undefined;
    });
    const events = async (t: TestDispatch) =>
      (await t.api("GET", `/api/v1/agent/runs/${run.run_id}/events?limit=1000`)).body.events as Array<{
        type: string;
        data: Record<string, unknown>;
      }>;
    await waitFor(
      async () => (await events(first.t)).some((e) => e.type === "tool_call" && e.data.command === "sleep 5"),
      {
        what: "the sleep",
      },
    );
    await first.t.stop(); // the deploy; the fake Slack stays

    const settings = join(shared, "dispatch.config.yaml");
    await writeFile(settings, "slack: {}\n");
    const second = await startTestDispatch({
      ...env,
      DISPATCH_DATA_DIR: join(shared, "second"),
      SLACK_BOT_TOKEN: first.fake.token,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: first.fake.url,
      DISPATCH_CONFIG_FILE: settings,
    });
    cleanups.push(() => second.stop());

    const replies = () =>
      first.fake.succeeded("chat.postMessage").filter((c) => c.args.thread_ts === binding.thread);
    const reply = await waitFor(() => replies()[0], { what: "the final reply", timeoutMs: 60_000 });
    expect(String(reply.args.text)).toContain("Succeeded");
    const transcript = await events(second);
    expect(transcript.filter((e) => e.type === "state").map((e) => e.data.state)).toEqual([
      "QUEUED",
      "INPROGRESS",
      "SUCCEEDED",
    ]);
    expect(transcript.findLast((e) => e.type === "tool_result")?.data.output).toBe("one\n");
    // One card: posted once (a top-level message in the channel), edited to its end.
    const cards = first.fake.succeeded("chat.postMessage").filter((c) => c.args.thread_ts === undefined);
    expect(cards).toHaveLength(1);
    await waitFor(() => JSON.stringify(first.fake.message(CHANNEL, binding.thread!)).includes("Succeeded"), {
      what: "the card to say Succeeded",
    });
    await second.dispatch.notifier?.tick();
    expect(replies()).toHaveLength(1);
  }, 120_000);
});
