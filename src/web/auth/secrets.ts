import { randomBytes, timingSafeEqual } from "node:crypto";
import { hashApiKey } from "../../auth/api-keys.ts";

/** A fresh unguessable token (256 bits, base64url): login links, session ids, CSRF tokens. */
export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * What the store keeps of a login token or a session id: a leaked database signs nobody in. The same
 * digest as an API key's (both are 256-bit random secrets; no salt or stretching is needed).
 */
export const hashToken: (token: string) => string = hashApiKey;

/** The shape of newToken's output: anything else is refused before the store is asked. */
export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** Compares two secrets in constant time (a CSRF token against the one on record). */
export function sameSecret(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
