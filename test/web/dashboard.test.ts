import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";
import { Browser, runIdsOf, signInWithKey } from "./browser.ts";

const HOSTILE = `<script>alert("x")</script><img src=x onerror=alert(1)> & 'quotes'`;

/**
 * The dashboard at / as a signed-in admin sees it: the list API's filters under the same names,
 * keyset pages, the team's counts by state, escaping, and its weight. Runs stay where the test puts them:
 * this Dispatch executes nothing.
 */
describe("web dashboard", () => {
  let t: TestDispatch;
  let browser: Browser;
  const ids: Record<string, string> = {};
  let bobUid: string;

  const create = async (title: string, key = t.key) => {
    const res = await t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt: `$ echo ${title}`, title },
      {
        authorization: `Bearer ${key}`,
      },
    );
    expect(res.status).toBe(200);
    return res.body.run_id as string;
  };

  beforeAll(async () => {
    t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0" });
    for (const title of ["alpha deploy", "beta deploy", "gamma cleanup", "delta cleanup"])
      ids[title] = await create(title);
    const bob = await t.newKey("team_default", { role: "member", displayName: "Bob" });
    ids.bob = await create("bob's run", bob);
    bobUid = (await t.api("GET", `/api/v1/agent/runs/${ids.bob}`)).body.creator.uid;
    ids.hostile = await create(HOSTILE);
    for (const title of ["gamma cleanup", "delta cleanup"]) {
      expect((await t.api("POST", `/api/v1/agent/runs/${ids[title]}/cancel`)).status).toBe(200);
    }
    // Another team's runs are counted and listed nowhere here.
    await create("elsewhere", await t.newKey("team_other"));
    browser = new Browser(t.url);
    expect((await signInWithKey(browser, t.key)).status).toBe(303);
  });
  afterAll(() => t?.stop());

  it("lists the team's runs with their facts and counts them by state", async () => {
    const page = await browser.get("/");
    expect(page.status).toBe(200);
    expect(new Set(runIdsOf(page))).toEqual(new Set(Object.values(ids)));
    expect(page.html).toContain('<span id="count-QUEUED">4</span>');
    expect(page.html).toContain('<span id="count-CANCELLED">2</span>');
    expect(page.html).toContain('<span id="count-SUCCEEDED">0</span>');
    expect(page.html).toContain('All <span id="count-total">6</span> runs by state');
    expect(page.html).toContain(">Bob</a></td>");
    expect(page.html).not.toContain("elsewhere");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(page.headers.get("cache-control")).toBe("no-store");
  });

  it("filters by state, search and requester with the list API's parameters", async () => {
    const cancelled = await browser.get("/?state=CANCELLED");
    expect(new Set(runIdsOf(cancelled))).toEqual(new Set([ids["gamma cleanup"], ids["delta cleanup"]]));
    expect(cancelled.html).toContain('value="CANCELLED" checked');

    const search = await browser.get("/?q=DEPLOY");
    expect(new Set(runIdsOf(search))).toEqual(new Set([ids["alpha deploy"], ids["beta deploy"]]));
    expect(search.html).toContain('value="DEPLOY"');

    const both = await browser.get("/?state=QUEUED&state=CANCELLED&q=cleanup");
    expect(runIdsOf(both)).toHaveLength(2);

    const bobs = await browser.get(`/?creator=${encodeURIComponent(bobUid)}`);
    expect(runIdsOf(bobs)).toEqual([ids.bob]);

    // What the form sends for fields left empty means "no filter".
    const empty = await browser.get("/?q=&creator=");
    expect(runIdsOf(empty)).toHaveLength(6);

    const none = await browser.get("/?q=nothing-matches-this");
    expect(runIdsOf(none)).toEqual([]);
    expect(none.html).toContain("No runs match.");

    // As on the API, a filter the list does not know is refused rather than ignored.
    const bad = await browser.get("/?colour=red");
    expect(bad.status).toBe(400);
    expect(bad.html).toContain("colour");
    expect((await browser.get("/?state=SLEEPING")).status).toBe(400);
    expect((await browser.get("/?limit=101")).status).toBe(400);
  });

  it("pages with keyset links that keep the filters", async () => {
    const seen: string[] = [];
    let path: string | undefined = "/?limit=2&q=e";
    let pages = 0;
    while (path) {
      const page = await browser.get(path);
      expect(page.status).toBe(200);
      const listed = runIdsOf(page);
      expect(listed.length).toBeLessThanOrEqual(2);
      seen.push(...listed);
      pages += 1;
      const next = /<a id="next-page" rel="next" href="([^"]+)"/.exec(page.html)?.[1];
      path = next?.replaceAll("&amp;", "&");
      if (path) expect(path).toContain("q=e");
    }
    const expected = (await t.api("GET", "/api/v1/agent/runs?q=e&limit=100")).body.runs.map(
      (r: { run_id: string }) => r.run_id,
    );
    expect(seen).toEqual(expected);
    expect(pages).toBe(Math.ceil(expected.length / 2));
  });

  it("escapes a hostile title everywhere it appears", async () => {
    const page = await browser.get(`/?q=${encodeURIComponent("<script>")}`);
    expect(runIdsOf(page)).toEqual([ids.hostile]);
    expect(page.html).not.toContain("<script>");
    expect(page.html).not.toContain("<img src=x");
    expect(page.html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
    expect(page.html).toContain("&#39;quotes&#39;");
    // The search box echoes the query escaped too.
    expect(page.html).toContain('value="&lt;script&gt;"');
  });

  it("weighs under 100 KB with a full page of long-titled runs, with labelled controls", async () => {
    for (let i = 0; i < 100; i++) await create(`${"long title ".repeat(18)}${i}`);
    const page = await browser.get("/?limit=100");
    expect(runIdsOf(page)).toHaveLength(100);
    expect(Buffer.byteLength(page.html)).toBeLessThan(100 * 1024);
    for (const id of [...page.html.matchAll(/<input id="([^"]+)"/g)].map((m) => m[1])) {
      expect(page.html).toContain(`<label for="${id}">`);
    }
    expect(page.html).toContain("<legend>State</legend>");
    // One script, the live one, allowed by the nonce of this response's CSP and by nothing else.
    const scripts = [...page.html.matchAll(/<script nonce="([^"]+)">/g)].map((m) => m[1]);
    expect(page.html.split("<script").length - 1).toBe(1);
    expect(scripts).toHaveLength(1);
    expect(page.headers.get("content-security-policy")).toContain(`script-src 'nonce-${scripts[0]}'`);
  });
});
