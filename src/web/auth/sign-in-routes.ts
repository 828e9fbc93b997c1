import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { LoginLinkRefusal, WebSession } from "../../model/web-session.ts";
import { escapeHtml, sendPage } from "../html.ts";
import { cookie, LOGIN_CSRF_COOKIE, readCookie, SESSION_COOKIE } from "./cookies.ts";
import { hasLoginFormToken, loginFormField } from "./login-form-token.ts";
import { sameSecret } from "./secrets.ts";
import type { SignInLimits } from "./sign-in-limits.ts";
import { sendSignInPage } from "./sign-in-page.ts";
import type { KeyRefusal, OpenedSession, WebSignIn } from "./web-sign-in.ts";

export interface SignInRoutesOptions {
  signIn: WebSignIn;
  /** Sign-in attempts per client, shared with the GitHub sign-in routes. */
  limits: SignInLimits;
  /** The Slack slash command (`/agent`), as the sign-in page spells it. */
  slashCommand: string;
  /** The GitHub bot's handle, when GitHub sign-in is offered. */
  githubHandle?: string;
}

/** A form body as the routes read it: each field once, strings only. */
export type FormBody = Record<string, string>;

/**
 * The live session of the request's cookie, or undefined; kept on the request (req.webSession), where the
 * caps on event streams find who is asking.
 */
export async function sessionOf(req: FastifyRequest, signIn: WebSignIn): Promise<WebSession | undefined> {
  const session = await signIn.lookup(readCookie(req.headers.cookie, SESSION_COOKIE));
  if (session) req.webSession = session;
  return session;
}

/** Whether a signed-in form carried the session's CSRF token. */
export function hasCsrf(req: FastifyRequest, session: WebSession): boolean {
  return sameSecret(formOf(req).csrf, session.csrfToken);
}

/** The refusal of a form that came without its CSRF token (another site's form, or a stale page). */
export function sendForbidden(reply: FastifyReply, session?: WebSession): FastifyReply {
  return sendPage(
    reply,
    403,
    "Refused",
    `<h1>Refused</h1><p>This form did not carry its security token, so Dispatch did nothing. Go back to <a href="/">the dashboard</a>, reload it and try again.</p>`,
    session,
  );
}

export function formOf(req: FastifyRequest): FormBody {
  const body = req.body;
  return body && typeof body === "object" ? (body as FormBody) : {};
}

/**
 * Answers a sign-in: the session's cookie (httpOnly, SameSite=Lax, the whole site), the admin form's
 * token dropped, and a redirect to the dashboard.
 */
export function startSession(reply: FastifyReply, signIn: WebSignIn, opened: OpenedSession): FastifyReply {
  return reply
    .header("set-cookie", [
      cookie(SESSION_COOKIE, opened.sessionId, {
        path: "/",
        sameSite: "Lax",
        maxAge: signIn.sessionSeconds,
        secure: signIn.secure,
      }),
      cookie(LOGIN_CSRF_COOKIE, "", {
        path: "/login",
        sameSite: "Strict",
        maxAge: 0,
        secure: signIn.secure,
      }),
    ])
    .header("cache-control", "no-store")
    .redirect("/", 303);
}

const LINK_REFUSALS: Record<LoginLinkRefusal, string> = {
  unknown: "This sign-in link is not valid.",
  used: "This sign-in link was used already: each link signs in once.",
  expired: "This sign-in link has expired: links work for 10 minutes.",
};

const KEY_REFUSALS: Record<KeyRefusal, string> = {
  malformed: "That is not an API key: keys look like dsp_ followed by 40 letters and digits.",
  unknown: "Unknown or revoked API key.",
  not_admin:
    "This form takes admin keys only. Members sign in from Slack with the login command; an administrator can create an admin key with dispatch keys create --role admin.",
};

/**
 * GET /login/<token> (a Slack login link), POST /login/<token> (its confirmation), POST /login (the admin
 * API-key form) and POST /logout. Opening a link signs nobody in: its page names the account and asks; the
 * button posts, with the sign-in forms' CSRF token, and only that spends the link (once). A person sent
 * someone else's link is not signed in as that someone unawares (login CSRF), and link previews and mail
 * scanners that fetch the link spend nothing.
 */
export async function signInRoutes(app: FastifyInstance, opts: SignInRoutesOptions): Promise<void> {
  const { signIn, limits } = opts;

  const refusedLink = (reply: FastifyReply, why: LoginLinkRefusal) =>
    sendPage(
      reply,
      why === "unknown" ? 404 : 410,
      "Sign-in link refused",
      `<h1>Cannot sign in</h1><p role="alert">${escapeHtml(LINK_REFUSALS[why])}</p><p>Type <code>${escapeHtml(opts.slashCommand)} login</code> in Slack for a new link.</p>`,
    );

  app.get<{ Params: { token: string } }>("/login/:token", async (req, reply) => {
    const limited = limits.refuseAttempt(req, reply);
    if (limited) return limited;
    const link = await signIn.inspect(req.params.token);
    if ("refused" in link) return refusedLink(reply, link.refused);
    const name = escapeHtml(link.principal.displayName);
    return sendPage(
      reply,
      200,
      "Sign in",
      `<h1>Sign in to Dispatch</h1>
<p>Sign in as <strong>${name}</strong> (<code>${escapeHtml(link.principal.id)}</code>)?</p>
<form method="post" action="/login/${escapeHtml(req.params.token)}">
${loginFormField(reply, req.headers.cookie, signIn.secure)}
<p><button type="submit">Sign in as ${name}</button></p>
</form>
<p class="muted">Not you? Close this page: someone may have sent you a link of their own. The link works once, within 10 minutes of <code>${escapeHtml(opts.slashCommand)} login</code>.</p>`,
    );
  });

  app.post<{ Params: { token: string } }>("/login/:token", async (req, reply) => {
    if (!hasLoginFormToken(req, formOf(req))) return sendForbidden(reply);
    const limited = limits.refuseAttempt(req, reply);
    if (limited) return limited;
    const result = await signIn.redeem(req.params.token);
    if ("refused" in result) return refusedLink(reply, result.refused);
    return startSession(reply, signIn, result);
  });

  app.post("/login", async (req, reply) => {
    const form = formOf(req);
    if (!hasLoginFormToken(req, form)) return sendForbidden(reply);
    const limited = limits.refuseAttempt(req, reply);
    if (limited) return limited;
    const pageOpts = {
      cookieHeader: req.headers.cookie,
      secure: signIn.secure,
      slashCommand: opts.slashCommand,
      ...(opts.githubHandle ? { githubHandle: opts.githubHandle } : {}),
    };
    const key = (form.api_key ?? "").trim();
    if (key === "")
      return sendSignInPage(reply, { ...pageOpts, status: 400, problem: "Enter an admin API key." });
    const result = await signIn.signInWithKey(key);
    if ("refused" in result) {
      const status = result.refused === "not_admin" ? 403 : 401;
      return sendSignInPage(reply, { ...pageOpts, status, problem: KEY_REFUSALS[result.refused] });
    }
    return startSession(reply, signIn, result);
  });

  app.post("/logout", async (req, reply) => {
    const session = await sessionOf(req, signIn);
    if (!session) return reply.header("cache-control", "no-store").redirect("/", 303);
    if (!hasCsrf(req, session)) return sendForbidden(reply, session);
    await signIn.signOut(session);
    return reply
      .header(
        "set-cookie",
        cookie(SESSION_COOKIE, "", { path: "/", sameSite: "Lax", maxAge: 0, secure: signIn.secure }),
      )
      .header("cache-control", "no-store")
      .redirect("/", 303);
  });
}
