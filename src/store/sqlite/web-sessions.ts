import type {
  LoginLink,
  LoginLinkRedemption,
  NewKeyWebSession,
  NewLoginLink,
  NewWebSession,
  WebSession,
} from "../../model/web-session.ts";
import { toLoginLink, toWebSession } from "../sign-in-rows.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";

/** Web sign-in: one-time login links and browser sessions (both stored only as hashes). */

export async function createLoginLink(db: Database, link: NewLoginLink): Promise<void> {
  await db.grouped(() =>
    db
      .sql(
        `INSERT INTO login_links (token_hash, principal_id, team_id, role, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?)`,
      )
      .run(link.tokenHash, link.principalId, link.teamId, link.role, link.createdAt, link.expiresAt),
  );
}

export async function findLoginLink(db: Database, tokenHash: string): Promise<LoginLink | undefined> {
  const row = db.sql(LOGIN_LINK_QUERY).get(tokenHash) as Row | undefined;
  return row ? toLoginLink(row) : undefined;
}

/** A login link with the principal it signs in. */
const LOGIN_LINK_QUERY = `
  SELECT l.expires_at, l.used_at, p.id AS p_id, p.display_name AS p_display_name
    FROM login_links l JOIN principals p ON p.id = l.principal_id
   WHERE l.token_hash = ?`;

/**
 * Marks the link used and opens its session in one write: the conditional UPDATE is the compare-and-set,
 * so of two redemptions of one link exactly one signs in.
 */
export async function redeemLoginLink(
  db: Database,
  tokenHash: string,
  session: NewWebSession,
): Promise<LoginLinkRedemption> {
  return db.grouped((): LoginLinkRedemption => {
    const at = session.createdAt;
    const claimed = db
      .sql(
        `UPDATE login_links SET used_at = ?
          WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?
          RETURNING principal_id, team_id, role`,
      )
      .get(at, tokenHash, at) as Row | undefined;
    if (!claimed) {
      const link = db.sql("SELECT used_at FROM login_links WHERE token_hash = ?").get(tokenHash) as
        | Row
        | undefined;
      return { kind: "refused", reason: !link ? "unknown" : link.used_at !== null ? "used" : "expired" };
    }
    db.sql(
      `INSERT INTO web_sessions (id_hash, principal_id, team_id, role, csrf_token, login_link_hash, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      session.idHash,
      String(claimed.principal_id),
      String(claimed.team_id),
      String(claimed.role),
      session.csrfToken,
      tokenHash,
      session.createdAt,
      session.expiresAt,
    );
    return { kind: "signed_in", session: readSession(db, session.idHash, at)! };
  });
}

export async function createKeyWebSession(db: Database, s: NewKeyWebSession): Promise<WebSession> {
  return db.grouped(() => {
    db.sql(
      `INSERT INTO web_sessions (id_hash, principal_id, team_id, role, csrf_token, api_key_id, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(s.idHash, s.principalId, s.teamId, s.role, s.csrfToken, s.apiKeyId, s.createdAt, s.expiresAt);
    return readSession(db, s.idHash, s.createdAt)!;
  });
}

export async function findWebSession(
  db: Database,
  idHash: string,
  at: string,
): Promise<WebSession | undefined> {
  return readSession(db, idHash, at);
}

export async function revokeWebSession(db: Database, idHash: string, at: string): Promise<boolean> {
  return db.grouped(
    () =>
      Number(
        db
          .sql("UPDATE web_sessions SET revoked_at = ? WHERE id_hash = ? AND revoked_at IS NULL")
          .run(at, idHash).changes,
      ) > 0,
  );
}

export async function pruneWebSignIns(db: Database, olderThan: string): Promise<number> {
  return db.grouped(() => {
    const sessions = db
      .sql("DELETE FROM web_sessions WHERE expires_at < ? OR revoked_at < ?")
      .run(olderThan, olderThan).changes;
    const links = db.sql("DELETE FROM login_links WHERE expires_at < ?").run(olderThan).changes;
    const github = db.sql("DELETE FROM github_sign_ins WHERE expires_at < ?").run(olderThan).changes;
    return Number(sessions) + Number(links) + Number(github);
  });
}

/** The session if it is live at `at`: not revoked, not expired, its principal not deleted, its key not revoked. */
function readSession(db: Database, idHash: string, at: string): WebSession | undefined {
  const row = db.sql(SESSION_QUERY).get(idHash, at) as Row | undefined;
  return row ? toWebSession(row) : undefined;
}

export const SESSION_QUERY = `
  SELECT s.id_hash, s.role, s.csrf_token, s.created_at, s.expires_at,
         p.id AS p_id, p.team_id AS p_team_id, p.type AS p_type, p.display_name AS p_display_name,
         p.email AS p_email, t.id AS t_id, t.name AS t_name
    FROM web_sessions s
    JOIN principals p ON p.id = s.principal_id
    JOIN teams t ON t.id = s.team_id
    LEFT JOIN api_keys k ON k.id = s.api_key_id
   WHERE s.id_hash = ? AND s.revoked_at IS NULL AND s.expires_at > ? AND p.deleted_at IS NULL
     AND (s.api_key_id IS NULL OR k.revoked_at IS NULL)`;
