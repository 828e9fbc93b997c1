import type { AgentIdentity, AgentIdentityPatch } from "../../model/identity.ts";
import { str } from "../rows.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";

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
  db.sql(
    `INSERT INTO principals (id, team_id, type, display_name, email, created_at, description, prompt, base_model, skills)
     VALUES (?, ?, 'service_account', ?, NULL, ?, ?, ?, ?, ?)`,
  ).run(
    identity.id,
    identity.teamId,
    identity.name,
    identity.createdAt,
    identity.description,
    identity.prompt,
    identity.baseModel,
    JSON.stringify(identity.skills),
  );
  return toIdentity(db.sql("SELECT * FROM principals WHERE id = ?").get(identity.id) as Row);
}

export async function getIdentity(
  db: Database,
  teamId: string,
  id: string,
): Promise<AgentIdentity | undefined> {
  const row = db.sql(`SELECT * FROM principals WHERE id = ? AND team_id = ? AND ${LIVE}`).get(id, teamId) as
    | Row
    | undefined;
  return row ? toIdentity(row) : undefined;
}

export async function listIdentities(db: Database, teamId: string): Promise<AgentIdentity[]> {
  const rows = db
    .sql(`SELECT * FROM principals WHERE team_id = ? AND ${LIVE} ORDER BY created_at, id`)
    .all(teamId) as Row[];
  return rows.map(toIdentity);
}

export async function updateIdentity(
  db: Database,
  teamId: string,
  id: string,
  patch: AgentIdentityPatch,
): Promise<AgentIdentity | undefined> {
  return db.tx(() => {
    const row = db.sql(`SELECT * FROM principals WHERE id = ? AND team_id = ? AND ${LIVE}`).get(id, teamId) as
      | Row
      | undefined;
    if (!row) return undefined;
    const current = toIdentity(row);
    const next = {
      name: patch.name ?? current.name,
      description: patch.description === undefined ? current.description : patch.description,
      prompt: patch.prompt === undefined ? current.prompt : patch.prompt,
      baseModel: patch.baseModel === undefined ? current.baseModel : patch.baseModel,
      skills: patch.skills ?? current.skills,
    };
    db.sql(
      "UPDATE principals SET display_name = ?, description = ?, prompt = ?, base_model = ?, skills = ?, updated_at = ? WHERE id = ?",
    ).run(
      next.name,
      next.description,
      next.prompt,
      next.baseModel,
      JSON.stringify(next.skills),
      // An update that changes nothing keeps the time of the last real one.
      JSON.stringify(next) === JSON.stringify(pickChangeable(current))
        ? str(row.updated_at)
        : new Date().toISOString(),
      id,
    );
    return toIdentity(db.sql("SELECT * FROM principals WHERE id = ?").get(id) as Row);
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
  const result = db.tx(() => {
    const row = db.sql(`SELECT id FROM principals WHERE id = ? AND team_id = ? AND ${LIVE}`).get(id, teamId);
    if (!row) return undefined;
    const keys = db
      .sql("SELECT id FROM api_keys WHERE principal_id = ? AND revoked_at IS NULL")
      .all(id) as Row[];
    db.sql("UPDATE api_keys SET revoked_at = ? WHERE principal_id = ? AND revoked_at IS NULL").run(at, id);
    db.sql("UPDATE principals SET deleted_at = ? WHERE id = ?").run(at, id);
    return { revokedKeyIds: keys.map((k) => String(k.id)) };
  });
  for (const keyId of result?.revokedKeyIds ?? []) db.signals.emit("api_key_revoked", keyId);
  return result;
}
