import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashApiKey } from "../../src/auth/api-keys.ts";
import { SESSION_COOKIE } from "../../src/web/auth/cookies.ts";
import { hashToken, newToken } from "../../src/web/auth/secrets.ts";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";
import { SseStream } from "../support/sse.ts";
import { Browser, csrfOf, type Page, signInWithKey } from "./browser.ts";

/** A scripted run that stays INPROGRESS until its workspace has a `gate` file. */
const GATED = "Waits for the test\n$ until [ -e gate ]; do sleep 0.02; done";

/**
 * The run page as a signed-in team member uses it: what it shows, the follow-up form, Cancel
 * with its confirmation, CSRF and role refusals, another team's run, and a visitor without a session.
 * Runs execute on the scripted harness; a gated run stays in progress until the test opens its gate.
 */
describe("web run page", () => {
  let t: TestDispatch;
  let browser: Browser;

  const create = async (prompt: string, key = t.key, extra: Record<string, unknown> = {}) => {
    const res = await t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt, ...extra },
      { authorization: `Bearer ${key}` },
    );
    expect(res.status, res.text).toBe(200);
    return res.body.run_id as string;
  };
  const openGate = (runId: string) => writeFile(join(t.dataDir, "workspaces", runId, "gate"), "");
  const events = async (runId: string) =>
    (await t.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`)).body.events as Array<{
      type: string;
      data: Record<string, unknown>;
    }>;
  /** The page's form that posts to `action`, as its hidden and visible fields would send it. */
  const formPosting = (page: Page, action: string) => {
    const form = new RegExp(`<form method="post" action="${action}">([\\s\\S]*?)</form>`).exec(page.html);
    expect(form, `a form posting to ${action}`).not.toBeNull();
    return form![1]!;
  };

  beforeAll(async () => {
    t = await startTestDispatch();
    browser = new Browser(t.url);
    expect((await signInWithKey(browser, t.key)).status).toBe(303);
  });
  afterAll(() => t?.stop());

  it("shows a team run with its facts, live transcript, follow-up box, Cancel and command lines", async () => {
    const runId = await create(GATED, t.key, { title: "Gated <b>run</b>" });
    await waitForState(t, runId, ["INPROGRESS"]);
    await waitFor(async () => (await events(runId)).some((e) => e.type === "tool_call"));
    const page = await browser.get(`/runs/${runId}`);
    expect(page.status).toBe(200);
    expect(page.html).toContain("<h1>Gated &lt;b&gt;run&lt;/b&gt;</h1>");
    expect(page.html).toMatch(/<span id="state" [^>]*data-state="INPROGRESS">In progress<\/span>/);
    expect(page.html).toContain('<dl class="facts" id="facts">');
    expect(page.html).toMatch(/<dd id="requester">[^<]+ · <a href="\/\?creator=/);
    expect(page.html).toMatch(/<dd id="source">API<\/dd>/);
    expect(page.html).toContain('<pre class="prompt">Waits for the test');
    // The transcript so far, rendered on the server, and the script that follows it.
    expect(page.html).toMatch(/<ol id="transcript" [^>]*data-live="true">[\s\S]*until \[ -e gate \]/);
    const nonce = /<script nonce="([^"]+)">/.exec(page.html)?.[1];
    expect(nonce).toBeTruthy();
    expect(page.headers.get("content-security-policy")).toContain(`script-src 'nonce-${nonce}'`);
    expect(page.headers.get("content-security-policy")).toContain("form-action 'self'");
    // The actions: a labelled follow-up box and a Cancel button that asks first.
    expect(page.html).toContain('<label for="followup">Message to the agent</label>');
    expect(page.html).toMatch(/<textarea id="followup" name="message"/);
    expect(page.html).toContain(
      `<form method="get" action="/runs/${runId}/cancel" id="cancel-run"><button type="submit">Cancel run</button></form>`,
    );
    expect(formPosting(page, `/runs/${runId}/followup`)).toContain('name="csrf"');
    // The same from a shell, against the public URL with the key named, never given.
    expect(page.html).toContain(`DISPATCH_BASE_URL=&#39;${t.url}&#39; dispatch get &#39;${runId}&#39;`);
    expect(page.html).toContain(`dispatch followup &#39;${runId}&#39; &#39;your message&#39;`);
    expect(page.html).toContain(`dispatch cancel &#39;${runId}&#39;`);
    expect(page.html).toContain(
      `curl -X POST -H &quot;Authorization: Bearer $DISPATCH_API_KEY&quot; &#39;${t.url}/api/v1/agent/runs/${runId}/cancel&#39;`,
    );
    expect(page.html).not.toContain(t.key);
    // Links both ways: to the dashboard, and the dashboard to here.
    expect(page.html).toContain('<a href="/">All runs</a>');
    expect((await browser.get("/")).html).toContain(`<a href="/runs/${runId}">`);
    // Labelled controls, under 100 KB.
    for (const id of [...page.html.matchAll(/<(?:input|textarea) id="([^"]+)"/g)].map((m) => m[1])) {
      expect(page.html).toContain(`<label for="${id}">`);
    }
    expect(Buffer.byteLength(page.html)).toBeLessThan(100 * 1024);

    // The live transcript, for the signed-in member only.
    const stream = await SseStream.open(`${t.url}/runs/${runId}/events`, {
      headers: { cookie: `${SESSION_COOKIE}=${browser.cookies.get(SESSION_COOKIE)}` },
    });
    expect(stream.status).toBe(200);
    expect(stream.headers["content-type"]).toMatch(/^text\/event-stream/);
    const first = await stream.next();
    stream.close();
    expect(JSON.parse(first!.data).type).toBe("state");
    expect((await fetch(`${t.url}/runs/${runId}/events`)).status).toBe(404);
    await openGate(runId);
  });

  it("sends a follow-up from the form, which the run reads and acts on", async () => {
    const runId = await create(GATED);
    await waitForState(t, runId, ["INPROGRESS"]);
    const page = await browser.get(`/runs/${runId}`);
    const sent = await browser.post(`/runs/${runId}/followup`, {
      csrf: csrfOf(page),
      message: "$ echo from-the-run-page",
    });
    expect(sent.status).toBe(303);
    expect(sent.location).toBe(`/runs/${runId}?done=followup`);
    const followups = (await events(runId)).filter((e) => e.type === "followup");
    expect(followups.map((e) => e.data.message)).toEqual(["$ echo from-the-run-page"]);

    const after = await browser.get(sent.location!);
    expect(after.html).toContain('<p class="notice" role="status">Follow-up sent.</p>');
    expect(after.html).toContain("$ echo from-the-run-page");

    await openGate(runId);
    expect((await waitForState(t, runId, ["SUCCEEDED", "FAILED", "ERROR"])).state).toBe("SUCCEEDED");
    const results = (await events(runId)).filter((e) => e.type === "tool_result");
    expect(results.map((e) => e.data.output)).toContain("from-the-run-page\n");

    // An empty message is refused in the API's words, as a page with the form to try again.
    const empty = await browser.post(`/runs/${runId}/followup`, { csrf: csrfOf(after), message: "  " });
    expect(empty.status).toBe(400);
    expect(empty.html).toContain('role="alert"');
    expect(empty.html).toContain("message must not be empty");
    expect(empty.html).toContain('<textarea id="followup"');
  });

  it("cancels after the confirmation page, then refuses a second cancel in words and accepts a follow-up", async () => {
    const runId = await create(GATED);
    await waitForState(t, runId, ["INPROGRESS"]);
    const confirm = await browser.get(`/runs/${runId}/cancel`);
    expect(confirm.status).toBe(200);
    expect(confirm.html).toContain("<h1>Cancel this run?</h1>");
    expect(formPosting(confirm, `/runs/${runId}/cancel`)).toContain(
      '<button type="submit" id="confirm-cancel">Yes, cancel run</button>',
    );
    // Opening the question changes nothing.
    expect((await t.api("GET", `/api/v1/agent/runs/${runId}`)).body.state).toBe("INPROGRESS");

    const cancelled = await browser.post(`/runs/${runId}/cancel`, { csrf: csrfOf(confirm) });
    expect(cancelled.status).toBe(303);
    expect(cancelled.location).toBe(`/runs/${runId}?done=cancel`);
    const run = await waitForState(t, runId, ["CANCELLED"]);
    expect(run.status_message.message).toMatch(/^Cancelled by /);

    const page = await browser.get(cancelled.location!);
    expect(page.html).toContain("Run cancelled.");
    expect(page.html).toMatch(/data-state="CANCELLED">Cancelled</);
    expect(page.html).not.toContain("Cancel run</button>");

    const again = await browser.post(`/runs/${runId}/cancel`, { csrf: csrfOf(page) });
    expect(again.status).toBe(400);
    expect(again.html).toContain(`run ${runId} is already CANCELLED and cannot be cancelled`);

    // A finished run takes a follow-up as the run service allows: a new execution.
    const resumed = await browser.post(`/runs/${runId}/followup`, {
      csrf: csrfOf(page),
      message: "$ echo resumed",
    });
    expect(resumed.status).toBe(303);
    await waitFor(async () => {
      const r = (await t.api("GET", `/api/v1/agent/runs/${runId}`)).body;
      return r.state === "SUCCEEDED" ? r : undefined;
    });
    expect((await browser.get(`/runs/${runId}`)).html).toMatch(/<dd id="executions">2 /);
  });

  it("refuses posts without the CSRF token, with a wrong one, or from no session (403), doing nothing", async () => {
    const runId = await create(GATED);
    await waitForState(t, runId, ["INPROGRESS"]);
    const noToken = await browser.post(`/runs/${runId}/followup`, { message: "$ echo sneaky" });
    expect(noToken.status).toBe(403);
    expect(noToken.html).toContain("did not carry its security token");
    const wrong = await browser.post(`/runs/${runId}/cancel`, { csrf: "x".repeat(43) });
    expect(wrong.status).toBe(403);
    const visitor = await new Browser(t.url).post(`/runs/${runId}/cancel`, { csrf: "whatever" });
    expect(visitor.status).toBe(403);
    expect(visitor.html).toContain("Sign in first");

    expect((await events(runId)).some((e) => e.type === "followup")).toBe(false);
    expect((await t.api("GET", `/api/v1/agent/runs/${runId}`)).body.state).toBe("INPROGRESS");
    await openGate(runId);
  });

  it("answers another team's run and an unknown id with the same 404", async () => {
    const theirs = await create("$ echo other team", await t.newKey("team_other"));
    const other = await browser.get(`/runs/${theirs}`);
    const unknown = await browser.get("/runs/00000000-0000-7000-8000-000000000000");
    expect(other.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(other.html).toBe(unknown.html);
    expect(other.html).not.toContain("other team");
    const page = await browser.get("/");
    for (const path of [`/runs/${theirs}/cancel`]) expect((await browser.get(path)).status).toBe(404);
    expect((await browser.post(`/runs/${theirs}/cancel`, { csrf: csrfOf(page) })).status).toBe(404);
    expect((await t.api("GET", `/api/v1/agent/runs/${theirs}`)).status).toBe(404);
  });

  it("sends a visitor to sign in; the session link alone stays the read-only view", async () => {
    const runId = await create("$ echo for a visitor");
    const visitor = new Browser(t.url);
    const page = await visitor.get(`/runs/${runId}`);
    expect(page.status).toBe(303);
    expect(page.location).toBe("/");
    expect(page.html).not.toContain("for a visitor");
    expect((await visitor.get(`/runs/${runId}/cancel`)).status).toBe(303);
    const sessionLink = (await t.api("GET", `/api/v1/agent/runs/${runId}`)).body.session_link as string;
    const session = await visitor.get(sessionLink);
    expect(session.status).toBe(200);
    expect(session.html).toContain("for a visitor");
    expect(session.html).not.toContain("Cancel run");
  });

  it("lets a read-only session read the run but not act on it", async () => {
    const runId = await create(GATED);
    await waitForState(t, runId, ["INPROGRESS"]);
    // No sign-in form opens a read session today; one is made in the store as a read key would open it.
    const readKey = await t.newKey("team_default", { role: "read" });
    const caller = await t.dispatch.store.findCallerByKeyHash(hashApiKey(readKey));
    const sessionId = newToken();
    const now = Date.now();
    await t.dispatch.store.createKeyWebSession({
      idHash: hashToken(sessionId),
      csrfToken: newToken(),
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + 3600_000).toISOString(),
      principalId: caller!.principal.id,
      teamId: caller!.team.id,
      role: "read",
      apiKeyId: caller!.key.id,
    });
    const reader = new Browser(t.url);
    reader.cookies.set(SESSION_COOKIE, sessionId);
    const page = await reader.get(`/runs/${runId}`);
    expect(page.status).toBe(200);
    expect(page.html).toContain('id="read-only"');
    expect(page.html).not.toContain('<textarea id="followup"');
    expect(page.html).not.toContain("Cancel run</button>");
    expect((await reader.get(`/runs/${runId}/cancel`)).status).toBe(403);
    const refused = await reader.post(`/runs/${runId}/cancel`, { csrf: csrfOf(page) });
    expect(refused.status).toBe(403);
    expect(refused.html).toContain("Your role (read)");
    expect((await t.api("GET", `/api/v1/agent/runs/${runId}`)).body.state).toBe("INPROGRESS");
    await openGate(runId);
  });
});

describe("web run page of a run in a repository", () => {
  let remotes: GitRemotes;
  let github: FakeGitHub;
  let d: TestDispatch;
  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create("acme/site", { "README.md": "# site\n" });
    github = await new FakeGitHub().start();
    github.gitRoot = remotes.root;
    d = await startTestDispatch({ ...deliveryEnv(remotes, github) });
  });
  afterAll(async () => {
    await d?.stop();
    await github?.stop();
    remotes?.remove();
  });

  it("shows the branch, the PR and the start of a large diff, and stays under 100 KB", async () => {
    const created = await d.api("POST", "/api/v1/agent/runs", {
      title: "Add the numbers",
      // About 100 KB of new lines: more than the run page shows of a patch.
      prompt: "Add them\n$ seq 1 12000 | sed 's/^/line /' > numbers.txt",
      config: { repository: "acme/site" },
    });
    expect(created.status, created.text).toBe(200);
    const run = await waitForState(d, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    const pr = github.pulls.find((p) => p.head === run.agent_config.branch)!;
    expect(pr).toBeDefined();

    const browser = new Browser(d.url);
    expect((await signInWithKey(browser, d.key)).status).toBe(303);
    const page = await browser.get(`/runs/${run.run_id}`);
    expect(page.status).toBe(200);
    expect(page.html).toContain(`<dt>Branch</dt><dd><code>${run.agent_config.branch}</code></dd>`);
    expect(page.html).toMatch(
      new RegExp(`<dd id="pull-request"><a href="[^"]+">PR #${pr.number} opened</a></dd>`),
    );
    expect(page.html).toContain('<dd id="diff-stat">+12000');
    expect(page.html).toContain('<details id="patch">');
    expect(page.html).toContain('<p class="muted" id="patch-cut">Showing the first');
    expect(page.html).toContain("+line 1\n");
    expect(page.html).not.toContain("+line 12000\n");
    expect(Buffer.byteLength(page.html)).toBeLessThan(100 * 1024);
  });
});
