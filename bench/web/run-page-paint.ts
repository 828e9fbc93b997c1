/**
 * Run page benchmark: first contentful paint of `/runs/<id>` in headless Chromium for a run with a
 * 5,000-event transcript (1,250 tool calls with 40-line outputs, messages and usage), against the same page
 * of a run with a one-command transcript measured in the same run as the baseline. Target: p50 < 1 s.
 *
 *   npm run bench:run-page      (= node bench/web/run-page-paint.ts)
 *
 * Dispatch runs in this process (the events are appended through its store, as a long run writes them);
 * each page load is a fresh browser context signed in with the admin key. Knob: BENCH_PAINTS (default 15).
 */
import type { Browser } from "playwright-core";
import { SESSION_COOKIE } from "../../src/web/auth/cookies.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../../test/support/dispatch.ts";
import { Browser as HttpBrowser, signInWithKey } from "../../test/web/browser.ts";
import { launchChromium } from "../../test/web/chromium.ts";
import { machineNow, ms, type ResultRow, recordResults } from "../support/results.ts";

const PAINTS = Number(process.env.BENCH_PAINTS ?? 15);
const TARGET_MS = 1000;

async function firstPaints(
  chromium: Browser,
  t: TestDispatch,
  cookie: string,
  runId: string,
): Promise<number[]> {
  const paints: number[] = [];
  for (let i = 0; i < PAINTS; i++) {
    const context = await chromium.newContext();
    await context.addCookies([{ name: SESSION_COOKIE, value: cookie, url: t.url }]);
    const page = await context.newPage();
    const res = await page.goto(`${t.url}/runs/${runId}`, { waitUntil: "load" });
    if (res?.status() !== 200) throw new Error(`GET /runs/${runId}: ${res?.status()}`);
    // Paint entries arrive after the frame is drawn: observed (buffered), not read at `load`.
    const fcp = await page.evaluate(
      () =>
        new Promise<number>((resolve) => {
          new PerformanceObserver((list) => {
            const paint = list.getEntries().find((e) => e.name === "first-contentful-paint");
            if (paint) resolve(paint.startTime);
          }).observe({ type: "paint", buffered: true });
          setTimeout(() => resolve(Number.NaN), 10_000);
        }),
    );
    if (Number.isNaN(fcp)) throw new Error("the browser reported no first contentful paint");
    paints.push(fcp);
    await context.close();
  }
  return paints.sort((a, b) => a - b);
}

async function finishedRun(t: TestDispatch, prompt: string): Promise<string> {
  const created = await t.api("POST", "/api/v1/agent/runs", { prompt });
  if (created.status !== 200) throw new Error(`creating a run: ${created.status} ${created.text}`);
  return (await waitForState(t, created.body.run_id, ["SUCCEEDED"])).run_id;
}

async function main(): Promise<number> {
  const machine = machineNow();
  const t = await startTestDispatch({ DISPATCH_LOG_LEVEL: "warn" });
  const chromium = await launchChromium();
  try {
    const http = new HttpBrowser(t.url);
    if ((await signInWithKey(http, t.key)).status !== 303) throw new Error("signing in with the admin key");
    const cookie = http.cookies.get(SESSION_COOKIE)!;

    const short = await finishedRun(t, "$ echo short");
    const long = await finishedRun(t, "$ echo long");
    const output = (i: number) => Array.from({ length: 40 }, (_, l) => `output ${i} line ${l}`).join("\n");
    for (let i = 0; i < 1250; i++) {
      const store = t.dispatch.store;
      await store.appendEvent(long, "tool_call", { tool: "shell", command: `step ${i}`, call_id: `c${i}` });
      await store.appendEvent(long, "message", { role: "assistant", text: `Step **${i}** done.` });
      await store.appendEvent(long, "tool_result", {
        tool: "shell",
        call_id: `c${i}`,
        exit_code: 0,
        output: output(i),
      });
      await store.appendEvent(long, "usage", { input_tokens: 10, output_tokens: 1, total_tokens: 11 });
    }

    const baseline = await firstPaints(chromium, t, cookie, short);
    const measured = await firstPaints(chromium, t, cookie, long);
    const p = (xs: number[], q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
    const rows: ResultRow[] = [
      {
        benchmark: "run page, 5,000-event transcript: first contentful paint p50",
        measured: ms(p(measured, 0.5)),
        target: `< ${TARGET_MS} ms`,
        met: p(measured, 0.5) < TARGET_MS,
        note: `${(p(measured, 0.5) / p(baseline, 0.5)).toFixed(2)}× a one-command run's page (p50 ${ms(p(baseline, 0.5))})`,
      },
      {
        benchmark: "run page, 5,000-event transcript: first contentful paint p99",
        measured: ms(p(measured, 0.99)),
        target: "report",
      },
    ];
    recordResults("run-page", machine, rows);
    for (const row of rows)
      console.log(`${row.benchmark}: ${row.measured} (${row.target})${row.note ? `, ${row.note}` : ""}`);
    return 0;
  } finally {
    await chromium.close();
    await t.stop();
  }
}

process.exitCode = await main();
