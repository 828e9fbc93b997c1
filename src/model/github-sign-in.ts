/**
 * GitHub sign-in. A GitHub comment is public, so what it carries must be useless on its own:
 * a browser that starts a sign-in holds a random cookie (stored only as its hash) and is shown a short
 * code; the person comments the code, the webhook approves that sign-in for them, and only the browser
 * holding the cookie redeems it into a web session, once.
 */

import type { ApiKeyRole, Principal } from "./identity.ts";
import type { WebSession } from "./web-session.ts";

/** How long a code can be approved and then redeemed, from when the browser asked for it. */
export const GITHUB_SIGN_IN_TTL_MS = 10 * 60_000;

/** A sign-in a browser has just started. */
export interface NewGitHubSignIn {
  /** Hash of the browser's cookie: the one secret of the flow. */
  browserHash: string;
  /** The code shown to the person, as shown (`K7QX-2M9P`); it is meant to be posted in public. */
  code: string;
  createdAt: string;
  expiresAt: string;
}

/** A sign-in as the browser's page shows it. */
export interface GitHubSignIn {
  code: string;
  createdAt: string;
  expiresAt: string;
  approvedAt: string | null;
  /** Whom the comment approved the sign-in for (null until then): the page asks "Continue as …?". */
  approvedAs: Pick<Principal, "id" | "displayName"> | null;
  usedAt: string | null;
}

/** Who commented the code: the principal the session will be for. */
export interface GitHubSignInApproval {
  principalId: string;
  teamId: string;
  role: ApiKeyRole;
  at: string;
}

/** Why a comment's code approves nothing: no such code, too late, or approved (by someone else) already. */
export type GitHubApprovalRefusal = "unknown" | "expired" | "used";

export type GitHubApproval = { kind: "approved" } | { kind: "refused"; reason: GitHubApprovalRefusal };

/** Why a browser's sign-in opens no session (yet): no such sign-in, not approved yet, too late, or used. */
export type GitHubRedemptionRefusal = "unknown" | "pending" | "expired" | "used";

export type GitHubSignInRedemption =
  | { kind: "signed_in"; session: WebSession }
  | { kind: "refused"; reason: GitHubRedemptionRefusal };
