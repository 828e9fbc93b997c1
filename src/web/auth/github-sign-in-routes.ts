import type { FastifyInstance, FastifyReply } from "fastify";
import { GITHUB_SIGN_IN_TTL_MS } from "../../model/github-sign-in.ts";
import { escapeHtml, sendPage } from "../html.ts";
import { cookie, readCookie } from "./cookies.ts";
import type { GitHubSignIn } from "./github-sign-in.ts";
import { hasLoginFormToken, loginFormField } from "./login-form-token.ts";
import type { SignInLimits } from "./sign-in-limits.ts";
import { formOf, sendForbidden, startSession } from "./sign-in-routes.ts";
import type { WebSignIn } from "./web-sign-in.ts";

/**
 * The secret of a browser's GitHub sign-in. httpOnly, scoped to the sign-in page, SameSite=Lax so that
 * following a link to the page (from the instructions on GitHub) keeps the sign-in already started.
 */
export const GITHUB_SIGN_IN_COOKIE = "dispatch_github_sign_in";
export const GITHUB_SIGN_IN_PATH = "/login/github";

/** How often the waiting page reloads itself (no script: the Refresh header does it). */
const REFRESH_SECONDS = 5;
export interface GitHubSignInRoutesOptions {
  github: GitHubSignIn;
  signIn: WebSignIn;
  /** Sign-in attempts per client (a start and a completion are one each), shared with the other routes. */
  limits: SignInLimits;
}

const REFUSALS = {
  expired: "This sign-in code expired before it was approved and used: codes work for 10 minutes.",
  used: "This sign-in was completed already: each code signs in once.",
} as const;

/**
 * GET /login/github: starts a sign-in in this browser and shows its code; reloads itself while it waits
 * for the comment; once the comment approved it, asks "Continue as @login?". Only the button (POST
 * /login/github, with the sign-in forms' CSRF token) opens the session, in this browser only: it holds the
 * cookie. A GET that starts a sign-in is safe: another site can make a browser start one, which signs
 * nobody in; and a browser made to hold someone else's approved sign-in is told whose it is before it
 * becomes theirs.
 */
export async function githubSignInRoutes(
  app: FastifyInstance,
  opts: GitHubSignInRoutesOptions,
): Promise<void> {
  const { github, signIn, limits } = opts;
  const setBrowserCookie = (reply: FastifyReply, value: string, maxAgeMs: number) =>
    reply.header(
      "set-cookie",
      cookie(GITHUB_SIGN_IN_COOKIE, value, {
        path: GITHUB_SIGN_IN_PATH,
        sameSite: "Lax",
        maxAge: maxAgeMs / 1000,
        secure: signIn.secure,
      }),
    );

  const refused = (reply: FastifyReply, why: keyof typeof REFUSALS) => {
    setBrowserCookie(reply, "", 0);
    return sendPage(
      reply,
      410,
      "Cannot sign in",
      `<h1>Cannot sign in</h1><p role="alert">${escapeHtml(REFUSALS[why])}</p><p><a href="${GITHUB_SIGN_IN_PATH}">Get a new code</a></p>`,
    );
  };

  app.get(GITHUB_SIGN_IN_PATH, async (req, reply) => {
    const known = await github.status(readCookie(req.headers.cookie, GITHUB_SIGN_IN_COOKIE));
    switch (known.state) {
      case "approved": {
        const login = escapeHtml(known.as.displayName);
        return sendPage(
          reply,
          200,
          "Sign in with GitHub",
          `<h1>Sign in with GitHub</h1>
<p>Your comment was seen. Continue as <strong>@${login}</strong>?</p>
<form method="post" action="${GITHUB_SIGN_IN_PATH}">
${loginFormField(reply, req.headers.cookie, signIn.secure)}
<p><button type="submit">Continue as @${login}</button></p>
</form>
<p class="muted">Not you? Close this page: this browser is holding a sign-in that someone else approved.</p>`,
        );
      }
      case "expired":
      case "used":
        return refused(reply, known.state);
      case "pending":
        return waitingPage(reply, github, known.code, known.expiresAt, signIn.now());
      case "none": {
        const limited = limits.refuseGitHubStart(req, reply);
        if (limited) return limited;
        const started = await github.start();
        setBrowserCookie(reply, started.browserToken, GITHUB_SIGN_IN_TTL_MS);
        return waitingPage(reply, github, started.code, started.expiresAt, signIn.now());
      }
    }
  });

  app.post(GITHUB_SIGN_IN_PATH, async (req, reply) => {
    if (!hasLoginFormToken(req, formOf(req))) return sendForbidden(reply);
    const limited = limits.refuseAttempt(req, reply);
    if (limited) return limited;
    const browserToken = readCookie(req.headers.cookie, GITHUB_SIGN_IN_COOKIE);
    const result = browserToken ? await github.redeem(browserToken) : { refused: "unknown" as const };
    if ("refused" in result) {
      // Another tab of this browser signed in a moment ago, or it expired in between: say so. Not approved
      // yet, or nothing started: back to the page that shows where it stands.
      if (result.refused === "expired" || result.refused === "used") return refused(reply, result.refused);
      return reply.header("cache-control", "no-store").redirect(GITHUB_SIGN_IN_PATH, 303);
    }
    setBrowserCookie(reply, "", 0);
    return startSession(reply, signIn, result);
  });
}

/** The code and what to do with it; the page reloads itself until the comment is seen. */
function waitingPage(
  reply: FastifyReply,
  github: GitHubSignIn,
  code: string,
  expiresAt: string,
  now: Date,
): FastifyReply {
  const minutes = Math.max(1, Math.ceil((Date.parse(expiresAt) - now.getTime()) / 60_000));
  const comment = `@${github.handle} login ${code}`;
  reply.header("refresh", String(REFRESH_SECONDS));
  return sendPage(
    reply,
    200,
    "Sign in with GitHub",
    `<h1>Sign in with GitHub</h1>
<p>Comment this on an issue or pull request of a repository Dispatch is installed on:</p>
<p><code data-sign-in-code="${escapeHtml(code)}">${escapeHtml(comment)}</code></p>
<p role="status">Waiting for your comment… This page checks again every ${REFRESH_SECONDS} seconds (<a href="${GITHUB_SIGN_IN_PATH}">check now</a>) and signs you in once Dispatch has seen it.</p>
<p class="muted">The code works for ${minutes} more minute${minutes === 1 ? "" : "s"}, and only in this browser: it is safe to post in public. You need at least ${escapeHtml(github.minPermission)} access to the repository.</p>`,
  );
}
