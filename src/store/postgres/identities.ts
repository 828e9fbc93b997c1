import type { AgentIdentity, AgentIdentityPatch } from "../../model/identity.ts";
import type { Database, Row } from "./database.ts";

/** Agent identities: the service-account principals of a team that are not deleted. */

const LIVE = "type = 'service_account' AND deleted_at IS NULL";

function toIdentity(row: Row): AgentIdentity {
  const text = (v: unknown) => (v === null || v === undefined ? null : String(v));
  return {
    id: String(row.id),
    teamId: String(row.team_id),
    name: String(row.display_name),
    description: text(row.description),
    prompt: text(row.prompt),
    baseModel: text(row.base_model),
    skills: JSON.parse(String(row.skills ?? "[]")) as string[],
    createdAt: String(row.created_at),
    // Only once updated, so that a created identity reads back as it was given.
    ...(row.updated_at == null ? {} : { updatedAt: String(row.updated_at) }),
  };
}

export async function createIdentity(db: Database, identity: AgentIdentity): Promise<AgentIdentity> {
  const row = await db.row(
    `INSERT INTO principals (id, team_id, type, display_name, email, created_at, description, prompt, base_model, skills)
     VALUES ($1, $2, 'service_account', $3, NULL, $4, $5, $6, $7, $8) RETURNING *`,
    [
      identity.id,
      identity.teamId,
      identity.name,
      identity.createdAt,
      identity.description,
      identity.prompt,
      identity.baseModel,
      JSON.stringify(identity.skills),
    ],
  );
  return toIdentity(row!);
}

export async function getIdentity(
  db: Database,
  teamId: string,
  id: string,
): Promise<AgentIdentity | undefined> {
  const row = await db.row(`SELECT * FROM principals WHERE id = $1 AND team_id = $2 AND ${LIVE}`, [
    id,
    teamId,
  ]);
  return row ? toIdentity(row) : undefined;
}

export async function listIdentities(db: Database, teamId: string): Promise<AgentIdentity[]> {
  const rows = await db.rows(
    `SELECT * FROM principals WHERE team_id = $1 AND ${LIVE} ORDER BY created_at, id`,
    [teamId],
  );
  return rows.map(toIdentity);
}

export async function updateIdentity(
  db: Database,
  teamId: string,
  id: string,
  patch: AgentIdentityPatch,
): Promise<AgentIdentity | undefined> {
  return db.tx(async (tx) => {
    const row = await tx.row(
      `SELECT * FROM principals WHERE id = $1 AND team_id = $2 AND ${LIVE} FOR UPDATE`,
      [id, teamId],
    );
    if (!row) return undefined;
    const current = toIdentity(row);
    const next = {
      name: patch.name ?? current.name,
      description: patch.description === undefined ? current.description : patch.description,
      prompt: patch.prompt === undefined ? current.prompt : patch.prompt,
      baseModel: patch.baseModel === undefined ? current.baseModel : patch.baseModel,
      skills: patch.skills ?? current.skills,
    };
    const updated = await tx.row(
      `UPDATE principals SET display_name = $1, description = $2, prompt = $3, base_model = $4, skills = $5,
         updated_at = $6
        WHERE id = $7 RETURNING *`,
      [
        next.name,
        next.description,
        next.prompt,
        next.baseModel,
        JSON.stringify(next.skills),
        // An update that changes nothing keeps the time of the last real one.
        JSON.stringify(next) === JSON.stringify(pickChangeable(current))
          ? (current.updatedAt ?? null)
          : new Date().toISOString(),
        id,
      ],
    );
    return toIdentity(updated!);
  });
}

function pickChangeable(identity: AgentIdentity) {
  const { name, description, prompt, baseModel, skills } = identity;
  return { name, description, prompt, baseModel, skills };
}

/**
 * Marks the identity deleted and revokes every API key it has, in one transaction: no key of a deleted
 * identity authenticates afterwards. Returns the ids of the keys it revoked, or undefined when the team
 * has no such identity.
 */
export async function deleteIdentity(
  db: Database,
  teamId: string,
  id: string,
  at: string,
): Promise<{ revokedKeyIds: string[] } | undefined> {
  return db.tx(async (tx) => {
    const row = await tx.row(
      `SELECT id FROM principals WHERE id = $1 AND team_id = $2 AND ${LIVE} FOR UPDATE`,
      [id, teamId],
    );
    if (!row) return undefined;
    const keys = await tx.rows(
      "UPDATE api_keys SET revoked_at = $1 WHERE principal_id = $2 AND revoked_at IS NULL RETURNING id",
      [at, id],
    );
    await tx.changes("UPDATE principals SET deleted_at = $1 WHERE id = $2", [at, id]);
    const revokedKeyIds = keys.map((k) => String(k.id)).sort();
    for (const keyId of revokedKeyIds) tx.signal("api_key_revoked", keyId);
    return { revokedKeyIds };
  });
}
