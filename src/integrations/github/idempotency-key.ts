import { createHash } from "node:crypto";

/**
 * The RunsApi idempotency key of what one GitHub item (a comment, a review, a commit's CI) asks: the same
 * item, however often delivered, makes one call of each purpose.
 */
export function idempotencyKey(purpose: string, repo: string, id: number | string): string {
  const digest = createHash("sha256").update(`${repo}\n${id}`).digest("base64url").slice(0, 32);
  return `github-${purpose}-${digest}`;
}
