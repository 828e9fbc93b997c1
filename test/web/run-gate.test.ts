import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashApiKey } from "../../src/auth/api-keys.ts";
import { SESSION_COOKIE } from "../../src/web/auth/cookies.ts";
import { hashToken, newToken } from "../../src/web/auth/secrets.ts";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { Browser, csrfOf, type Page, runIdsOf, signInWithKey } from "./browser.ts";

/**
 * A plan that waits for approval, on the run page (docs/api.md "Plans that wait for approval"): the page
 * says "Waiting for you" with the plan and its three answers; Approve carries the plan out in the same
 * run, Request changes has it planned again, Cancel ends it. The forms follow the page's other actions:
 * CSRF, a role that may act, and another team's run is a 404. Runs use the scripted harness, whose plan
 * is its script.
 */
describe("web run page of a run waiting for approval", () => {
  let t: TestDispatch;
  let browser: Browser;

  const planRun = async (prompt: string, key = t.key): Promise<string> => {
    const created = await t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt, mode: "plan" },
      { authorization: `Bearer ${key}` },
    );
    expect(created.status, created.text).toBe(200);
    const run = await waitFor(
      async () => {
        const res = await t.api("GET", `/api/v1/agent/runs/${created.body.run_id}`, undefined, {
          authorization: `Bearer ${key}`,
        });
        return res.body.state === "QUEUED" || res.body.state === "INPROGRESS" ? undefined : res.body;
      },
      { what: "the plan to be ready" },
    );
    expect(run.state, JSON.stringify(run.status_message)).toBe("BLOCKED");
    return run.run_id;
  };
  const events = async (runId: string, key = t.key) =>
    (
      await t.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`, undefined, {
        authorization: `Bearer ${key}`,
      })
    ).body.events as Array<{
      type: string;
      data: Record<string, unknown>;
    }>;
  const gateOf = (page: Page) => /<section id="gate"[\s\S]*?<\/section>/.exec(page.html)?.[0] ?? "";
  const formPosting = (page: Page, action: string) =>
    new RegExp(`<form method="post" action="${action}">([\\s\\S]*?)</form>`).exec(page.html)?.[1];

  beforeAll(async () => {
    t = await startTestDispatch({ DISPATCH_POLL_INTERVAL_MS: "100" });
    browser = new Browser(t.url);
    expect((await signInWithKey(browser, t.key)).status).toBe(303);
  });
  afterAll(() => t?.stop());

  it("shows the plan with Approve, Request changes and Cancel; Approve carries it out in the same run", async () => {
    const runId = await planRun("Write the marker\n$ echo planned > plan.txt");
    const page = await browser.get(`/runs/${runId}`);
    expect(page.status).toBe(200);
    expect(page.html).toMatch(/<span id="state" [^>]*data-state="BLOCKED">Waiting for you<\/span>/);
    const gate = gateOf(page);
    expect(gate).toContain('<h2 id="gate-h">Waiting for you: approval of its plan</h2>');
    // The plan as Markdown, from its PLAN artifact: what will run, nothing run yet.
    expect(gate).toMatch(/<div class="md plan-doc" id="plan-doc">[\s\S]*\$ echo planned &gt; plan.txt/);
    expect(formPosting(page, `/runs/${runId}/approve`)).toContain('name="csrf"');
    expect(formPosting(page, `/runs/${runId}/approve`)).toContain('<label for="approve-note">');
    expect(formPosting(page, `/runs/${runId}/revise`)).toContain('<label for="revise-message">');
    expect(gate).toContain(`<form method="get" action="/runs/${runId}/cancel">`);
    expect(page.html).toContain("a follow-up answers it");
    // The live script's view of the same run carries the same section.
    const items = JSON.parse((await browser.get(`/runs/${runId}/items?from=1`)).html);
    expect(items.header.state).toBe("BLOCKED");
    expect(items.gate).toContain(`data-key="${/data-key="([0-9a-f]+)"/.exec(gate)![1]}"`);

    const approved = await browser.post(`/runs/${runId}/approve`, {
      csrf: csrfOf(page),
      note: "Keep it short.",
    });
    expect(approved.status, approved.html).toBe(303);
    expect(approved.location).toBe(`/runs/${runId}?done=approved`);
    const done = await waitForState(t, runId, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(done.state).toBe("SUCCEEDED");
    expect(await readFile(join(t.dataDir, "workspaces", runId, "plan.txt"), "utf8")).toBe("planned\n");
    const followups = (await events(runId)).filter((e) => e.type === "followup");
    expect(followups).toHaveLength(1);
    expect(followups[0]!.data.message).toContain("Your plan is approved");
    expect(followups[0]!.data.message).toContain("The approver adds: Keep it short.");

    const after = await browser.get(approved.location!);
    expect(after.html).toContain("Plan approved: the run carries it out.");
    expect(after.html).toContain('<section id="gate" data-key="" hidden></section>');
    const live = JSON.parse((await browser.get(`/runs/${runId}/items?from=1`)).html);
    expect(live.gate).toBe('<section id="gate" data-key="" hidden></section>');

    // Approving again: nothing waits any more, said in the API's words.
    const again = await browser.post(`/runs/${runId}/approve`, { csrf: csrfOf(after) });
    expect(again.status).toBe(409);
    expect(again.html).toContain("has no plan waiting for approval");
    expect((await events(runId)).filter((e) => e.type === "followup")).toHaveLength(1);
  });

  it("Request changes plans again and waits again; Cancel ends the run", async () => {
    const runId = await planRun("$ echo one > one.txt");
    const page = await browser.get(`/runs/${runId}`);
    // Changes must be said: an empty request is refused with the form to try again.
    const empty = await browser.post(`/runs/${runId}/revise`, { csrf: csrfOf(page), message: " " });
    expect(empty.status).toBe(400);
    expect(empty.html).toContain('role="alert"');
    expect(empty.html).toContain("message must not be empty");
    expect(empty.html).toContain('<textarea id="revise-message"');

    const revised = await browser.post(`/runs/${runId}/revise`, {
      csrf: csrfOf(page),
      message: "$ echo two > two.txt",
    });
    expect(revised.status, revised.html).toBe(303);
    expect(revised.location).toBe(`/runs/${runId}?done=revised`);
    await waitFor(
      async () =>
        (await events(runId)).filter((e) => e.type === "state" && e.data.state === "BLOCKED").length === 2,
      { what: "the revised plan to wait" },
    );
    const second = await browser.get(`/runs/${runId}`);
    expect(gateOf(second)).toContain("$ echo two &gt; two.txt");
    expect(gateOf(second)).not.toContain("echo one");
    expect(gateOf(second)).not.toBe(gateOf(page));

    const confirm = await browser.get(`/runs/${runId}/cancel`);
    expect(confirm.html).toContain('<span class="state state-BLOCKED">Waiting for you</span>');
    const cancelled = await browser.post(`/runs/${runId}/cancel`, { csrf: csrfOf(confirm) });
    expect(cancelled.status).toBe(303);
    const run = await waitForState(t, runId, ["CANCELLED"]);
    expect(run.status_message.message).toMatch(/^Cancelled by /);
    expect((await events(runId)).some((e) => e.type === "tool_call")).toBe(false);
  });

  it("lists waiting runs on the dashboard under their own state, count and filter", async () => {
    const runId = await planRun("$ echo listed");
    const waiting = (await t.api("GET", "/api/v1/agent/runs?task_status=blocked")).body.runs as Array<{
      run_id: string;
    }>;
    expect(waiting.map((r) => r.run_id)).toContain(runId);
    const home = await browser.get("/");
    expect(home.html).toContain(`<span id="count-BLOCKED">${waiting.length}</span>`);
    expect(home.html).toMatch(
      new RegExp(
        `<tr data-run-id="${runId}"><td class="c-state"><span class="state state-BLOCKED">Waiting for you</span> <span class="waiting-for">for approval of its plan</span>`,
      ),
    );
    expect(home.html).toContain(
      '<input type="checkbox" name="state" value="BLOCKED">Waiting for you</label>',
    );
    const filtered = await browser.get("/?state=BLOCKED");
    expect(filtered.status).toBe(200);
    expect(new Set(runIdsOf(filtered))).toEqual(new Set(waiting.map((r) => r.run_id)));
    const byTaskStatus = await browser.get("/?task_status=blocked");
    expect(new Set(runIdsOf(byTaskStatus))).toEqual(new Set(waiting.map((r) => r.run_id)));
  });

  it("refuses answers without the CSRF token, from a read session, and for another team's run", async () => {
    const runId = await planRun("$ echo guarded");
    const noToken = await browser.post(`/runs/${runId}/approve`, {});
    expect(noToken.status).toBe(403);
    expect(noToken.html).toContain("did not carry its security token");

    // A read session sees the plan but no forms, and its posts are refused.
    const readKey = await t.newKey("team_default", { role: "read" });
    const caller = await t.dispatch.store.findCallerByKeyHash(hashApiKey(readKey));
    const sessionId = newToken();
    await t.dispatch.store.createKeyWebSession({
      idHash: hashToken(sessionId),
      csrfToken: newToken(),
      createdAt: new Date().toISOString(),
      expiresAt: new Date(Date.now() + 3600_000).toISOString(),
      principalId: caller!.principal.id,
      teamId: caller!.team.id,
      role: "read",
      apiKeyId: caller!.key.id,
    });
    const reader = new Browser(t.url);
    reader.cookies.set(SESSION_COOKIE, sessionId);
    const page = await reader.get(`/runs/${runId}`);
    expect(page.status).toBe(200);
    expect(gateOf(page)).toContain("$ echo guarded");
    expect(gateOf(page)).not.toContain("<form");
    for (const action of ["approve", "revise"]) {
      const refused = await reader.post(`/runs/${runId}/${action}`, { csrf: csrfOf(page), message: "x" });
      expect(refused.status, action).toBe(403);
      expect(refused.html).toContain("Your role (read)");
    }

    // Another team's waiting run is the same 404 as an id that names nothing, and stays waiting.
    const otherKey = await t.newKey("team_other");
    const theirs = await planRun("$ echo other team", otherKey);
    const csrf = csrfOf(await browser.get("/"));
    for (const action of ["approve", "revise"]) {
      const other = await browser.post(`/runs/${theirs}/${action}`, { csrf, message: "x" });
      expect(other.status, action).toBe(404);
      expect(other.html).not.toContain("other team");
    }
    for (const [id, key] of [
      [runId, t.key],
      [theirs, otherKey],
    ]) {
      const run = await t.api("GET", `/api/v1/agent/runs/${id}`, undefined, {
        authorization: `Bearer ${key}`,
      });
      expect(run.body.state).toBe("BLOCKED");
      expect((await events(id!, key)).some((e) => e.type === "followup")).toBe(false);
    }
  });
});
