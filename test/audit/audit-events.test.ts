import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { Browser, signInWithKey } from "../web/browser.ts";

/**
 * GET /api/v1/audit-events (docs/api.md, "Audit log"): what people and programs did, written where they
 * did it — the run API, identities, webhooks, keys, sign-ins — listed newest first for admin keys, with
 * filters and keyset pages.
 */

// biome-ignore lint/suspicious/noExplicitAny: API bodies are asserted field by field
type Json = any;

let t: TestDispatch;
let runId: string;
let started: string;

beforeAll(async () => {
  t = await startTestDispatch({ DISPATCH_WEBHOOK_ALLOW_PRIVATE: "true" });
  started = new Date().toISOString();
  runId = (await t.api("POST", "/api/v1/agent/runs", { prompt: "$ sleep 60" })).body.run_id;
  await waitForState(t, runId, ["INPROGRESS"], 30_000);
  expect(
    (await t.api("POST", `/api/v1/agent/runs/${runId}/followups`, { message: "$ echo more" })).status,
  ).toBe(200);
  expect((await t.api("POST", `/api/v1/agent/runs/${runId}/cancel`)).status).toBe(200);
  const identity = (await t.api("POST", "/api/v1/agent/identities", { name: "Reviewer" })).body;
  await t.api("PUT", `/api/v1/agent/identities/${identity.uid}`, { description: "Reviews" });
  await t.api("DELETE", `/api/v1/agent/identities/${identity.uid}`);
  const hook = (await t.api("POST", "/api/v1/webhooks", { url: "http://127.0.0.1:9/hooks" })).body;
  await t.api("DELETE", `/api/v1/webhooks/${hook.id}`);
}, 60_000);

afterAll(async () => {
  await t?.stop();
});

async function audit(query = ""): Promise<Json> {
  const res = await t.api("GET", `/api/v1/audit-events${query}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

describe("GET /api/v1/audit-events", () => {
  it("lists what was done, newest first, naming who did it and to what", async () => {
    const { events } = await audit(`?since=${encodeURIComponent(started)}`);
    expect(events.map((e: Json) => e.action)).toEqual([
      "webhook.deleted",
      "webhook.created",
      "identity.deleted",
      "identity.updated",
      "identity.created",
      "run.cancelled",
      "run.followed_up",
      "run.created",
    ]);
    for (const e of events) expect(e).toMatchObject({ actor: "admin", actor_name: "Admin" });
    const byAction = Object.fromEntries(events.map((e: Json) => [e.action, e]));
    expect(byAction["run.created"]).toMatchObject({ target: runId, details: { source: "API" } });
    expect(byAction["run.cancelled"].target).toBe(runId);
    expect(byAction["identity.updated"].details).toEqual({ changed: ["description"] });
    expect(byAction["webhook.created"].details).toMatchObject({ url: "http://127.0.0.1:9/hooks" });
    expect(JSON.stringify(events)).not.toContain("whsec_");
  });

  it("filters by actor, action and time, and pages with a cursor", async () => {
    const cancels = await audit("?action=run.cancelled");
    expect(cancels.events.map((e: Json) => e.target)).toEqual([runId]);
    expect((await audit("?actor=nobody")).events).toEqual([]);
    expect(
      (await audit(`?until=${encodeURIComponent(started)}`)).events.every((e: Json) => e.at < started),
    ).toBe(true);

    const first = await audit(`?since=${encodeURIComponent(started)}&limit=3`);
    expect(first.events).toHaveLength(3);
    expect(first.page_info.has_next_page).toBe(true);
    const seen = [...first.events];
    let cursor = first.page_info.next_cursor;
    while (cursor) {
      const next = await audit(`?since=${encodeURIComponent(started)}&limit=3&cursor=${cursor}`);
      seen.push(...next.events);
      cursor = next.page_info.next_cursor;
    }
    expect(seen.map((e) => e.id)).toEqual(
      (await audit(`?since=${encodeURIComponent(started)}`)).events.map((e: Json) => e.id),
    );
  });

  it("records a retry from the run page as a retry of that run, by who pressed it", async () => {
    const failed = (await t.api("POST", "/api/v1/agent/runs", { prompt: "$ exit 4" })).body.run_id;
    await waitForState(t, failed, ["FAILED"], 30_000);
    const browser = new Browser(t.url);
    expect((await signInWithKey(browser, t.key)).status).toBe(303);
    const page = await browser.get(`/runs/${failed}`);
    const form = /<form method="post" action="\/runs\/[^"]+\/retry" id="retry-run">([\s\S]*?)<\/form>/.exec(
      page.html,
    );
    expect(form, "a Retry form").not.toBeNull();
    const fields = Object.fromEntries(
      [...form![1]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
        m[1]!,
        m[2]!,
      ]),
    );
    const retried = await browser.post(`/runs/${failed}/retry`, fields);
    expect(retried.status).toBe(303);
    const newRun = /^\/runs\/([^?]+)\?/.exec(retried.location ?? "")![1];
    const [entry] = (await audit("?action=run.retried")).events;
    expect(entry).toMatchObject({ actor: "admin", target: newRun, details: { retry_of: failed } });
  });

  it("records sign-ins and new keys", async () => {
    const browser = new Browser(t.url);
    expect((await signInWithKey(browser, t.key)).status).toBe(303);
    const [signIn] = (await audit("?action=session.signed_in")).events;
    expect(signIn).toMatchObject({ actor: "admin", details: { method: "api_key", role: "admin" } });
    await t.newKey("team_default", { role: "read", displayName: "Reader" });
    const [created] = (await audit("?action=api_key.created")).events;
    expect(created).toMatchObject({ actor: "dispatch", details: { role: "read" } });
    expect(created.target).toMatch(/^key_/);
  });

  it("is for admin keys only and refuses what it cannot read", async () => {
    const member = await t.newKey("team_default", { role: "member" });
    const res = await t.api("GET", "/api/v1/audit-events", undefined, { authorization: `Bearer ${member}` });
    expect(res.status).toBe(403);
    for (const [query, detail] of [
      ["?action=run.exploded", /action must be one of/],
      ["?since=yesterday", /since must be an RFC 3339 timestamp/],
      ["?limit=0", /limit must be a whole number from 1 to 500/],
      ["?cursor=-1", /cursor must be a next_cursor/],
      ["?colour=red", /colour/],
    ] as const) {
      const bad = await t.api("GET", `/api/v1/audit-events${query}`);
      expect(bad.status, query).toBe(400);
      expect(bad.body.detail, query).toMatch(detail);
    }
    // Another team's admin sees nothing of this team.
    const other = await t.newKey("team_other", { role: "admin" });
    const theirs = await t.api("GET", "/api/v1/audit-events?action=run.created", undefined, {
      authorization: `Bearer ${other}`,
    });
    expect(theirs.body.events).toEqual([]);
  });
});
