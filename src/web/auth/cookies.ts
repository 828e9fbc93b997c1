/** The cookies of web sign-in, read and written without a cookie library. */

/** The browser's session: httpOnly (no script reads it), SameSite=Lax, the whole site. */
export const SESSION_COOKIE = "dispatch_session";
/**
 * The admin sign-in form's double-submit token: set when the form is shown, echoed by the form, compared
 * on POST /login. SameSite=Strict and scoped to /login: another site can neither read nor send it.
 */
export const LOGIN_CSRF_COOKIE = "dispatch_login_csrf";

/** The value of cookie `name` in a Cookie header, or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export interface CookieOptions {
  path: string;
  sameSite: "Lax" | "Strict";
  /** Seconds; 0 deletes the cookie. */
  maxAge: number;
  /** When the public URL is https: never sent over plain HTTP. */
  secure: boolean;
}

/** A Set-Cookie value; always HttpOnly. `value` must be a token (no characters that need quoting). */
export function cookie(name: string, value: string, o: CookieOptions): string {
  return [
    `${name}=${value}`,
    `Path=${o.path}`,
    `Max-Age=${Math.max(0, Math.floor(o.maxAge))}`,
    "HttpOnly",
    `SameSite=${o.sameSite}`,
    ...(o.secure ? ["Secure"] : []),
  ].join("; ");
}
