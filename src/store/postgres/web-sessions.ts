import type {
  LoginLink,
  LoginLinkRedemption,
  NewKeyWebSession,
  NewLoginLink,
  NewWebSession,
  WebSession,
} from "../../model/web-session.ts";
import { toLoginLink, toWebSession } from "../sign-in-rows.ts";
import type { Database, Sql } from "./database.ts";

/** Web sign-in: one-time login links and browser sessions (both stored only as hashes). */

/** A session with its principal and team, if it is live at $2 (see readSession). */
export const SESSION_SQL = `
  SELECT s.id_hash, s.role, s.csrf_token, s.created_at, s.expires_at,
         p.id AS p_id, p.team_id AS p_team_id, p.type AS p_type, p.display_name AS p_display_name,
         p.email AS p_email, t.id AS t_id, t.name AS t_name
    FROM web_sessions s
    JOIN principals p ON p.id = s.principal_id
    JOIN teams t ON t.id = s.team_id
    LEFT JOIN api_keys k ON k.id = s.api_key_id
   WHERE s.id_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2 AND p.deleted_at IS NULL
     AND (s.api_key_id IS NULL OR k.revoked_at IS NULL)`;

/** A login link with the principal it signs in. */
const LOGIN_LINK_SQL = `
  SELECT l.expires_at, l.used_at, p.id AS p_id, p.display_name AS p_display_name
    FROM login_links l JOIN principals p ON p.id = l.principal_id
   WHERE l.token_hash = $1`;

export async function createLoginLink(db: Database, link: NewLoginLink): Promise<void> {
  await db.changes(
    `INSERT INTO login_links (token_hash, principal_id, team_id, role, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [link.tokenHash, link.principalId, link.teamId, link.role, link.createdAt, link.expiresAt],
  );
}

export async function findLoginLink(db: Database, tokenHash: string): Promise<LoginLink | undefined> {
  const row = await db.row(LOGIN_LINK_SQL, [tokenHash]);
  return row ? toLoginLink(row) : undefined;
}

/**
 * Marks the link used and opens its session in one transaction: the conditional UPDATE takes the row's
 * lock, so a concurrent redemption waits, then finds the link used and changes nothing.
 */
export async function redeemLoginLink(
  db: Database,
  tokenHash: string,
  session: NewWebSession,
): Promise<LoginLinkRedemption> {
  return db.tx(async (tx): Promise<LoginLinkRedemption> => {
    const at = session.createdAt;
    const claimed = await tx.row(
      `UPDATE login_links SET used_at = $1
        WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1
        RETURNING principal_id, team_id, role`,
      [at, tokenHash],
    );
    if (!claimed) {
      const link = await tx.row("SELECT used_at FROM login_links WHERE token_hash = $1", [tokenHash]);
      const reason = !link ? "unknown" : link.used_at !== null ? "used" : "expired";
      return { kind: "refused", reason };
    }
    await tx.changes(
      `INSERT INTO web_sessions (id_hash, principal_id, team_id, role, csrf_token, login_link_hash, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        session.idHash,
        claimed.principal_id,
        claimed.team_id,
        claimed.role,
        session.csrfToken,
        tokenHash,
        session.createdAt,
        session.expiresAt,
      ],
    );
    return { kind: "signed_in", session: (await readSession(tx, session.idHash, at))! };
  });
}

export async function createKeyWebSession(db: Database, s: NewKeyWebSession): Promise<WebSession> {
  return db.tx(async (tx) => {
    await tx.changes(
      `INSERT INTO web_sessions (id_hash, principal_id, team_id, role, csrf_token, api_key_id, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [s.idHash, s.principalId, s.teamId, s.role, s.csrfToken, s.apiKeyId, s.createdAt, s.expiresAt],
    );
    return (await readSession(tx, s.idHash, s.createdAt))!;
  });
}

export function findWebSession(db: Database, idHash: string, at: string): Promise<WebSession | undefined> {
  return readSession(db, idHash, at);
}

export async function revokeWebSession(db: Database, idHash: string, at: string): Promise<boolean> {
  const changed = await db.changes(
    "UPDATE web_sessions SET revoked_at = $1 WHERE id_hash = $2 AND revoked_at IS NULL",
    [at, idHash],
  );
  return changed > 0;
}

export async function pruneWebSignIns(db: Database, olderThan: string): Promise<number> {
  return db.tx(async (tx) => {
    const sessions = await tx.changes("DELETE FROM web_sessions WHERE expires_at < $1 OR revoked_at < $1", [
      olderThan,
    ]);
    const links = await tx.changes("DELETE FROM login_links WHERE expires_at < $1", [olderThan]);
    const github = await tx.changes("DELETE FROM github_sign_ins WHERE expires_at < $1", [olderThan]);
    return sessions + links + github;
  });
}

async function readSession(sql: Sql, idHash: string, at: string): Promise<WebSession | undefined> {
  const row = await sql.row(SESSION_SQL, [idHash, at]);
  return row ? toWebSession(row) : undefined;
}
