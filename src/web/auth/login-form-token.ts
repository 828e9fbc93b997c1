import type { FastifyReply, FastifyRequest } from "fastify";
import { escapeHtml } from "../html.ts";
import { cookie, LOGIN_CSRF_COOKIE, readCookie } from "./cookies.ts";
import { newToken, sameSecret, TOKEN_PATTERN } from "./secrets.ts";

/** How long a sign-in form's token lives (the time to paste a key, or to read whom a link signs in). */
const LOGIN_FORM_SECONDS = 3600;

/**
 * The CSRF token of the forms that sign a browser in (the admin key form, the buttons confirming a Slack
 * login link or a GitHub sign-in), before any session exists: double-submitted. The same random value
 * goes into a SameSite=Strict, httpOnly cookie scoped to /login and into the form's hidden field, and the
 * POST must carry both, equal. Another site's form can send neither, so it cannot sign a visitor in as
 * someone else (login CSRF).
 */
export function loginFormField(
  reply: FastifyReply,
  cookieHeader: string | undefined,
  secure: boolean,
): string {
  const existing = readCookie(cookieHeader, LOGIN_CSRF_COOKIE);
  const token = existing && TOKEN_PATTERN.test(existing) ? existing : newToken();
  reply.header(
    "set-cookie",
    cookie(LOGIN_CSRF_COOKIE, token, {
      path: "/login",
      sameSite: "Strict",
      maxAge: LOGIN_FORM_SECONDS,
      secure,
    }),
  );
  return `<input type="hidden" name="csrf" value="${escapeHtml(token)}">`;
}

/** Whether a sign-in form carried the token its page set (form field and cookie equal). */
export function hasLoginFormToken(req: FastifyRequest, form: Record<string, string>): boolean {
  const expected = readCookie(req.headers.cookie, LOGIN_CSRF_COOKIE);
  return expected !== undefined && sameSecret(form.csrf, expected);
}
