import type {
  GitHubApproval,
  GitHubSignIn,
  GitHubSignInApproval,
  GitHubSignInRedemption,
  NewGitHubSignIn,
} from "../../model/github-sign-in.ts";
import type { NewWebSession } from "../../model/web-session.ts";
import { approvalRefusal, redemptionRefusal, toGitHubSignIn, toWebSession } from "../sign-in-rows.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";
import { SESSION_QUERY } from "./web-sessions.ts";

/** GitHub sign-in: a browser's pending sign-in, approved by a comment, redeemed once by that browser. */

export async function createGitHubSignIn(db: Database, s: NewGitHubSignIn): Promise<boolean> {
  return db.grouped(
    () =>
      Number(
        db
          .sql(
            `INSERT INTO github_sign_ins (browser_hash, code, created_at, expires_at) VALUES (?, ?, ?, ?)
             ON CONFLICT DO NOTHING`,
          )
          .run(s.browserHash, s.code, s.createdAt, s.expiresAt).changes,
      ) > 0,
  );
}

export async function findGitHubSignIn(db: Database, browserHash: string): Promise<GitHubSignIn | undefined> {
  const row = db.sql(FIND_QUERY).get(browserHash) as Row | undefined;
  return row ? toGitHubSignIn(row) : undefined;
}

/**
 * Approves the sign-in of `code` for a principal, unless it is unknown, expired, used, or approved for
 * someone else; approving it again for the same principal (a redelivered comment) changes nothing.
 */
export async function approveGitHubSignIn(
  db: Database,
  code: string,
  a: GitHubSignInApproval,
): Promise<GitHubApproval> {
  return db.grouped((): GitHubApproval => {
    const changed = db
      .sql(
        `UPDATE github_sign_ins SET approved_at = COALESCE(approved_at, ?), principal_id = ?, team_id = ?, role = ?
          WHERE code = ? AND used_at IS NULL AND expires_at > ? AND (approved_at IS NULL OR principal_id = ?)`,
      )
      .run(a.at, a.principalId, a.teamId, a.role, code, a.at, a.principalId).changes;
    if (Number(changed) > 0) return { kind: "approved" };
    const row = db.sql("SELECT expires_at FROM github_sign_ins WHERE code = ?").get(code) as Row | undefined;
    return { kind: "refused", reason: approvalRefusal(row, a.at) };
  });
}

/**
 * Marks an approved sign-in used and opens its session in one write: the conditional UPDATE is the
 * compare-and-set, so of two redemptions exactly one signs in.
 */
export async function redeemGitHubSignIn(
  db: Database,
  browserHash: string,
  session: NewWebSession,
): Promise<GitHubSignInRedemption> {
  return db.grouped((): GitHubSignInRedemption => {
    const at = session.createdAt;
    const claimed = db
      .sql(
        `UPDATE github_sign_ins SET used_at = ?
          WHERE browser_hash = ? AND approved_at IS NOT NULL AND used_at IS NULL AND expires_at > ?
          RETURNING principal_id, team_id, role`,
      )
      .get(at, browserHash, at) as Row | undefined;
    if (!claimed) {
      const row = db
        .sql("SELECT expires_at, approved_at, used_at FROM github_sign_ins WHERE browser_hash = ?")
        .get(browserHash) as Row | undefined;
      return { kind: "refused", reason: redemptionRefusal(row, at) };
    }
    db.sql(
      `INSERT INTO web_sessions (id_hash, principal_id, team_id, role, csrf_token, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      session.idHash,
      String(claimed.principal_id),
      String(claimed.team_id),
      String(claimed.role),
      session.csrfToken,
      session.createdAt,
      session.expiresAt,
    );
    const opened = db.sql(SESSION_QUERY).get(session.idHash, at) as Row;
    return { kind: "signed_in", session: toWebSession(opened) };
  });
}

/** A browser's sign-in with whom it was approved for. */
const FIND_QUERY = `
  SELECT g.code, g.created_at, g.expires_at, g.approved_at, g.used_at,
         p.id AS p_id, p.display_name AS p_display_name
    FROM github_sign_ins g LEFT JOIN principals p ON p.id = g.principal_id
   WHERE g.browser_hash = ?`;
