import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SESSION_COOKIE } from "../../src/web/auth/cookies.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";
import { saveScreenshot } from "../support/screenshots.ts";
import { Browser as HttpBrowser, signInWithKey } from "./browser.ts";
import { launchChromium, runBrowserTests, warnIfSkipped } from "./chromium.ts";

/**
 * The dashboard's rows at a glance on a laptop screen and on a phone: a run's state, title, source and
 * pull request are in view without scrolling sideways, and the usage chart fits.
 */

warnIfSkipped("dashboard layout browser tests");

describe.runIf(runBrowserTests)("the dashboard on a laptop and on a phone", () => {
  let remotes: GitRemotes;
  let github: FakeGitHub;
  let t: TestDispatch;
  let chromium: Browser;
  let cookie: string;
  let runId: string;

  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create("acme/app", { "README.md": "# app\n" });
    github = await new FakeGitHub().start();
    github.gitRoot = remotes.root;
    t = await startTestDispatch({ ...deliveryEnv(remotes, github) });
    const created = await t.api("POST", "/api/v1/agent/runs", {
      title: "Write the release notes for the spring version of the billing service and its dashboards",
      prompt: "Notes\n$ echo 'spring' > NOTES.md",
      config: { repository: "acme/app" },
    });
    expect(created.status, created.text).toBe(200);
    runId = created.body.run_id;
    const run = await waitForState(t, runId, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    const http = new HttpBrowser(t.url);
    expect((await signInWithKey(http, t.key)).status).toBe(303);
    cookie = http.cookies.get(SESSION_COOKIE)!;
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    await t?.stop();
    await github?.stop();
    remotes?.remove();
  });

  /** Whether `selector` within the run's row is drawn wholly inside the viewport's width. */
  const inView = (page: Page, selector: string) =>
    page.locator(`tr[data-run-id="${runId}"] ${selector}`).evaluate((el) => {
      const box = el.getBoundingClientRect();
      return box.width > 0 && box.left >= 0 && box.right <= window.innerWidth;
    });

  for (const [name, viewport] of [
    ["laptop", { width: 1280, height: 800 }],
    ["phone", { width: 390, height: 844 }],
  ] as const) {
    it(`shows state, title, source and PR without scrolling sideways on a ${name}`, async () => {
      const context = await chromium.newContext({ viewport, javaScriptEnabled: false });
      await context.addCookies([{ name: SESSION_COOKIE, value: cookie, url: t.url }]);
      try {
        const page = await context.newPage();
        expect((await page.goto(`${t.url}/`))?.status()).toBe(200);
        expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(
          true,
        );
        expect(await inView(page, ".state")).toBe(true);
        expect(await inView(page, ".c-title a")).toBe(true);
        expect(await inView(page, ".c-source")).toBe(true);
        const pr = page.locator(`tr[data-run-id="${runId}"] .c-repo a`);
        expect(await pr.textContent()).toMatch(/^PR #\d+$/);
        expect(await inView(page, ".c-repo a")).toBe(true);
        const chart = await page.locator(".usage-chart").boundingBox();
        expect(chart!.x + chart!.width).toBeLessThanOrEqual(viewport.width);
        // On a phone the cells carry their column's name, as the header is not shown.
        if (name === "phone") {
          expect((await page.locator("#runs thead").boundingBox())!.width).toBeLessThanOrEqual(1);
          expect(
            await page
              .locator(`tr[data-run-id="${runId}"] td[data-label="Source"]`)
              .evaluate((td) => getComputedStyle(td, "::before").content),
          ).toBe('"Source"');
        }
        await saveScreenshot(page, `dashboard-${name}.png`);
      } finally {
        await context.close();
      }
    });
  }
});
