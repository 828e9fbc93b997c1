import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type SlackDispatch, startSlackDispatch } from "../integrations/slack/support.ts";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";
import { Browser, csrfOf, type Page, runIdsOf, signInWithKey } from "./browser.ts";

/**
 * Web sign-in end to end (docs/surfaces.md): `/agent login` through a fake Slack, the link in a browser, the
 * dashboard of the team's runs, sign-out, CSRF refusals and the admin key form. The web app's clock is
 * skewed by the tests to expire links and sessions without waiting.
 */
describe("web sign-in", () => {
  let s: SlackDispatch;
  let skewMs = 0;
  let slackRunId: string;
  let otherTeamRunId: string;

  beforeAll(async () => {
    s = await startSlackDispatch({
      env: { DISPATCH_MAX_CONCURRENT_RUNS: "0" },
      dispatch: { web: { now: () => new Date(Date.now() + skewMs) } },
    });
    await s.command({ text: "$ echo from slack", user_id: "U1" });
    slackRunId = (await waitFor(async () => (await s.runs()).find((r) => r.prompt === "$ echo from slack")))
      .run_id;
    const otherKey = await s.t.newKey("team_other");
    const other = await s.t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt: "other team's secret", title: "other team's secret" },
      {
        authorization: `Bearer ${otherKey}`,
      },
    );
    expect(other.status).toBe(200);
    otherTeamRunId = other.body.run_id;
  });
  afterAll(() => s?.stop());

  /** `/agent login` as `user`; the link in the n-th ephemeral answer to them. */
  const loginLink = async (user: string, n: number): Promise<string> => {
    const ack = await s.command({ text: "login", user_id: user });
    expect(ack.status).toBe(200);
    const text = await s.ephemeral(user, n);
    const match = /<(http[^|>]+)\|Sign in to Dispatch>/.exec(text);
    if (!match) throw new Error(`no link in ${text}`);
    return match[1]!;
  };

  /** Opens `link` in `browser` and presses the button that confirms whom it signs in. */
  const signInWithLink = async (browser: Browser, link: string): Promise<Page> => {
    const confirm = await browser.get(link);
    expect(confirm.status, confirm.html).toBe(200);
    return browser.post(new URL(link).pathname, { csrf: csrfOf(confirm) });
  };

  it("answers /agent login with a one-time link that signs the Slack user in to their team's runs", async () => {
    const link = await loginLink("U2", 1);
    expect(link.startsWith(`${s.t.url}/login/`)).toBe(true);
    expect(s.ephemerals("U2")[0]!.args.channel).toBe("C0CHAN");

    const browser = new Browser(s.t.url);
    const signedIn = await signInWithLink(browser, link);
    expect(signedIn.status).toBe(303);
    expect(signedIn.location).toBe("/");
    const sessionCookie = signedIn.setCookies.find((c) => c.startsWith("dispatch_session="))!;
    expect(sessionCookie).toMatch(/; Path=\/;/);
    expect(sessionCookie).toMatch(/; HttpOnly/);
    expect(sessionCookie).toMatch(/; SameSite=Lax/);
    expect(sessionCookie).not.toMatch(/Secure/); // the public URL is http here

    const home = await browser.get("/");
    expect(home.status).toBe(200);
    expect(home.html).toContain("user-U2 · Default team");
    expect(runIdsOf(home)).toEqual([slackRunId]);
    expect(home.html).not.toContain("other team&#39;s secret");

    // The team's run opens its run page; another team's run does not exist here.
    const mine = await browser.get(`/runs/${slackRunId}`);
    expect(mine.status).toBe(200);
    expect(mine.html).toContain("$ echo from slack");
    expect(mine.html).toMatch(
      /<dd id="source">Slack · <a href="https:\/\/[^"]+">Slack (thread|channel)<\/a><\/dd>/,
    );
    const theirs = await browser.get(`/runs/${otherTeamRunId}`);
    expect(theirs.status).toBe(404);
    expect(theirs.html).not.toContain("secret");

    // The link has been used: a second browser (or the same one again) gets nothing.
    const again = await new Browser(s.t.url).get(link);
    expect(again.status).toBe(410);
    expect(again.html).toContain("used already");
    expect(again.setCookies).toEqual([]);
  });

  it("opens a link's page naming whom it signs in, spending nothing, until its button is pressed", async () => {
    const link = await loginLink("U8", 1);
    const path = new URL(link).pathname;
    const victim = new Browser(s.t.url);
    const page = await victim.get(link);
    expect(page.status).toBe(200);
    expect(page.html).toMatch(/Sign in as <strong>user-U8<\/strong> \(<code>slack:[A-Z0-9]+:U8<\/code>\)\?/);
    expect(page.html).toContain('<button type="submit">Sign in as user-U8</button>');
    expect(page.html).toContain(`<form method="post" action="${path}">`);
    expect(page.setCookies.some((c) => c.startsWith("dispatch_session="))).toBe(false);
    expect(victim.cookies.has("dispatch_session")).toBe(false);
    expect((await victim.get("/")).html).toContain("Sign in to Dispatch");

    // Opened again (a link preview, a mail scanner, a second click): still unspent, still nobody signed in.
    expect((await new Browser(s.t.url).get(link)).status).toBe(200);
    expect((await victim.get(link)).status).toBe(200);

    // Another site's form posting the token signs nobody in and spends nothing: it has no form token.
    const forged = await new Browser(s.t.url).post(path, {});
    expect(forged.status).toBe(403);
    expect(forged.setCookies.some((c) => c.startsWith("dispatch_session="))).toBe(false);
    const guessed = await new Browser(s.t.url).post(path, { csrf: csrfOf(page) });
    expect(guessed.status).toBe(403);

    const confirmed = await victim.post(path, { csrf: csrfOf(page) });
    expect(confirmed.status).toBe(303);
    expect((await victim.get("/")).html).toContain("user-U8 · Default team");
    expect((await new Browser(s.t.url).get(link)).status).toBe(410);
  });

  it("signs in exactly once when the same link is confirmed twice at the same moment", async () => {
    const link = await loginLink("U3", 1);
    const [a, b] = await Promise.all([
      signInWithLink(new Browser(s.t.url), link),
      signInWithLink(new Browser(s.t.url), link),
    ]);
    expect([a.status, b.status].sort()).toEqual([303, 410]);
  });

  it("refuses a link past its 10 minutes", async () => {
    const link = await loginLink("U4", 1);
    const browser = new Browser(s.t.url);
    const confirm = await browser.get(link);
    skewMs = 10 * 60_000 + 1_000;
    try {
      const late = await new Browser(s.t.url).get(link);
      expect(late.status).toBe(410);
      expect(late.html).toContain("expired");
      expect(late.setCookies.some((c) => c.startsWith("dispatch_session="))).toBe(false);
      // The page opened in time does not help: the button is past the link's 10 minutes too.
      const pressed = await browser.post(new URL(link).pathname, { csrf: csrfOf(confirm) });
      expect(pressed.status).toBe(410);
      expect(browser.cookies.has("dispatch_session")).toBe(false);
    } finally {
      skewMs = 0;
    }
  });

  it("does not spend a link on a link preview", async () => {
    const link = await loginLink("U5", 1);
    const preview = await new Browser(s.t.url).get(link, { "user-agent": "Slackbot-LinkExpanding 1.0" });
    expect(preview.status).toBe(200);
    expect(preview.setCookies.some((c) => c.startsWith("dispatch_session="))).toBe(false);
    expect((await signInWithLink(new Browser(s.t.url), link)).status).toBe(303);
  });

  it("refuses a form without its CSRF token, and signs out (revoking the session) with it", async () => {
    const browser = new Browser(s.t.url);
    await signInWithLink(browser, await loginLink("U6", 1));
    const home = await browser.get("/");
    const csrf = csrfOf(home);

    const forged = await browser.post("/logout", {});
    expect(forged.status).toBe(403);
    const wrong = await browser.post("/logout", { csrf: `${csrf.slice(0, -1)}x` });
    expect(wrong.status).toBe(403);
    expect(runIdsOf(await browser.get("/"))).toEqual([slackRunId]); // still signed in

    const stolenCookie = browser.cookies.get("dispatch_session")!;
    const out = await browser.post("/logout", { csrf });
    expect(out.status).toBe(303);
    expect(browser.cookies.has("dispatch_session")).toBe(false);
    // The session is revoked on the server, not only forgotten by this browser.
    const replay = new Browser(s.t.url);
    replay.cookies.set("dispatch_session", stolenCookie);
    const after = await replay.get("/");
    expect(after.html).toContain("Sign in to Dispatch");
    expect(runIdsOf(after)).toEqual([]);
  });

  it("ends a session after 12 hours", async () => {
    const browser = new Browser(s.t.url);
    await signInWithLink(browser, await loginLink("U7", 1));
    expect(runIdsOf(await browser.get("/"))).toEqual([slackRunId]);
    skewMs = 12 * 3600_000 + 1_000;
    try {
      expect((await browser.get("/")).html).toContain("Sign in to Dispatch");
    } finally {
      skewMs = 0;
    }
  });

  it("signs an admin in with the API-key form, and refuses member keys, unknown keys and forged forms", async () => {
    const admin = new Browser(s.t.url);
    const signedIn = await signInWithKey(admin, s.t.key);
    expect(signedIn.status).toBe(303);
    expect(runIdsOf(await admin.get("/"))).toEqual([slackRunId]);

    const member = new Browser(s.t.url);
    const refused = await signInWithKey(member, await s.t.newKey("team_default", { role: "member" }));
    expect(refused.status).toBe(403);
    expect(refused.html).toContain("admin keys only");
    expect(member.cookies.has("dispatch_session")).toBe(false);

    const unknown = await signInWithKey(new Browser(s.t.url), `dsp_${"x".repeat(40)}`);
    expect(unknown.status).toBe(401);

    // Another site's form has neither the pre-session cookie nor its value.
    const forged = await new Browser(s.t.url).post("/login", { api_key: s.t.key });
    expect(forged.status).toBe(403);
    const halfForged = new Browser(s.t.url);
    await halfForged.get("/");
    expect((await halfForged.post("/login", { api_key: s.t.key, csrf: "guess" })).status).toBe(403);
  });

  it("explains how to sign in to a visitor, and shows no runs", async () => {
    const page = await new Browser(s.t.url).get("/");
    expect(page.status).toBe(200);
    expect(page.html).toContain("/agent login");
    expect(page.html).toContain('<label for="api_key">');
    expect(runIdsOf(page)).toEqual([]);
    const runPage = await new Browser(s.t.url).get(`/runs/${slackRunId}`);
    expect(runPage.status).toBe(303);
    expect(runPage.location).toBe("/");
  });
});

describe("web sign-in behind https", () => {
  it("marks its cookies Secure when the public URL is https", async () => {
    const t = await startTestDispatch({
      DISPATCH_PUBLIC_URL: "https://dispatch.example.test",
      DISPATCH_MAX_CONCURRENT_RUNS: "0",
    });
    try {
      const browser = new Browser(t.url);
      const form = await browser.get("/");
      expect(form.setCookies.find((c) => c.startsWith("dispatch_login_csrf="))).toMatch(
        /; Path=\/login; .*HttpOnly; SameSite=Strict; Secure$/,
      );
      const signedIn = await signInWithKey(browser, t.key);
      expect(signedIn.setCookies.find((c) => c.startsWith("dispatch_session="))).toMatch(
        /HttpOnly; SameSite=Lax; Secure$/,
      );
    } finally {
      await t.stop();
    }
  });
});

describe("sign-in attempts, limited per client", () => {
  let t: TestDispatch | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
  });

  /** Posts wrong admin keys from `browser` until it is refused; the refusal. */
  const exhaust = async (browser: Browser): Promise<Page> => {
    const form = await browser.get("/");
    const statuses: number[] = [];
    // Far more than the burst (10) plus what refills (1 every 3 s) while these are sent.
    for (let i = 0; i < 60; i++) {
      const page = await browser.post("/login", { csrf: csrfOf(form), api_key: `dsp_${"x".repeat(40)}` });
      statuses.push(page.status);
      if (page.status === 429) return page;
    }
    throw new Error(`never refused: ${statuses.join(",")}`);
  };

  it("refuses one address that keeps trying keys (429, Retry-After) and signs in another", async () => {
    t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0" });
    const guesser = new Browser(t.url, { from: "127.0.8.1" });
    const refused = await exhaust(guesser);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.html).toContain("Too many sign-in attempts came from your address");
    // Even with the right key, and whatever X-Forwarded-For it names (no proxy is trusted here).
    const form = await guesser.get("/");
    expect((await guesser.post("/login", { csrf: csrfOf(form), api_key: t.key })).status).toBe(429);
    const forging = new Browser(t.url, { from: "127.0.8.1", headers: { "x-forwarded-for": "198.51.100.9" } });
    expect((await signInWithKey(forging, t.key)).status).toBe(429);

    const admin = new Browser(t.url, { from: "127.0.8.2" });
    expect((await signInWithKey(admin, t.key)).status).toBe(303);
    expect((await admin.get("/")).html).toContain("Sign out");
  });

  it("behind a trusted proxy, tells clients apart by the X-Forwarded-For it sends", async () => {
    t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0", DISPATCH_TRUST_PROXY: "127.0.7.1" });
    // Both come through the proxy at 127.0.7.1, which names the client it forwards.
    const proxy = { from: "127.0.7.1" };
    const guesser = new Browser(t.url, { ...proxy, headers: { "x-forwarded-for": "203.0.113.7" } });
    await exhaust(guesser);
    const admin = new Browser(t.url, { ...proxy, headers: { "x-forwarded-for": "203.0.113.8" } });
    expect((await signInWithKey(admin, t.key)).status).toBe(303);
    // A client that is not the proxy cannot name itself another address.
    const direct = new Browser(t.url, { from: "127.0.7.2", headers: { "x-forwarded-for": "203.0.113.7" } });
    expect((await signInWithKey(direct, t.key)).status).toBe(303);
  });
});
