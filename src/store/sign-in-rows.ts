import type { GitHubSignIn } from "../model/github-sign-in.ts";
import type { LoginLink, WebSession } from "../model/web-session.ts";
import type { Row } from "./rows.ts";

/**
 * The mappers of web sign-in rows (login links, sessions, GitHub sign-ins) shared by both backends, and
 * the reasons a refused approval or redemption gives, read from the row that refused it.
 */

export function toWebSession(row: Row): WebSession {
  return {
    idHash: String(row.id_hash),
    principal: {
      id: String(row.p_id),
      teamId: String(row.p_team_id),
      type: row.p_type as WebSession["principal"]["type"],
      displayName: String(row.p_display_name),
      email: row.p_email === null || row.p_email === undefined ? null : String(row.p_email),
    },
    team: { id: String(row.t_id), name: String(row.t_name) },
    role: row.role as WebSession["role"],
    csrfToken: String(row.csrf_token),
    createdAt: String(row.created_at),
    expiresAt: String(row.expires_at),
  };
}

export function toLoginLink(row: Row): LoginLink {
  return {
    principal: { id: String(row.p_id), displayName: String(row.p_display_name) },
    expiresAt: String(row.expires_at),
    usedAt: row.used_at === null || row.used_at === undefined ? null : String(row.used_at),
  };
}

export function toGitHubSignIn(row: Row): GitHubSignIn {
  const optional = (v: unknown) => (v === null || v === undefined ? null : String(v));
  return {
    code: String(row.code),
    createdAt: String(row.created_at),
    expiresAt: String(row.expires_at),
    approvedAt: optional(row.approved_at),
    approvedAs:
      optional(row.p_id) === null ? null : { id: String(row.p_id), displayName: String(row.p_display_name) },
    usedAt: optional(row.used_at),
  };
}

/** Why an approval changed nothing. */
export function approvalRefusal(row: Row | undefined, at: string) {
  if (!row) return "unknown" as const;
  return String(row.expires_at) <= at ? ("expired" as const) : ("used" as const);
}

/** Why a redemption opened no session. */
export function redemptionRefusal(row: Row | undefined, at: string) {
  if (!row) return "unknown" as const;
  if (row.used_at !== null && row.used_at !== undefined) return "used" as const;
  if (String(row.expires_at) <= at) return "expired" as const;
  return "pending" as const;
}
