import { readFileSync } from "node:fs";
import { mkdir, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SlackDispatch, startSlackDispatch } from "../integrations/slack/support.ts";
import { waitForState } from "../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../support/fake-model/server.ts";
import { launchChromium, runBrowserTests, warnIfSkipped } from "./chromium.ts";

/**
 * The team's web app in a real browser: headless Chromium drives one real Dispatch with the
 * loopback fake Slack and fake Anthropic. A person signs in through the link `/agent login` answers,
 * watches a run appear on the dashboard, filters, opens the run, sends a follow-up and cancels it from the
 * keyboard, sees what a priced run cost; axe-core finds no serious accessibility problem; used and expired
 * links, forms without their CSRF token and another team's run are refused. Screenshots of the dashboard
 * and of a run page are saved under test-results/screenshots/.
 *
 * The steps build on each other (one signed-in browser, one server) and run in order.
 */

/** How long the page may take to show what the server already has, on a loaded machine. */
const LIVE_MS = 15_000;
/** A scripted run that stays in progress until its workspace has a `gate` file. */
const GATED = "Move the invoices to the new schema\n$ until [ -e gate ]; do sleep 0.05; done";
const SONNET = "anthropic/claude-sonnet-4-5";
const SCREENSHOTS = fileURLToPath(new URL("../../test-results/screenshots/", import.meta.url));
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

warnIfSkipped("web app browser tests");

describe.runIf(runBrowserTests)("the team's web app in headless Chromium", () => {
  const turns: ScriptedTurn[] = [];
  let fake: FakeModel;
  let s: SlackDispatch;
  let browser: Browser;
  /** The signed-in person's browser (cookies shared by its pages). */
  let context: BrowserContext;
  let page: Page;
  /** The web app's clock runs this far ahead of the real one (to expire a link without waiting). */
  let skewMs = 0;
  const cspViolations: string[] = [];
  let firstLink: string;
  let notesRunId: string;
  let gatedRunId: string;
  let costRunId: string;

  const url = (path: string) => `${s.t.url}${path}`;
  const createRun = async (body: Record<string, unknown>, key = s.t.key) => {
    const res = await s.t.api("POST", "/api/v1/agent/runs", body, { authorization: `Bearer ${key}` });
    expect(res.status, res.text).toBe(200);
    return res.body.run_id as string;
  };
  const events = async (runId: string) =>
    (await s.t.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`)).body.events as Array<{
      type: string;
      data: Record<string, unknown>;
    }>;
  /** `/agent login` from `user` in Slack, and the link in Dispatch's n-th ephemeral answer to them. */
  const loginLink = async (user: string, n = 1) => {
    const ack = await s.command({ text: "login", user_id: user });
    expect(ack.status).toBe(200);
    const text = await s.ephemeral(user, n);
    const match = /<(http[^|>]+)\|Sign in to Dispatch>/.exec(text);
    if (!match) throw new Error(`no sign-in link in the ephemeral answer: ${text}`);
    return match[1]!;
  };
  const newPage = async (ctx: BrowserContext) => {
    const p = await ctx.newPage();
    p.on("console", (msg) => {
      if (/Content Security Policy/i.test(msg.text())) cspViolations.push(msg.text());
    });
    return p;
  };
  const rowIds = (p: Page) =>
    p.$$eval("#runs-body tr[data-run-id]", (rows) => rows.map((r) => (r as HTMLElement).dataset.runId));
  /** Waits until the dashboard's script has its event stream open (runs changed from now on reach it). */
  const waitForLive = (p: Page) =>
    p.waitForFunction(() => document.getElementById("live")?.textContent?.startsWith("Live:"), undefined, {
      timeout: LIVE_MS,
    });
  const waitForText = (p: Page, selector: string, text: string) =>
    p.waitForFunction(
      ([sel, want]) => document.querySelector(sel!)?.textContent?.trim() === want,
      [selector, text],
      { timeout: LIVE_MS },
    );
  const screenshot = async (p: Page, name: string) => {
    await mkdir(SCREENSHOTS, { recursive: true });
    const path = join(SCREENSHOTS, name);
    await p.screenshot({ path, fullPage: true });
    expect((await stat(path)).size).toBeGreaterThan(1000);
    console.log(`screenshot saved: ${path}`);
    return path;
  };
  /** axe-core's serious and critical violations on `path`, in a context that lets its script in. */
  const seriousViolations = async (path: string) => {
    // The pages' CSP runs only their own nonce'd script: this context alone is told to ignore it.
    const axeContext = await browser.newContext({
      bypassCSP: true,
      storageState: await context.storageState(),
    });
    try {
      const p = await axeContext.newPage();
      const res = await p.goto(url(path));
      expect(res?.status()).toBe(200);
      await p.addScriptTag({ content: AXE_SOURCE });
      const violations = await p.evaluate(async () => {
        type AxeResult = {
          violations: Array<{
            id: string;
            impact: string;
            help: string;
            nodes: Array<{ target: string[]; failureSummary?: string }>;
          }>;
        };
        const axe = (window as unknown as { axe: { run(ctx: Document, o: object): Promise<AxeResult> } }).axe;
        const result = await axe.run(document, { resultTypes: ["violations"] });
        return result.violations.map((v) => ({
          id: v.id,
          impact: v.impact,
          help: v.help,
          nodes: v.nodes.map((n) => `${n.target.join(" ")}: ${n.failureSummary ?? ""}`),
        }));
      });
      const serious = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
      if (serious.length > 0)
        console.error(`axe violations on ${path}:\n${JSON.stringify(serious, null, 2)}`);
      return serious;
    } finally {
      await axeContext.close();
    }
  };

  beforeAll(async () => {
    fake = await startFakeModel(turns);
    s = await startSlackDispatch({
      // Runs without a model use the scripted harness; a run with an Anthropic model_id uses the builtin
      // harness against the fake Anthropic, which reports usage: that run has a cost.
      env: { ANTHROPIC_API_KEY: "test-anthropic-key", ANTHROPIC_BASE_URL: fake.baseUrl("anthropic") },
      dispatch: { web: { now: () => new Date(Date.now() + skewMs) } },
    });
    notesRunId = await createRun({ title: "Write the release notes", prompt: "$ echo release notes" });
    expect((await waitForState(s.t, notesRunId, ["SUCCEEDED", "FAILED", "ERROR"], 20_000)).state).toBe(
      "SUCCEEDED",
    );
    browser = await launchChromium();
  });

  afterAll(async () => {
    // The browser first: its open event streams would otherwise hold the server's stop.
    await browser?.close();
    await s?.stop();
    await fake?.close();
  });

  it("signs in through the one-time link that /agent login answers in Slack", async () => {
    firstLink = await loginLink("U2");
    expect(firstLink.startsWith(url("/login/"))).toBe(true);

    context = await browser.newContext();
    page = await newPage(context);
    const res = await page.goto(firstLink);
    // The link asks first, naming whom it signs in; its button signs in and goes to the dashboard.
    expect(res?.status()).toBe(200);
    expect(await page.locator("main p").first().textContent()).toMatch(
      /^Sign in as user-U2 \(slack:[A-Z0-9]+:U2\)\?$/,
    );
    expect((await context.cookies()).some((c) => c.name === "dispatch_session")).toBe(false);
    await Promise.all([
      page.waitForURL(url("/")),
      page.getByRole("button", { name: "Sign in as user-U2" }).click(),
    ]);
    expect(await page.locator("h1").textContent()).toBe("Default team: runs");
    expect(await page.locator("header .who span").textContent()).toBe("user-U2 · Default team");
    expect(await rowIds(page)).toEqual([notesRunId]);
    const session = (await context.cookies()).find((c) => c.name === "dispatch_session");
    expect(session?.httpOnly).toBe(true);
    expect(session?.sameSite).toBe("Lax");
  });

  it("shows a new run on the open dashboard without a reload", async () => {
    await waitForLive(page);
    // A reload would wipe this out.
    await page.evaluate(() => {
      (window as unknown as { sameDocument: boolean }).sameDocument = true;
    });
    gatedRunId = await createRun({ title: "Migrate the billing tables", prompt: GATED });

    const row = page.locator(`#runs-body tr[data-run-id="${gatedRunId}"]`);
    await row.waitFor({ timeout: LIVE_MS });
    expect(await row.getByRole("link", { name: "Migrate the billing tables" }).getAttribute("href")).toBe(
      `/runs/${gatedRunId}`,
    );
    // Newest first, above the run that was there.
    expect(await rowIds(page)).toEqual([gatedRunId, notesRunId]);
    // It is picked up and starts: the row follows.
    await waitForText(page, `#runs-body tr[data-run-id="${gatedRunId}"] .state`, "In progress");
    expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(
      true,
    );
  });

  it("filters by state and search text from the keyboard", async () => {
    const inProgress = page.getByRole("checkbox", { name: "In progress", exact: true });
    await inProgress.focus();
    await page.keyboard.press("Space");
    expect(await inProgress.isChecked()).toBe(true);
    const search = page.getByLabel("Search title and prompt");
    await search.focus();
    await page.keyboard.type("billing");
    await Promise.all([
      page.waitForURL(/\/\?.*q=billing/, { timeout: LIVE_MS }),
      page.keyboard.press("Enter"),
    ]);

    const query = new URL(page.url()).searchParams;
    expect(query.get("state")).toBe("INPROGRESS");
    expect(query.get("q")).toBe("billing");
    expect(await rowIds(page)).toEqual([gatedRunId]);
    expect(await page.locator("#runs caption").textContent()).toMatch(/^1 run on this page/);
    // The form keeps what was asked.
    expect(await search.inputValue()).toBe("billing");
    expect(await inProgress.isChecked()).toBe(true);
    expect(await page.getByRole("checkbox", { name: "Succeeded", exact: true }).isChecked()).toBe(false);
  });

  it("opens the run and sends a follow-up from the keyboard", async () => {
    await Promise.all([
      page.waitForURL(url(`/runs/${gatedRunId}`), { timeout: LIVE_MS }),
      page.getByRole("link", { name: "Migrate the billing tables" }).click(),
    ]);
    expect(await page.locator("h1").textContent()).toBe("Migrate the billing tables");
    expect(await page.locator("#state").getAttribute("data-state")).toBe("INPROGRESS");

    // The follow-up box is in the header, behind its disclosure: opened from the keyboard too.
    await page.locator("#followup-box > summary").press("Enter");
    const box = page.getByLabel("Message to the agent");
    await box.focus();
    await page.keyboard.type("$ echo from-the-browser");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Send follow-up");
    await Promise.all([
      page.waitForURL(url(`/runs/${gatedRunId}?done=followup`), { timeout: LIVE_MS }),
      page.keyboard.press("Space"),
    ]);
    await page.getByRole("status").filter({ hasText: "Follow-up sent." }).waitFor({ timeout: LIVE_MS });
    const followups = (await events(gatedRunId)).filter((e) => e.type === "followup");
    expect(followups.map((e) => e.data.message)).toEqual(["$ echo from-the-browser"]);

    // The run page of a run in progress, with its follow-up box and Cancel button, passes axe.
    expect(await seriousViolations(`/runs/${gatedRunId}`)).toEqual([]);
  });

  it("cancels the run after the confirmation page", async () => {
    await Promise.all([
      // A GET form: the URL ends in an empty query.
      page.waitForURL((u) => u.pathname === `/runs/${gatedRunId}/cancel`, { timeout: LIVE_MS }),
      page.getByRole("button", { name: "Cancel run" }).click(),
    ]);
    expect(await page.locator("h1").textContent()).toBe("Cancel this run?");
    // Asking changed nothing.
    expect((await s.t.api("GET", `/api/v1/agent/runs/${gatedRunId}`)).body.state).toBe("INPROGRESS");

    await page.getByRole("button", { name: "Yes, cancel run" }).focus();
    await Promise.all([
      page.waitForURL(url(`/runs/${gatedRunId}?done=cancel`), { timeout: LIVE_MS }),
      page.keyboard.press("Enter"),
    ]);
    await page.getByRole("status").filter({ hasText: "Run cancelled." }).waitFor({ timeout: LIVE_MS });
    // Rendered cancelled, or followed to it live when the executor was still stopping the agent.
    await waitForText(page, "#state", "Cancelled");
    expect(await page.locator("#state").getAttribute("data-state")).toBe("CANCELLED");
    expect((await waitForState(s.t, gatedRunId, ["CANCELLED"])).status_message.message).toMatch(
      /^Cancelled by /,
    );
  });

  it("shows what a priced run cost, on its dashboard row as it finishes and on its run page", async () => {
    await page.goto(url("/"));
    await waitForLive(page);
    // 2000 input tokens at $3/MTok + 1000 output at $15/MTok = $0.021.
    turns.push({ text: "The changelog, summarised.", usage: { input_tokens: 2000, output_tokens: 1000 } });
    costRunId = await createRun({
      title: "Summarise the changelog",
      prompt: "Summarise the changelog",
      config: { model_id: SONNET },
    });
    const row = `#runs-body tr[data-run-id="${costRunId}"]`;
    await waitForText(page, `${row} .state`, "Succeeded");
    await waitForText(page, `${row} td:nth-child(9)`, "$0.02");
    const run = (await s.t.api("GET", `/api/v1/agent/runs/${costRunId}`)).body;
    expect(run.request_usage.inference_cost).toBeCloseTo(0.021, 6);
    // A run without a price shows no cost rather than $0.00.
    expect(
      await page.locator(`#runs-body tr[data-run-id="${notesRunId}"] td:nth-child(9)`).textContent(),
    ).toBe("");
    // The counts by state follow too (after the row: they are the feed's next frame).
    await waitForText(page, "#count-SUCCEEDED", "2");
    await waitForText(page, "#count-INPROGRESS", "0");
    await waitForText(page, "#count-CANCELLED", "1");
    await screenshot(page, "dashboard.png");

    await Promise.all([
      page.waitForURL(url(`/runs/${costRunId}`), { timeout: LIVE_MS }),
      page.locator(row).getByRole("link", { name: "Summarise the changelog" }).click(),
    ]);
    expect(await page.locator("#cost").textContent()).toBe("$0.02");
    expect(await page.locator("#state").textContent()).toBe("Succeeded");
    await page
      .locator("#transcript li", { hasText: "The changelog, summarised." })
      .first()
      .waitFor({ timeout: LIVE_MS });
    await screenshot(page, "run-page.png");
  });

  it("has no serious accessibility violation on the dashboard and a finished run's page (axe-core)", async () => {
    expect(await seriousViolations("/")).toEqual([]);
    expect(await seriousViolations("/?state=SUCCEEDED&q=changelog")).toEqual([]);
    expect(await seriousViolations(`/runs/${costRunId}`)).toEqual([]);
  });

  it("reads without JavaScript", async () => {
    const noScript = await browser.newContext({
      javaScriptEnabled: false,
      storageState: await context.storageState(),
    });
    try {
      const p = await newPage(noScript);
      await p.goto(url("/"));
      expect(await rowIds(p)).toEqual([costRunId, gatedRunId, notesRunId]);
      expect(await p.locator(`tr[data-run-id="${costRunId}"] td:nth-child(9)`).textContent()).toBe("$0.02");
      await p.goto(url(`/runs/${gatedRunId}`));
      expect(await p.locator("#state").textContent()).toBe("Cancelled");
      expect(await p.locator("#transcript").textContent()).toContain("$ echo from-the-browser");
    } finally {
      await noScript.close();
    }
  });

  it("refuses a used link and an expired one, and signs nobody in", async () => {
    const visitor = await browser.newContext();
    try {
      const p = await newPage(visitor);
      const reused = await p.goto(firstLink);
      expect(reused?.status()).toBe(410);
      expect(await p.getByRole("alert").textContent()).toBe(
        "This sign-in link was used already: each link signs in once.",
      );

      const link = await loginLink("U3");
      skewMs = 10 * 60_000 + 1_000;
      try {
        const expired = await p.goto(link);
        expect(expired?.status()).toBe(410);
        expect(await p.getByRole("alert").textContent()).toBe(
          "This sign-in link has expired: links work for 10 minutes.",
        );
      } finally {
        skewMs = 0;
      }
      expect((await visitor.cookies()).some((c) => c.name === "dispatch_session")).toBe(false);
      // Still a visitor: the dashboard is the sign-in page.
      await p.goto(url("/"));
      expect(await rowIds(p)).toEqual([]);
      expect(await p.content()).toContain("/agent login");
    } finally {
      await visitor.close();
    }
  });

  it("refuses a form posted without its CSRF token (403), doing nothing", async () => {
    await page.goto(url(`/runs/${costRunId}`));
    // The page's own form, with its token taken out, as another site's copy of it would be.
    await page.evaluate(() => {
      for (const field of document.querySelectorAll('input[name="csrf"]')) field.remove();
    });
    await page.locator("#followup-box > summary").click();
    await page.getByLabel("Message to the agent").fill("$ echo forged");
    const [refused] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`/runs/${costRunId}/followup`), { timeout: LIVE_MS }),
      page.getByRole("button", { name: "Send follow-up" }).click(),
    ]);
    expect(refused.status()).toBe(403);
    await page.locator("h1", { hasText: "Refused" }).waitFor({ timeout: LIVE_MS });
    expect(await page.content()).toContain("did not carry its security token");

    // The same with the browser's cookies from outside the page: cancelling a run.
    const noToken = await context.request.post(url(`/runs/${costRunId}/cancel`), {
      form: {},
      maxRedirects: 0,
    });
    expect(noToken.status()).toBe(403);

    expect((await events(costRunId)).some((e) => e.type === "followup")).toBe(false);
    expect((await s.t.api("GET", `/api/v1/agent/runs/${costRunId}`)).body.state).toBe("SUCCEEDED");
  });

  it("answers another team's run with 404, and does not list it", async () => {
    const theirs = await createRun(
      { title: "Their secret roadmap", prompt: "$ echo roadmap" },
      await s.t.newKey("team_other"),
    );
    const res = await page.goto(url(`/runs/${theirs}`));
    expect(res?.status()).toBe(404);
    expect(await page.locator("h1").textContent()).toBe("Run not found");
    expect(await page.content()).not.toContain("roadmap");
    await page.goto(url("/"));
    expect(await rowIds(page)).not.toContain(theirs);
    // No page of the whole session broke its content security policy.
    expect(cspViolations).toEqual([]);
  });
});
