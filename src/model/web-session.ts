/** Web sign-in (docs/surfaces.md): one-time login links and the browser sessions they open. */

import type { ApiKeyRole, Principal, Team } from "./identity.ts";

/** How long a login link handed out in Slack can be redeemed. */
export const LOGIN_LINK_TTL_MS = 10 * 60_000;
/** How long a web session lasts from sign-in; there is no sliding renewal. */
export const WEB_SESSION_TTL_MS = 12 * 3600_000;

/** A login link as stored: only the hash of its token, for whom, and until when. */
export interface NewLoginLink {
  tokenHash: string;
  principalId: string;
  teamId: string;
  /** What the session it opens may do (a Slack user: member). */
  role: ApiKeyRole;
  createdAt: string;
  expiresAt: string;
}

/** A login link as its confirmation page shows it, before anyone has used it to sign in. */
export interface LoginLink {
  /** Who the link signs in: the page names them, so that nobody signs in as someone else unawares. */
  principal: Pick<Principal, "id" | "displayName">;
  expiresAt: string;
  usedAt: string | null;
}

/** A session about to be created: its cookie's hash, its CSRF token, its lifetime. */
export interface NewWebSession {
  idHash: string;
  csrfToken: string;
  createdAt: string;
  expiresAt: string;
}

/** A session opened with an API key: it lasts only as long as that key is not revoked. */
export interface NewKeyWebSession extends NewWebSession {
  principalId: string;
  teamId: string;
  role: ApiKeyRole;
  apiKeyId: string;
}

/** A live web session: who is signed in, in which team, and the token every form must carry. */
export interface WebSession {
  idHash: string;
  principal: Principal;
  team: Team;
  role: ApiKeyRole;
  csrfToken: string;
  createdAt: string;
  expiresAt: string;
}

/** Why a login link does not sign anyone in. */
export type LoginLinkRefusal = "unknown" | "used" | "expired";

export type LoginLinkRedemption =
  | { kind: "signed_in"; session: WebSession }
  | { kind: "refused"; reason: LoginLinkRefusal };
