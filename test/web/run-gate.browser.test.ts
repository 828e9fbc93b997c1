import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SESSION_COOKIE } from "../../src/web/auth/cookies.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { Browser as HttpBrowser, signInWithKey } from "./browser.ts";
import { launchChromium, runBrowserTests, warnIfSkipped } from "./chromium.ts";

/**
 * A plan that waits for approval, on the run page in headless Chromium: the page opened while the run
 * is still queued shows "Waiting for you" and the plan's forms as soon as the plan is ready (the live
 * view), has no serious accessibility violation, and Approve typed into the page carries the plan out.
 */

const LIVE_MS = 20_000;
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
/** A scripted run that holds the one executor slot until its workspace has a `gate` file. */
const GATED = "Holds the slot\n$ until [ -e gate ]; do sleep 0.02; done";

warnIfSkipped("run page gate browser tests");

describe.runIf(runBrowserTests)("a plan waiting for approval on the run page, in headless Chromium", () => {
  let t: TestDispatch;
  let chromium: Browser;
  let cookie: string;

  const seriousViolations = async (page: Page) => {
    await page.addScriptTag({ content: AXE_SOURCE });
    const violations = await page.evaluate(async () => {
      type AxeResult = {
        violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
      };
      const axe = (window as unknown as { axe: { run(ctx: Document, o: object): Promise<AxeResult> } }).axe;
      const result = await axe.run(document, { resultTypes: ["violations"] });
      return result.violations.map((v) => ({
        id: v.id,
        impact: v.impact,
        nodes: v.nodes.map((n) => n.target.join(" ")),
      }));
    });
    return violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  };

  beforeAll(async () => {
    t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "1", DISPATCH_POLL_INTERVAL_MS: "100" });
    const http = new HttpBrowser(t.url);
    expect((await signInWithKey(http, t.key)).status).toBe(303);
    cookie = http.cookies.get(SESSION_COOKIE)!;
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    await t?.stop();
  });

  it("shows the plan and its answers when the run starts waiting, and Approve carries it out", async () => {
    const holder = (await t.api("POST", "/api/v1/agent/runs", { prompt: GATED })).body.run_id as string;
    await waitForState(t, holder, ["INPROGRESS"]);
    const created = await t.api("POST", "/api/v1/agent/runs", {
      title: "Plan the marker",
      prompt: "Write the **marker**\n$ echo planned > plan.txt",
      mode: "plan",
    });
    expect(created.status, created.text).toBe(200);
    const runId = created.body.run_id as string;

    // bypassCSP only lets the test inject axe; the page's own script runs under its nonce either way.
    const context = await chromium.newContext({ bypassCSP: true });
    await context.addCookies([{ name: SESSION_COOKIE, value: cookie, url: t.url }]);
    const consoleErrors: string[] = [];
    try {
      const page = await context.newPage();
      page.on("console", (msg) => {
        if (msg.type() === "error") consoleErrors.push(msg.text());
      });
      expect((await page.goto(`${t.url}/runs/${runId}`))?.status()).toBe(200);
      expect(await page.locator("#state").textContent()).toBe("Queued");
      expect(await page.locator("#gate").isVisible()).toBe(false);

      // The slot frees, the plan is made and waits: the open page shows it without a reload.
      await writeFile(join(t.dataDir, "workspaces", holder, "gate"), "");
      await page.locator("#gate-h").waitFor({ state: "visible", timeout: LIVE_MS });
      expect(await page.locator("#state").textContent()).toBe("Waiting for you");
      expect(await page.locator("#gate-h").textContent()).toBe("Waiting for you: approval of its plan");
      expect(await page.locator("#plan-doc strong").textContent()).toBe("marker");
      expect(await page.locator("#plan-doc").textContent()).toContain("$ echo planned > plan.txt");
      expect(await seriousViolations(page)).toEqual([]);

      await page.getByLabel("Note for the agent (optional)").fill("Go ahead.");
      await page.getByRole("button", { name: "Approve" }).click();
      await page.waitForURL(`**/runs/${runId}?done=approved`, { timeout: LIVE_MS });
      await page.waitForFunction(
        () => document.getElementById("state")?.textContent === "Succeeded",
        undefined,
        { timeout: LIVE_MS },
      );
      expect(await page.locator("#gate").isVisible()).toBe(false);
      expect(await page.locator("p.notice").textContent()).toContain("Plan approved");
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
    expect((await waitForState(t, runId, ["SUCCEEDED"])).state).toBe("SUCCEEDED");
  });
});
