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
import { SESSION_SQL } from "./web-sessions.ts";

/** GitHub sign-in: a browser's pending sign-in, approved by a comment, redeemed once by that browser. */

/** A browser's sign-in with whom it was approved for. */
const FIND_SQL = `
  SELECT g.code, g.created_at, g.expires_at, g.approved_at, g.used_at,
         p.id AS p_id, p.display_name AS p_display_name
    FROM github_sign_ins g LEFT JOIN principals p ON p.id = g.principal_id
   WHERE g.browser_hash = $1`;

export async function createGitHubSignIn(db: Database, s: NewGitHubSignIn): Promise<boolean> {
  const changed = await db.changes(
    `INSERT INTO github_sign_ins (browser_hash, code, created_at, expires_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING`,
    [s.browserHash, s.code, s.createdAt, s.expiresAt],
  );
  return changed > 0;
}

export async function findGitHubSignIn(db: Database, browserHash: string): Promise<GitHubSignIn | undefined> {
  const row = await db.row(FIND_SQL, [browserHash]);
  return row ? toGitHubSignIn(row) : undefined;
}

/**
 * Approves the sign-in of `code` for a principal, unless it is unknown, expired, used, or approved for
 * someone else; approving it again for the same principal (a redelivered comment) changes nothing. The
 * conditional UPDATE takes the row's lock, so of two concurrent approvals the second sees the first.
 */
export async function approveGitHubSignIn(
  db: Database,
  code: string,
  a: GitHubSignInApproval,
): Promise<GitHubApproval> {
  return db.tx(async (tx): Promise<GitHubApproval> => {
    const changed = await tx.changes(
      `UPDATE github_sign_ins SET approved_at = COALESCE(approved_at, $1), principal_id = $2, team_id = $3, role = $4
        WHERE code = $5 AND used_at IS NULL AND expires_at > $1 AND (approved_at IS NULL OR principal_id = $2)`,
      [a.at, a.principalId, a.teamId, a.role, code],
    );
    if (changed > 0) return { kind: "approved" };
    const row = await tx.row("SELECT expires_at FROM github_sign_ins WHERE code = $1", [code]);
    return { kind: "refused", reason: approvalRefusal(row, a.at) };
  });
}

/**
 * Marks an approved sign-in used and opens its session in one transaction: the conditional UPDATE takes
 * the row's lock, so a concurrent redemption waits, then finds it used and changes nothing.
 */
export async function redeemGitHubSignIn(
  db: Database,
  browserHash: string,
  session: NewWebSession,
): Promise<GitHubSignInRedemption> {
  return db.tx(async (tx): Promise<GitHubSignInRedemption> => {
    const at = session.createdAt;
    const claimed = await tx.row(
      `UPDATE github_sign_ins SET used_at = $1
        WHERE browser_hash = $2 AND approved_at IS NOT NULL AND used_at IS NULL AND expires_at > $1
        RETURNING principal_id, team_id, role`,
      [at, browserHash],
    );
    if (!claimed) {
      const row = await tx.row(
        "SELECT expires_at, approved_at, used_at FROM github_sign_ins WHERE browser_hash = $1",
        [browserHash],
      );
      return { kind: "refused", reason: redemptionRefusal(row, at) };
    }
    await tx.changes(
      `INSERT INTO web_sessions (id_hash, principal_id, team_id, role, csrf_token, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        session.idHash,
        claimed.principal_id,
        claimed.team_id,
        claimed.role,
        session.csrfToken,
        session.createdAt,
        session.expiresAt,
      ],
    );
    const opened = await tx.row(SESSION_SQL, [session.idHash, at]);
    return { kind: "signed_in", session: toWebSession(opened!) };
  });
}
