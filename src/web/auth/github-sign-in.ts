import { randomInt } from "node:crypto";
import {
  GITHUB_SIGN_IN_TTL_MS,
  type GitHubApproval,
  type GitHubRedemptionRefusal,
} from "../../model/github-sign-in.ts";
import type { Principal } from "../../model/identity.ts";
import type { Store } from "../../store/store.ts";
import { hashToken, newToken, TOKEN_PATTERN } from "./secrets.ts";
import type { OpenedSession, WebSignIn } from "./web-sign-in.ts";

export type GitHubSignInStore = Pick<
  Store,
  "ensurePrincipal" | "createGitHubSignIn" | "findGitHubSignIn" | "approveGitHubSignIn" | "redeemGitHubSignIn"
>;

/** Letters and digits that cannot be misread for one another (no 0/O, 1/I/L). */
const CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
/** A code as shown and as commented: `K7QX-2M9P`, any case. */
export const CODE_PATTERN = /^[A-Za-z0-9]{4}-[A-Za-z0-9]{4}$/;

/** Where the browser's sign-in stands, for its waiting page. */
export type BrowserSignIn =
  | { state: "none" }
  | { state: "pending"; code: string; expiresAt: string }
  | { state: "approved"; as: Pick<Principal, "id" | "displayName"> }
  | { state: "expired" }
  | { state: "used" };

/**
 * Sign-in with GitHub without OAuth, safe although GitHub comments are public (device-flow style): the
 * browser starts a sign-in and holds its secret as a cookie; the person comments the short code it shows;
 * the signed webhook of that comment approves the sign-in for its author, whose permission on the
 * repository the GitHub integration has checked; only the browser with the cookie redeems it, once. A
 * code read in the comment is worthless without that browser. The person signs in as the principal their
 * GitHub runs name (`github:<login>`), in the team of the GitHub integration's runs.
 */
export class GitHubSignIn {
  private readonly store: GitHubSignInStore;
  private readonly signIn: WebSignIn;
  private readonly teamId: () => Promise<string>;
  private readonly publicUrl: () => string;
  /** The bot's @handle, as the comment must spell it. */
  readonly handle: string;
  /** The least repository role that may sign in this way (the one that may start runs). */
  readonly minPermission: string;

  constructor(opts: {
    store: GitHubSignInStore;
    signIn: WebSignIn;
    teamId: () => Promise<string>;
    publicUrl: () => string;
    handle: string;
    minPermission: string;
  }) {
    this.store = opts.store;
    this.signIn = opts.signIn;
    this.teamId = opts.teamId;
    this.publicUrl = opts.publicUrl;
    this.handle = opts.handle;
    this.minPermission = opts.minPermission;
  }

  /** The page that starts a sign-in and shows its code: nothing secret, any reader may open it. */
  startUrl(): string {
    return `${this.publicUrl().replace(/\/+$/, "")}/login/github`;
  }

  /** A new sign-in for a browser: the cookie value it keeps (never stored) and the code to comment. */
  async start(): Promise<{ browserToken: string; code: string; expiresAt: string }> {
    const now = this.signIn.now();
    const expiresAt = new Date(now.getTime() + GITHUB_SIGN_IN_TTL_MS).toISOString();
    // A code is 8 characters of 31 (about 40 bits): a collision with a live one is rare, and then redrawn.
    for (let attempt = 0; attempt < 5; attempt++) {
      const browserToken = newToken();
      const code = newCode();
      const stored = await this.store.createGitHubSignIn({
        browserHash: hashToken(browserToken),
        code,
        createdAt: now.toISOString(),
        expiresAt,
      });
      if (stored) return { browserToken, code, expiresAt };
    }
    throw new Error("could not draw an unused sign-in code after 5 attempts");
  }

  /** Where the sign-in of the browser holding `browserToken` stands. */
  async status(browserToken: string | undefined): Promise<BrowserSignIn> {
    if (!browserToken || !TOKEN_PATTERN.test(browserToken)) return { state: "none" };
    const found = await this.store.findGitHubSignIn(hashToken(browserToken));
    if (!found) return { state: "none" };
    if (found.usedAt) return { state: "used" };
    if (found.expiresAt <= this.signIn.now().toISOString()) return { state: "expired" };
    if (found.approvedAs) return { state: "approved", as: found.approvedAs };
    return { state: "pending", code: found.code, expiresAt: found.expiresAt };
  }

  /** Opens the session of the browser's approved sign-in; only the cookie's holder can ask. */
  async redeem(browserToken: string): Promise<OpenedSession | { refused: GitHubRedemptionRefusal }> {
    if (!TOKEN_PATTERN.test(browserToken)) return { refused: "unknown" };
    const sessionId = newToken();
    const result = await this.store.redeemGitHubSignIn(
      hashToken(browserToken),
      this.signIn.newSession(sessionId),
    );
    if (result.kind !== "signed_in") return { refused: result.reason };
    await this.signIn.recordSignIn(result.session, "github");
    return { sessionId, session: result.session };
  }

  /**
   * A comment `@<handle> login <code>` by GitHub user `login`, whose permission the caller has checked:
   * approves that code's sign-in for them, as a member of the GitHub integration's team.
   */
  async approve(code: string, login: string): Promise<GitHubApproval> {
    if (!CODE_PATTERN.test(code)) return { kind: "refused", reason: "unknown" };
    const principal = await this.store.ensurePrincipal({
      id: `github:${login}`,
      teamId: await this.teamId(),
      type: "user",
      displayName: login,
      email: null,
    });
    return this.store.approveGitHubSignIn(code.toUpperCase(), {
      principalId: principal.id,
      teamId: principal.teamId,
      role: "member",
      at: this.signIn.now().toISOString(),
    });
  }
}

/** `K7QX-2M9P`: eight characters of CODE_ALPHABET, drawn uniformly. */
function newCode(): string {
  const chars = Array.from({ length: 8 }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]);
  return `${chars.slice(0, 4).join("")}-${chars.slice(4).join("")}`;
}
