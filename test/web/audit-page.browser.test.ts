import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { launchChromium, runBrowserTests, warnIfSkipped } from "./chromium.ts";

/**
 * The audit log's page in headless Chromium: an admin signs in with their key, follows the header's
 * "Audit log" link, reads who did what, filters by action from the keyboard; axe-core finds no serious
 * accessibility problem.
 */

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

warnIfSkipped("audit page browser tests");

describe.runIf(runBrowserTests)("the audit log page in headless Chromium", () => {
  let t: TestDispatch;
  let browser: Browser;
  let page: Page;
  let runId: string;

  beforeAll(async () => {
    t = await startTestDispatch();
    runId = (await t.api("POST", "/api/v1/agent/runs", { prompt: "$ sleep 60" })).body.run_id;
    await waitForState(t, runId, ["INPROGRESS"], 30_000);
    await t.api("POST", `/api/v1/agent/runs/${runId}/cancel`);
    await t.api("POST", "/api/v1/agent/identities", { name: "Release <bot>" });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  it("shows an admin who did what, filters it, and passes axe", async () => {
    const context = await browser.newContext();
    page = await context.newPage();
    await page.goto(`${t.url}/`);
    await page.fill("input[name=api_key]", t.key);
    await page.press("input[name=api_key]", "Enter");
    await page.waitForURL(`${t.url}/`);
    await page.click("text=Audit log");
    await page.waitForURL(`${t.url}/audit`);
    expect(await page.title()).toBe("Audit log · Dispatch");
    const rows = await page.$$eval("#audit tbody tr", (trs) =>
      trs.map((tr) => (tr as HTMLElement).innerText),
    );
    expect(rows[0]).toContain("signed in");
    expect(rows.some((r) => r.includes("cancelled a run") && r.includes(runId))).toBe(true);
    // What people typed is shown as text, never as markup.
    expect(rows.some((r) => r.includes("created an identity") && r.includes("Release <bot>"))).toBe(true);

    await page.selectOption("#a-action", "run.cancelled");
    await page.focus("#a-actor");
    await page.keyboard.press("Enter");
    await page.waitForURL(/action=run\.cancelled/);
    const filtered = await page.$$eval("#audit tbody tr", (trs) =>
      trs.map((tr) => (tr as HTMLElement).innerText),
    );
    expect(filtered).toHaveLength(1);
    expect(filtered[0]).toContain("Admin");
    await page.click(`#audit a[href="/runs/${runId}"]`);
    await page.waitForURL(`${t.url}/runs/${runId}`);

    const axeContext = await browser.newContext({
      bypassCSP: true,
      storageState: await context.storageState(),
    });
    try {
      const p = await axeContext.newPage();
      expect((await p.goto(`${t.url}/audit`))?.status()).toBe(200);
      await p.addScriptTag({ content: AXE_SOURCE });
      const violations = await p.evaluate(async () => {
        type Axe = {
          run(ctx: Document, o: object): Promise<{ violations: Array<{ id: string; impact: string }> }>;
        };
        const result = await (window as unknown as { axe: Axe }).axe.run(document, {
          resultTypes: ["violations"],
        });
        return result.violations.map((v) => `${v.impact}: ${v.id}`);
      });
      expect(violations.filter((v) => /^(serious|critical)/.test(v))).toEqual([]);
    } finally {
      await axeContext.close();
      await context.close();
    }
  }, 60_000);
});
