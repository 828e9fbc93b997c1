import { createHash, randomBytes } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
export const API_KEY_PATTERN = /^dsp_[A-Za-z0-9]{40}$/;

/** A new API key: `dsp_` + 40 random base62 characters (rejection sampling keeps them uniform). */
export function generateApiKey(): string {
  let out = "";
  while (out.length < 40) {
    for (const byte of randomBytes(64)) {
      if (byte < 248 && out.length < 40) out += BASE62[byte % 62];
    }
  }
  return `dsp_${out}`;
}

/** Keys are stored only as this hash. */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** The part of a key that is safe to show in listings and logs. */
export function keyPrefix(key: string): string {
  return key.slice(0, 10);
}
