import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type GitHubDispatch,
  HANDLE,
  startGitHubDispatch,
  uniqueIssue,
} from "../integrations/github/support.ts";
import { waitFor } from "../support/dispatch.ts";
import { Browser, csrfOf, type Page } from "./browser.ts";

const COOKIE = "dispatch_github_sign_in";

/** The code a waiting page shows. */
function codeOf(page: Page): string {
  const match = /data-sign-in-code="([A-Z0-9]{4}-[A-Z0-9]{4})"/.exec(page.html);
  if (!match) throw new Error(`no sign-in code on the page:\n${page.html.slice(0, 800)}`);
  return match[1]!;
}

/**
 * Sign-in from GitHub end to end: a browser opens /login/github and gets a code bound to its
 * cookie; a signed webhook comment `@dispatch login <code>` by a writer approves it; that browser, and
 * only it, turns it into a session. The web app's clock is skewed to expire codes without waiting.
 */
describe("GitHub sign-in", () => {
  let g: GitHubDispatch;
  let skewMs = 0;

  beforeAll(async () => {
    g = await startGitHubDispatch({
      env: { DISPATCH_MAX_CONCURRENT_RUNS: "0" },
      web: { now: () => new Date(Date.now() + skewMs) },
    });
    g.fake.permissions.set("octocat", "write");
    g.fake.permissions.set("reader", "read");
  });
  afterAll(() => g?.stop());

  /** Comments `body` as `login` on a fresh issue; Dispatch's replies there once it has handled it. */
  const comment = async (login: string, body: string): Promise<string[]> => {
    const issue = uniqueIssue();
    const res = await g.comment({ body, login, issue });
    expect(res.status).toBe(202);
    await g.settle();
    const replies = await waitFor(
      () => {
        const bodies = g.fake.botComments(g.repo, issue).map((c) => c.body);
        return bodies.length > 0 ? bodies : undefined;
      },
      { what: `Dispatch's reply to "${body}"` },
    );
    return replies;
  };

  it("signs the commenter in, in the browser that showed the code only", async () => {
    const browser = new Browser(g.t.url);
    const waiting = await browser.get("/login/github");
    expect(waiting.status).toBe(200);
    const code = codeOf(waiting);
    expect(waiting.html).toContain(`@${HANDLE} login ${code}`);
    expect(waiting.headers.get("refresh")).toBe("5");
    const pending = waiting.setCookies.find((c) => c.startsWith(`${COOKIE}=`))!;
    expect(pending).toMatch(/; Path=\/login\/github; Max-Age=600; HttpOnly; SameSite=Lax$/);
    // Reloading keeps the same code; another browser gets its own.
    expect(codeOf(await browser.get("/login/github"))).toBe(code);
    const bystander = new Browser(g.t.url);
    expect(codeOf(await bystander.get("/login/github"))).not.toBe(code);

    const replies = await comment("octocat", `@${HANDLE} login ${code.toLowerCase()}`);
    expect(replies).toHaveLength(1);
    expect(replies[0]).toContain("@octocat signed in: return to your browser.");
    expect(replies[0]!.toUpperCase()).not.toContain(code);
    expect(replies[0]).not.toContain("/login");

    // The bystander read the code in the public comment; without the first browser's cookie it is useless.
    const stillWaiting = await bystander.get("/login/github");
    expect(stillWaiting.status).toBe(200);
    expect(stillWaiting.setCookies.some((c) => c.startsWith("dispatch_session="))).toBe(false);
    const forged = new Browser(g.t.url);
    forged.cookies.set(COOKIE, randomBytes(32).toString("base64url"));
    const forgedPage = await forged.get("/login/github");
    expect(codeOf(forgedPage)).not.toBe(code);
    expect(forged.cookies.has("dispatch_session")).toBe(false);

    const stolenCookie = browser.cookies.get(COOKIE)!;
    // The approved sign-in asks whom it is for before it opens a session; opening it spends nothing.
    const confirm = await browser.get("/login/github");
    expect(confirm.status).toBe(200);
    expect(confirm.html).toContain("Continue as <strong>@octocat</strong>?");
    expect(confirm.html).toContain('<button type="submit">Continue as @octocat</button>');
    expect(confirm.headers.get("refresh")).toBeNull();
    expect(confirm.setCookies.some((c) => c.startsWith("dispatch_session="))).toBe(false);
    expect((await browser.get("/login/github")).status).toBe(200);
    // Another site's form, sent with this browser's cookies but without the form's token, opens nothing.
    const forgedPost = await browser.post("/login/github", {});
    expect(forgedPost.status).toBe(403);
    expect(browser.cookies.has("dispatch_session")).toBe(false);

    const signedIn = await browser.post("/login/github", { csrf: csrfOf(confirm) });
    expect(signedIn.status).toBe(303);
    expect(signedIn.location).toBe("/");
    expect(signedIn.setCookies.find((c) => c.startsWith("dispatch_session="))).toMatch(
      /HttpOnly; SameSite=Lax/,
    );
    expect(browser.cookies.has(COOKIE)).toBe(false);
    const home = await browser.get("/");
    expect(home.status).toBe(200);
    expect(home.html).toContain("octocat · Default team");

    // Single use: the same cookie again (another tab, a copy) opens nothing.
    const replay = new Browser(g.t.url);
    replay.cookies.set(COOKIE, stolenCookie);
    const again = await replay.get("/login/github");
    expect(again.status).toBe(410);
    expect(again.html).toContain("completed already");
    const replayCsrf = csrfOf(await replay.get("/"));
    replay.cookies.set(COOKIE, stolenCookie);
    const pressedAgain = await replay.post("/login/github", { csrf: replayCsrf });
    expect(pressedAgain.status).toBe(410);
    expect(replay.cookies.has("dispatch_session")).toBe(false);
  });

  it("refuses a code that was used already, and one Dispatch never gave out", async () => {
    const browser = new Browser(g.t.url);
    const code = codeOf(await browser.get("/login/github"));
    await comment("octocat", `@${HANDLE} login ${code}`);
    const confirm = await browser.get("/login/github");
    expect((await browser.post("/login/github", { csrf: csrfOf(confirm) })).status).toBe(303);

    const reused = await comment("octocat", `@${HANDLE} login ${code}`);
    expect(reused[0]).toContain("was used already");
    expect(reused[0]).not.toContain(code);

    const wrong = await comment("octocat", `@${HANDLE} login ZZZZ-ZZZZ`);
    expect(wrong[0]).toContain("not a sign-in code Dispatch gave out");
    expect(wrong[0]).toContain(`${g.t.url}/login/github`);
  });

  it("refuses a code past its 10 minutes, in the comment and in the browser", async () => {
    const browser = new Browser(g.t.url);
    const code = codeOf(await browser.get("/login/github"));
    skewMs = 10 * 60_000 + 1_000;
    try {
      const late = await comment("octocat", `@${HANDLE} login ${code}`);
      expect(late[0]).toContain("has expired");
      const page = await browser.get("/login/github");
      expect(page.status).toBe(410);
      expect(page.html).toContain("expired");
      expect(page.html).toContain('href="/login/github"');
      expect(browser.cookies.has("dispatch_session")).toBe(false);
      expect(browser.cookies.has(COOKIE)).toBe(false);
    } finally {
      skewMs = 0;
    }
    // A new code works again.
    expect(codeOf(await browser.get("/login/github"))).not.toBe(code);
  });

  it("refuses a commenter without the permission runs need, leaving the browser waiting", async () => {
    const browser = new Browser(g.t.url);
    const code = codeOf(await browser.get("/login/github"));
    const refused = await comment("reader", `@${HANDLE} login ${code}`);
    expect(refused[0]).toContain("@reader only people with **write** access");
    expect(refused[0]).toContain("can sign in");
    expect(refused[0]).not.toContain(code);
    const page = await browser.get("/login/github");
    expect(page.status).toBe(200);
    expect(codeOf(page)).toBe(code);
    expect(browser.cookies.has("dispatch_session")).toBe(false);
  });

  it("answers a plain login with where to start, and the sign-in page links to it", async () => {
    const [reply] = await comment("octocat", `@${HANDLE} login`);
    expect(reply).toContain(`open ${g.t.url}/login/github in your browser`);
    expect(reply).not.toMatch(/[A-Z0-9]{4}-[A-Z0-9]{4}/);
    const page = await new Browser(g.t.url).get("/");
    expect(page.html).toContain('<a href="/login/github">Sign in with GitHub</a>');
    // A prompt that starts with "login" still starts a run.
    await comment("octocat", `@${HANDLE} login fails on Safari`);
    expect((await g.runs()).some((r) => r.prompt.includes("login fails on Safari"))).toBe(true);
  });

  it("limits the sign-ins one client starts, with a 429 naming when to retry, while others still start", async () => {
    const statuses: number[] = [];
    let refusal: Page | undefined;
    const from = "127.0.9.9";
    // Far more than the burst (10) plus what refills (1 every 3 s) while these are sent.
    for (let i = 0; i < 60 && !refusal; i++) {
      const page = await new Browser(g.t.url, { from }).get("/login/github");
      statuses.push(page.status);
      if (page.status === 429) refusal = page;
    }
    expect(refusal, `statuses: ${statuses.join(",")}`).toBeDefined();
    expect(Number(refusal!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refusal!.html).toContain("Too many sign-in attempts came from your address");
    expect(refusal!.setCookies.join()).not.toContain(COOKIE);
    // Naming another address in X-Forwarded-For changes nothing: no proxy is trusted here.
    const forged = await new Browser(g.t.url, {
      from,
      headers: { "x-forwarded-for": "198.51.100.7" },
    }).get("/login/github");
    expect(forged.status).toBe(429);

    // Another client is not locked out.
    const other = await new Browser(g.t.url).get("/login/github");
    expect(other.status).toBe(200);
    expect(codeOf(other)).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
  });
});
