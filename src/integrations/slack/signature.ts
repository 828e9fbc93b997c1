import { createHmac, timingSafeEqual } from "node:crypto";

/** Slack refuses replays older than this; so do we (https://api.slack.com/authentication/verifying-requests-from-slack). */
export const MAX_SIGNATURE_AGE_S = 5 * 60;

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

/**
 * Checks `X-Slack-Signature` (`v0=` + hex HMAC-SHA256 of `v0:<timestamp>:<raw body>` under the signing
 * secret) and `X-Slack-Request-Timestamp` (within 5 minutes of now). Works on the raw bytes: a body
 * that was parsed and re-serialised would not verify.
 */
export function verifySlackSignature(
  signingSecret: string,
  headers: { signature: string | undefined; timestamp: string | undefined },
  rawBody: Buffer,
  nowMs = Date.now(),
): SignatureCheck {
  const timestampCheck = checkTimestamp(headers.timestamp, nowMs);
  if (!timestampCheck.ok) return timestampCheck;
  const given = headers.signature;
  if (!given) return { ok: false, reason: "missing X-Slack-Signature" };
  const expected = signSlackRequest(signingSecret, headers.timestamp!, rawBody);
  const a = Buffer.from(given, "utf8");
  const b = Buffer.from(expected, "utf8");
  // timingSafeEqual needs equal lengths; a length mismatch says nothing about the secret.
  if (a.length !== b.length || !timingSafeEqual(a, b)) return { ok: false, reason: "signature mismatch" };
  return { ok: true };
}

/** The timestamp part of the check alone, done before the body is read. */
export function checkTimestamp(timestamp: string | undefined, nowMs = Date.now()): SignatureCheck {
  if (!timestamp) return { ok: false, reason: "missing X-Slack-Request-Timestamp" };
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: "malformed X-Slack-Request-Timestamp" };
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > MAX_SIGNATURE_AGE_S) {
    return { ok: false, reason: "stale X-Slack-Request-Timestamp (more than 5 minutes from now)" };
  }
  return { ok: true };
}

/** `v0=<hex>` for a request body: what Slack sends, and what tests and the bench sign with. */
export function signSlackRequest(signingSecret: string, timestamp: string, rawBody: Buffer | string): string {
  const hmac = createHmac("sha256", signingSecret);
  hmac.update(`v0:${timestamp}:`);
  hmac.update(rawBody);
  return `v0=${hmac.digest("hex")}`;
}
