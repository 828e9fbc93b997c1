import { API_KEY_PATTERN, hashApiKey } from "../../auth/api-keys.ts";
import { auditEntry } from "../../model/audit.ts";
import type { Principal } from "../../model/identity.ts";
import {
  LOGIN_LINK_TTL_MS,
  type LoginLinkRefusal,
  WEB_SESSION_TTL_MS,
  type WebSession,
} from "../../model/web-session.ts";
import type { Store } from "../../store/store.ts";
import { hashToken, newToken, TOKEN_PATTERN } from "./secrets.ts";

export type SignInStore = Pick<
  Store,
  | "ensurePrincipal"
  | "createLoginLink"
  | "findLoginLink"
  | "redeemLoginLink"
  | "createKeyWebSession"
  | "findWebSession"
  | "revokeWebSession"
  | "findCallerByKeyHash"
  | "appendAuditEvent"
>;

/** A session just opened: the cookie value (never stored) and what the store keeps. */
export interface OpenedSession {
  sessionId: string;
  session: WebSession;
}

export type KeyRefusal = "malformed" | "unknown" | "not_admin";

/**
 * Sign-in without an identity system of its own: a principal Dispatch already knows (a Slack user as the
 * Slack integration names them, or an admin API key's principal) gets a browser session. Only hashes of
 * link tokens and session ids are stored; the clock is injectable so that expiry can be tested.
 */
export class WebSignIn {
  private readonly store: SignInStore;
  private readonly publicUrl: () => string;
  readonly now: () => Date;

  constructor(opts: { store: SignInStore; publicUrl: () => string; now?: () => Date }) {
    this.store = opts.store;
    this.publicUrl = opts.publicUrl;
    this.now = opts.now ?? (() => new Date());
  }

  /** Whether cookies must be Secure: the site is served over https. */
  get secure(): boolean {
    return /^https:/i.test(this.publicUrl());
  }

  /**
   * A one-time link, valid LOGIN_LINK_TTL_MS, that signs `principal` in as a member (a Slack user acts
   * as a member: they start and cancel runs). The principal is created if Dispatch has not seen them.
   */
  async issueLink(principal: Principal): Promise<{ url: string; expiresAt: string }> {
    const known = await this.store.ensurePrincipal(principal);
    const token = newToken();
    const now = this.now();
    const expiresAt = new Date(now.getTime() + LOGIN_LINK_TTL_MS).toISOString();
    await this.store.createLoginLink({
      tokenHash: hashToken(token),
      principalId: known.id,
      teamId: known.teamId,
      role: "member",
      createdAt: now.toISOString(),
      expiresAt,
    });
    return { url: `${this.publicUrl().replace(/\/+$/, "")}/login/${token}`, expiresAt };
  }

  /**
   * Whom a link would sign in, without spending it: its page asks the person to confirm first, so that a
   * link someone else sent them (their own) cannot sign them in as that someone unawares, and a link
   * preview or a mail scanner that fetches it spends nothing.
   */
  async inspect(
    token: string,
  ): Promise<{ principal: Pick<Principal, "id" | "displayName"> } | { refused: LoginLinkRefusal }> {
    if (!TOKEN_PATTERN.test(token)) return { refused: "unknown" };
    const link = await this.store.findLoginLink(hashToken(token));
    if (!link) return { refused: "unknown" };
    if (link.usedAt !== null) return { refused: "used" };
    if (link.expiresAt <= this.now().toISOString()) return { refused: "expired" };
    return { principal: link.principal };
  }

  async redeem(token: string): Promise<OpenedSession | { refused: LoginLinkRefusal }> {
    if (!TOKEN_PATTERN.test(token)) return { refused: "unknown" };
    const sessionId = newToken();
    const result = await this.store.redeemLoginLink(hashToken(token), this.newSession(sessionId));
    if (result.kind !== "signed_in") return { refused: result.reason };
    await this.recordSignIn(result.session, "link");
    return { sessionId, session: result.session };
  }

  /** The admin form: an admin key opens a session in its team; any other key is refused. */
  async signInWithKey(key: string): Promise<OpenedSession | { refused: KeyRefusal }> {
    if (!API_KEY_PATTERN.test(key)) return { refused: "malformed" };
    const caller = await this.store.findCallerByKeyHash(hashApiKey(key));
    if (!caller) return { refused: "unknown" };
    if (caller.key.role !== "admin") return { refused: "not_admin" };
    const sessionId = newToken();
    const session = await this.store.createKeyWebSession({
      ...this.newSession(sessionId),
      principalId: caller.principal.id,
      teamId: caller.team.id,
      role: caller.key.role,
      apiKeyId: caller.key.id,
    });
    await this.recordSignIn(session, "api_key", { key_id: caller.key.id });
    return { sessionId, session };
  }

  /** The audit log's entry of a session opened (`how`: a login link, an admin key, a GitHub comment). */
  async recordSignIn(
    session: WebSession,
    how: "link" | "api_key" | "github",
    details: Record<string, unknown> = {},
  ): Promise<void> {
    await this.store.appendAuditEvent(
      auditEntry(session, "session.signed_in", session.principal.id, {
        method: how,
        role: session.role,
        ...details,
      }),
    );
  }

  /** The live session a cookie names, or undefined (no cookie, unknown, expired, revoked). */
  async lookup(sessionId: string | undefined): Promise<WebSession | undefined> {
    if (!sessionId || !TOKEN_PATTERN.test(sessionId)) return undefined;
    return this.store.findWebSession(hashToken(sessionId), this.now().toISOString());
  }

  async signOut(session: WebSession): Promise<void> {
    await this.store.revokeWebSession(session.idHash, this.now().toISOString());
  }

  /** Seconds a new session's cookie lives. */
  get sessionSeconds(): number {
    return WEB_SESSION_TTL_MS / 1000;
  }

  /** What the store keeps of a new session named by `sessionId` (every sign-in path opens one so). */
  newSession(sessionId: string) {
    const now = this.now();
    return {
      idHash: hashToken(sessionId),
      csrfToken: newToken(),
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + WEB_SESSION_TTL_MS).toISOString(),
    };
  }
}
