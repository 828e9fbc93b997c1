import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { Browser, type Page, signInWithKey } from "./browser.ts";

/** A run that prints once, then stays quiet (no event) until its workspace has a `gate` file. */
const QUIET = "Goes quiet\n$ echo started\n$ until [ -e gate ]; do sleep 0.02; done";

/** The retry form's fields, as the browser would send them. */
function retryForm(page: Page, runId: string): Record<string, string> {
  const form = new RegExp(
    `<form method="post" action="/runs/${runId}/retry" id="retry-run">([\\s\\S]*?)</form>`,
  ).exec(page.html);
  expect(form, "a Retry form on the run page").not.toBeNull();
  const fields: Record<string, string> = {};
  for (const m of form![1]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    fields[m[1]!] = m[2]!;
  expect(Object.keys(fields).sort()).toEqual(["csrf", "retry_key"]);
  return fields;
}

/**
 * Retry on the run page (stalls are never silent: Cancel and Retry, docs/surfaces.md): a run that has gone
 * quiet past DISPATCH_STALL_AFTER_S, or that failed, offers Retry; it starts a new run with the same
 * prompt (once, however often the form is sent) and cancels the stalled one.
 */
describe("web run page: Retry", () => {
  let t: TestDispatch;
  let browser: Browser;

  const create = async (prompt: string) => {
    const res = await t.api("POST", "/api/v1/agent/runs", { prompt, title: "Retry me" });
    expect(res.status, res.text).toBe(200);
    return res.body.run_id as string;
  };
  const runIds = async () =>
    (
      (await t.api("GET", "/api/v1/agent/runs?limit=100")).body.runs as Array<{
        run_id: string;
        prompt: string;
      }>
    )
      .filter((r) => r.prompt.startsWith("Goes quiet") || r.prompt.startsWith("Fails"))
      .map((r) => r.run_id);

  beforeAll(async () => {
    t = await startTestDispatch({ DISPATCH_STALL_AFTER_S: "1" });
    browser = new Browser(t.url);
    expect((await signInWithKey(browser, t.key)).status).toBe(303);
  });
  afterAll(() => t?.stop());

  it("retries a stalled run: the same prompt starts once, the stalled run is cancelled", async () => {
    const stalled = await create(QUIET);
    await waitForState(t, stalled, ["INPROGRESS"]);
    // The page says the run made no progress, and offers Retry next to Cancel.
    const page = await waitFor(
      async () => {
        const p = await browser.get(`/runs/${stalled}`);
        return /<dd id="stall">No progress for/.test(p.html) ? p : undefined;
      },
      { what: "the run page saying the run stalled", timeoutMs: 20_000 },
    );
    expect(page.html).toContain(">Retry</button>");
    expect(page.html).toContain("starts a new run with the same prompt and settings, and cancels this one");
    const fields = retryForm(page, stalled);

    const first = await browser.post(`/runs/${stalled}/retry`, fields);
    expect(first.status).toBe(303);
    const retried = /^\/runs\/([^?]+)\?done=retried$/.exec(first.location ?? "")?.[1];
    expect(retried, `redirect to the new run, got ${first.location}`).toBeTruthy();
    expect(retried).not.toBe(stalled);
    // A second submission of the same form (a double click, a resend) starts nothing more.
    const again = await browser.post(`/runs/${stalled}/retry`, fields);
    expect(again.location).toBe(first.location);

    const old = await waitForState(t, stalled, ["CANCELLED"]);
    expect(old.state).toBe("CANCELLED");
    const fresh = (await t.api("GET", `/api/v1/agent/runs/${retried}`)).body;
    expect(fresh.prompt).toBe(QUIET);
    expect(fresh.title).toBe("Retry me");
    expect((await runIds()).filter((id) => id !== stalled)).toEqual([retried]);
    const landed = await browser.get(first.location!);
    expect(landed.html).toContain("Started again: this is the new run");
    await writeFile(join(t.dataDir, "workspaces", retried!, "gate"), "");
    await waitForState(t, retried!, ["SUCCEEDED"]);
  });

  it("offers Retry on a failed run, not on one that succeeded, and refuses a form without its key", async () => {
    const failed = await create("Fails\n$ exit 3");
    expect((await waitForState(t, failed, ["FAILED", "SUCCEEDED", "ERROR"])).state).toBe("FAILED");
    const page = await browser.get(`/runs/${failed}`);
    const fields = retryForm(page, failed);
    expect(page.html).not.toContain("and cancels this one");
    const missingKey = await browser.post(`/runs/${failed}/retry`, { csrf: fields.csrf! });
    expect(missingKey.status).toBe(400);
    expect(missingKey.html).toContain("reload the run page and retry from there");
    const noCsrf = await browser.post(`/runs/${failed}/retry`, { retry_key: fields.retry_key! });
    expect(noCsrf.status).toBe(403);
    const retried = await browser.post(`/runs/${failed}/retry`, fields);
    expect(retried.status).toBe(303);
    const newId = /^\/runs\/([^?]+)\?/.exec(retried.location ?? "")![1]!;
    expect((await waitForState(t, newId, ["FAILED", "SUCCEEDED", "ERROR"])).state).toBe("FAILED");

    const ok = await create("Goes quiet\n$ true");
    await waitForState(t, ok, ["SUCCEEDED"]);
    expect((await browser.get(`/runs/${ok}`)).html).not.toContain('id="retry-run"');
  });
});
