import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SESSION_COOKIE } from "../../src/web/auth/cookies.ts";
import { RUN_PAGE_BUDGET } from "../../src/web/run-page.ts";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../support/fake-model/server.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";
import { saveScreenshot } from "../support/screenshots.ts";
import { Browser as HttpBrowser, signInWithKey } from "./browser.ts";
import { launchChromium, runBrowserTests, warnIfSkipped } from "./chromium.ts";

/**
 * The run page as a live view, in headless Chromium: a builtin-harness run against the fake Anthropic
 * model keeps a plan, calls tools, answers in Markdown and changes a file of its repository. The page
 * shows each part as it arrives (the model waits at gates the test opens), reads the same with
 * JavaScript off, has no serious accessibility violation, and a 5,000-event transcript renders folded.
 */

const LIVE_MS = 15_000;
const SONNET = "anthropic/claude-sonnet-4-5";
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

const FINAL = [
  "## Done",
  "",
  "Changed the **greeting** and checked it:",
  "",
  "- `src/greet.ts` says *hello, world*",
  "- <script>alert('not markup')</script> stays text",
  "",
  "```ts",
  'export const greeting = "hello, world";',
  "```",
].join("\n");

warnIfSkipped("run page live browser tests");

describe.runIf(runBrowserTests)("the run page as a live view, in headless Chromium", () => {
  let remotes: GitRemotes;
  let github: FakeGitHub;
  let fake: FakeModel;
  let t: TestDispatch;
  let chromium: Browser;
  let cookie: string;
  let releaseEdit!: () => void;
  let releaseFinal!: () => void;
  let runId: string;
  const turns: ScriptedTurn[] = [];

  const url = (path: string) => `${t.url}${path}`;
  const contextWith = async (opts: { javaScriptEnabled?: boolean; bypassCSP?: boolean } = {}) => {
    const context = await chromium.newContext(opts);
    await context.addCookies([{ name: SESSION_COOKIE, value: cookie, url: t.url }]);
    return context;
  };
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
    remotes = new GitRemotes();
    remotes.create("acme/app", { "README.md": "# app\n", "src/greet.ts": 'export const greeting = "hi";\n' });
    github = await new FakeGitHub().start();
    github.gitRoot = remotes.root;
    const edit = new Promise<void>((resolve) => {
      releaseEdit = resolve;
    });
    const final = new Promise<void>((resolve) => {
      releaseFinal = resolve;
    });
    turns.push(
      {
        text: "I'll keep a **plan**.",
        calls: [
          {
            name: "update_plan",
            input: {
              plan: [
                { step: "Read the greeting", status: "in_progress" },
                { step: "Change it", status: "pending" },
                { step: "Check the file", status: "pending" },
              ],
            },
          },
          { name: "read_file", input: { path: "src/greet.ts" } },
        ],
        usage: { input_tokens: 1000, output_tokens: 100 },
      },
      {
        gate: edit,
        calls: [
          {
            name: "edit_file",
            input: { path: "src/greet.ts", old_string: '"hi"', new_string: '"hello, world"' },
          },
          {
            name: "update_plan",
            input: {
              plan: [
                { step: "Read the greeting", status: "completed" },
                { step: "Change it", status: "completed" },
                { step: "Check the file", status: "in_progress" },
              ],
            },
          },
        ],
        usage: { input_tokens: 2000, output_tokens: 200 },
      },
      // After the edit (calls of one step run together): the check sees the new text.
      {
        calls: [{ name: "shell", input: { command: "cat src/greet.ts; seq 1 60" } }],
        usage: { input_tokens: 500, output_tokens: 50 },
      },
      { gate: final, text: FINAL, usage: { input_tokens: 3000, output_tokens: 300 } },
    );
    fake = await startFakeModel(turns);
    t = await startTestDispatch({
      ANTHROPIC_API_KEY: "test-anthropic-key",
      ANTHROPIC_BASE_URL: fake.baseUrl("anthropic"),
      ...deliveryEnv(remotes, github),
    });
    const http = new HttpBrowser(t.url);
    expect((await signInWithKey(http, t.key)).status).toBe(303);
    cookie = http.cookies.get(SESSION_COOKIE)!;
    chromium = await launchChromium();
  });
  afterAll(async () => {
    releaseEdit?.();
    releaseFinal?.();
    await chromium?.close();
    await t?.stop();
    await fake?.close();
    await github?.stop();
    remotes?.remove();
  });

  it("shows the plan, tool rows and Markdown as they arrive, then the diff", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", {
      title: "Greet the world",
      prompt: "Make the greeting say hello, world",
      config: { repository: "acme/app", model_id: SONNET },
    });
    expect(created.status, created.text).toBe(200);
    runId = created.body.run_id;
    // Waiting at the first gate: the plan and the file read are on the transcript.
    await waitFor(
      async () => {
        const events = (await t.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`)).body.events;
        return (events as Array<{ type: string }>).some((e) => e.type === "tool_result") || undefined;
      },
      { timeoutMs: LIVE_MS, what: "the first tool result" },
    );
    const context = await contextWith();
    const consoleErrors: string[] = [];
    try {
      const page = await context.newPage();
      page.on("console", (msg) => {
        if (msg.type() === "error") consoleErrors.push(msg.text());
      });
      expect((await page.goto(url(`/runs/${runId}`)))?.status()).toBe(200);

      // The header: state, a ticking run time, tokens so far, the agent and the repository.
      expect(await page.locator("#state").textContent()).toBe("In progress");
      expect(await page.locator("#agent").textContent()).toContain("claude-sonnet-4-5");
      expect(await page.locator(".run-head").textContent()).toContain("acme/app");
      expect(await page.locator("#tokens").textContent()).toBe("1,100 tokens");
      const before = await page.locator("#elapsed").textContent();
      await page.waitForFunction((was) => document.getElementById("elapsed")?.textContent !== was, before, {
        timeout: LIVE_MS,
      });

      // The plan as a checklist; the agent's Markdown rendered; the read as one folded row.
      const plan = page.locator("#plan");
      expect(await plan.isVisible()).toBe(true);
      expect(await plan.locator("h2").textContent()).toBe("Plan 0 of 3 done");
      expect(await plan.locator("li.step-in_progress").textContent()).toContain("Read the greeting");
      expect(await page.locator("#transcript .ev-message .md strong").first().textContent()).toBe("plan");
      const read = page.locator("#transcript > li.ev-tool", { hasText: "read_file" });
      expect(await read.locator(".tool-input").textContent()).toBe("src/greet.ts");
      expect(await read.locator(".tool-status").textContent()).toBe("ok");
      expect(await read.locator("pre.output").isVisible()).toBe(false);
      // No usage entry, never JSON: the numbers are in the header.
      expect(await page.locator("#transcript").textContent()).not.toContain("input_tokens");

      // The next step arrives while the page is open: the plan updates, new rows appear.
      releaseEdit();
      await page.waitForFunction(
        () => document.querySelector("#plan h2")?.textContent === "Plan 2 of 3 done",
        undefined,
        { timeout: LIVE_MS },
      );
      const shell = page.locator("#transcript > li.ev-tool", { hasText: "cat src/greet.ts" });
      await shell.locator(".tool-status", { hasText: "ok · exit 0" }).waitFor({ timeout: LIVE_MS });
      await shell.locator("summary").first().click();
      // 61 lines: the start shows, the whole output is one click further.
      expect(await shell.locator("pre.output").textContent()).toContain('"hello, world"');
      const full = shell.locator("details.full-output");
      expect(await full.locator("summary").textContent()).toMatch(/^Full output \(\d+ lines/);
      expect(await full.locator("pre").isVisible()).toBe(false);
      await full.locator("summary").click();
      expect(await full.locator("pre").textContent()).toContain("\n60");
      await page.waitForFunction(
        () => document.getElementById("tokens")?.textContent === "3,850 tokens",
        undefined,
        { timeout: LIVE_MS },
      );

      // The final answer: Markdown (headings nested under the page's), code highlighted, HTML as text.
      releaseFinal();
      await page.waitForFunction(
        () => document.getElementById("state")?.textContent === "Succeeded",
        undefined,
        {
          timeout: LIVE_MS,
        },
      );
      const answer = page.locator("#transcript .ev-message", { hasText: "Done" });
      await answer.waitFor({ timeout: LIVE_MS });
      expect(await answer.locator("h4").textContent()).toBe("Done");
      expect(await answer.locator("code .hljs-keyword").first().textContent()).toBe("export");
      expect(await answer.textContent()).toContain("<script>alert('not markup')</script>");
      expect(await page.locator("script").count()).toBe(1);
      expect(await page.locator("#cancel-run").count()).toBe(0);
      // The changes come with the end of the run: the file list and a highlighted per-file diff.
      const changes = page.locator("#changes");
      await changes.waitFor({ timeout: LIVE_MS });
      expect(await changes.locator(".files li").textContent()).toContain("src/greet.ts");
      expect(await changes.locator("details.file .d2h-ins .d2h-code-line-ctn").textContent()).toContain(
        '"hello, world"',
      );
      expect(await changes.locator("details.file .d2h-cntx, details.file .d2h-del").count()).toBeGreaterThan(
        0,
      );
      // What the page showed live is what a reload renders.
      const live = await entries(page);
      await page.reload();
      expect(await entries(page)).toEqual(live);
      // The README's pictures: the top of the page (with the check's row open), then the changes.
      await page.setViewportSize({ width: 1280, height: 1000 });
      await page
        .locator("#transcript > li.ev-tool", { hasText: "cat src/greet.ts" })
        .locator("summary")
        .first()
        .click();
      await page.evaluate(() => window.scrollTo(0, 0));
      await saveScreenshot(page, "run-page.png");
      await page.locator("#changes").scrollIntoViewIfNeeded();
      await saveScreenshot(page, "run-page-changes.png");
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("reads the same with JavaScript off", async () => {
    const context = await contextWith({ javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      expect((await page.goto(url(`/runs/${runId}`)))?.status()).toBe(200);
      expect(await page.locator("#state").textContent()).toBe("Succeeded");
      expect(await page.locator("#plan h2").textContent()).toBe("Plan 2 of 3 done");
      expect(await page.locator("#plan li").count()).toBe(3);
      expect(await page.locator("#transcript .ev-message h4").textContent()).toBe("Done");
      const row = page.locator("#transcript > li.ev-tool", { hasText: "edit_file" });
      await row.locator("summary").first().click();
      expect(await row.locator("pre.output").isVisible()).toBe(true);
      expect(await page.locator("#changes .d2h-ins").first().isVisible()).toBe(true);
      // The follow-up box opens without a script too.
      await page.locator("#followup-box > summary").click();
      expect(await page.getByLabel("Message to the agent").isVisible()).toBe(true);
    } finally {
      await context.close();
    }
  });

  it("has no serious or critical accessibility violation, on the run page and the session page", async () => {
    // axe's script is let in by this context alone; the pages' CSP admits only their own.
    const context = await contextWith({ bypassCSP: true });
    try {
      const page = await context.newPage();
      await page.goto(url(`/runs/${runId}`));
      // Open rows too: what a reader unfolds must pass as well.
      await page.locator("#transcript details.tool").evaluateAll((rows) => {
        for (const row of rows) (row as HTMLDetailsElement).open = true;
      });
      expect(await seriousViolations(page)).toEqual([]);
      const run = (await t.api("GET", `/api/v1/agent/runs/${runId}`)).body;
      await page.goto(run.session_link);
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("renders a 5,000-event transcript a page at a time, its outputs folded", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", { prompt: "$ echo long run" });
    const long = await waitForState(t, created.body.run_id, ["SUCCEEDED"]);
    const store = t.dispatch.store;
    const output = (i: number) => Array.from({ length: 40 }, (_, l) => `output ${i} line ${l}`).join("\n");
    for (let i = 0; i < 1250; i++) {
      await Promise.all([
        store.appendEvent(long.run_id, "tool_call", {
          tool: "shell",
          command: `step ${i}`,
          call_id: `c${i}`,
        }),
        store.appendEvent(long.run_id, "message", { role: "assistant", text: `Step **${i}** done.` }),
      ]);
      await Promise.all([
        store.appendEvent(long.run_id, "tool_result", {
          tool: "shell",
          call_id: `c${i}`,
          exit_code: 0,
          output: output(i),
        }),
        store.appendEvent(long.run_id, "usage", { input_tokens: 10, output_tokens: 1, total_tokens: 11 }),
      ]);
    }
    const context = await contextWith();
    try {
      const page = await context.newPage();
      expect((await page.goto(url(`/runs/${long.run_id}`)))?.status()).toBe(200);
      const rows = page.locator("#transcript > li.ev-tool", { hasText: /step \d+/ });
      expect(await rows.count()).toBeGreaterThan(10);
      // Every row folded, and every long output folded again inside its row.
      expect(await page.locator("#transcript details.tool[open]").count()).toBe(0);
      expect(await page.locator("#transcript details.full-output").count()).toBe(await rows.count());
      expect(await rows.first().locator("pre.output").isVisible()).toBe(false);
      // A page at a time: the rest is linked, and the page is not live.
      expect(await page.locator("#transcript").getAttribute("data-live")).toBe("false");
      expect(await page.locator("#later").isVisible()).toBe(true);
      const events = Number(await page.locator("#transcript").getAttribute("data-last-seq"));
      expect(events).toBeLessThanOrEqual(RUN_PAGE_BUDGET.events + 60);
    } finally {
      await context.close();
    }
  });
});

/** The transcript's entries as a reader sees them (a tool row's measured duration left out). */
function entries(page: Page) {
  return page.locator("#transcript > li").evaluateAll((items) =>
    items.map((li) => ({
      key: (li as HTMLElement).dataset.key,
      text: li.textContent?.replace(/\b\d+(ms|s)\b/g, "…"),
    })),
  );
}
