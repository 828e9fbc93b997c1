import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { Browser, csrfOf } from "../../web/browser.ts";
import { CHANNEL, type SlackDispatch, startSlackDispatch, TEAM } from "./support.ts";

/**
 * The audit log names the Slack user who acted (docs/api.md, "Audit log"): who started a run, who clicked
 * its Cancel button, who changed the channel's settings — not the Slack app's service account.
 */

// biome-ignore lint/suspicious/noExplicitAny: API bodies are asserted field by field
type Json = any;

let s: SlackDispatch;
beforeAll(async () => {
  s = await startSlackDispatch();
});
afterAll(async () => {
  await s?.stop();
});

async function audit(query: string): Promise<Json[]> {
  const res = await s.t.api("GET", `/api/v1/audit-events?${query}`);
  expect(res.status, res.text).toBe(200);
  return res.body.events;
}

describe("the audit log of Slack actions", () => {
  it("lists a cancel by the Slack user who clicked it, and the run's start by who asked", async () => {
    await s.command({ text: "$ sleep 60", user_id: "U1" });
    const run = await waitFor(async () => (await s.runs()).find((r) => r.prompt === "$ sleep 60"));
    await waitForState(s.t, run.run_id, ["INPROGRESS"], 30_000);
    const click = await s.clickCancel(run.run_id, { user: "U2" });
    expect(click.status).toBe(200);
    await waitForState(s.t, run.run_id, ["CANCELLED"], 30_000);

    const [cancel] = await waitFor(async () => {
      const found = await audit("action=run.cancelled");
      return found.length ? found : undefined;
    });
    expect(cancel).toMatchObject({
      actor: `slack:${TEAM}:U2`,
      action: "run.cancelled",
      target: run.run_id,
      details: { via: "slack-bot" },
    });
    expect(cancel.actor_name).toBeTruthy();
    const byU1 = await audit(`actor=${encodeURIComponent(`slack:${TEAM}:U1`)}`);
    expect(byU1.map((e) => [e.action, e.target])).toEqual([["run.created", run.run_id]]);
    expect(byU1[0].details).toMatchObject({ source: "SLACK", via: "slack-bot" });
  });

  it("lists channel settings changed with /agent agent and /agent repo", async () => {
    await s.command({ text: "agent scripted", user_id: "U3" });
    await s.ephemeral("U3", 1);
    await s.command({ text: "repo none", user_id: "U4" });
    await s.ephemeral("U4", 1);
    const agent = await audit("action=channel.agent_set");
    expect(agent).toEqual([
      expect.objectContaining({
        actor: `slack:${TEAM}:U3`,
        target: `slack:${TEAM}:${CHANNEL}`,
        details: { agent: "scripted" },
      }),
    ]);
    const repo = await audit("action=channel.repository_set");
    expect(repo).toEqual([
      expect.objectContaining({ actor: `slack:${TEAM}:U4`, details: { repository: null } }),
    ]);
  });

  it("lists a Slack user's web sign-in; the audit page is for admins only", async () => {
    await s.command({ text: "login", user_id: "U5" });
    const link = /<(http[^|>]+)\|Sign in to Dispatch>/.exec(await s.ephemeral("U5", 1))![1]!;
    const browser = new Browser(s.t.url);
    const confirm = await browser.get(link);
    expect((await browser.post(new URL(link).pathname, { csrf: csrfOf(confirm) })).status).toBe(303);
    const [signIn] = await audit("action=session.signed_in");
    expect(signIn).toMatchObject({ actor: `slack:${TEAM}:U5`, details: { method: "link", role: "member" } });

    const page = await browser.get("/audit");
    expect(page.status).toBe(403);
    expect(page.html).toContain("The audit log is for the team's admins");
    expect(page.html).not.toContain("run.cancelled");
  });
});
