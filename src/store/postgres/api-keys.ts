import type { ApiKeyRecord, Caller, Principal, Team } from "../../model/identity.ts";
import { toApiKey, toPrincipal } from "../rows.ts";
import type { NewApiKey } from "../store.ts";
import type { Database } from "./database.ts";

/** Teams, principals and API keys (keys are stored only as hashes). */

export async function ensureTeam(db: Database, team: Team): Promise<Team> {
  await db.changes(
    "INSERT INTO teams (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
    [team.id, team.name, new Date().toISOString()],
  );
  const row = (await db.row("SELECT id, name FROM teams WHERE id = $1", [team.id]))!;
  return { id: String(row.id), name: String(row.name) };
}

export async function ensurePrincipal(db: Database, p: Principal): Promise<Principal> {
  await db.changes(
    `INSERT INTO principals (id, team_id, type, display_name, email, created_at) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (id) DO NOTHING`,
    [p.id, p.teamId, p.type, p.displayName, p.email, new Date().toISOString()],
  );
  return toPrincipal((await db.row("SELECT * FROM principals WHERE id = $1", [p.id]))!);
}

export async function insertApiKey(db: Database, k: NewApiKey): Promise<ApiKeyRecord> {
  const row = await db.row(
    `INSERT INTO api_keys (id, principal_id, name, role, hash, prefix, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
     RETURNING *`,
    [k.id, k.principalId, k.name, k.role, k.hash, k.prefix, k.createdAt],
  );
  return toApiKey(row!);
}

/**
 * Whether the key `$<param>` is live as findCallerByKeyHash would find it: not revoked, its principal not
 * deleted. A condition for a statement that writes only for a live key (a create: run-create.ts).
 */
export function keyIsLiveCondition(param: number): string {
  return `EXISTS (SELECT 1 FROM api_keys k JOIN principals p ON p.id = k.principal_id
    WHERE k.id = $${param} AND k.revoked_at IS NULL AND p.deleted_at IS NULL)`;
}

export async function findCallerByKeyHash(db: Database, hash: string): Promise<Caller | undefined> {
  const row = await db.row(
    `SELECT k.*, p.team_id AS p_team_id, p.type AS p_type, p.display_name AS p_display_name, p.email AS p_email,
            t.name AS t_name
       FROM api_keys k JOIN principals p ON p.id = k.principal_id JOIN teams t ON t.id = p.team_id
      WHERE k.hash = $1 AND k.revoked_at IS NULL AND p.deleted_at IS NULL`,
    [hash],
  );
  if (!row) return undefined;
  return {
    key: toApiKey(row),
    principal: {
      id: String(row.principal_id),
      teamId: String(row.p_team_id),
      type: row.p_type as Principal["type"],
      displayName: String(row.p_display_name),
      email: (row.p_email as string | null) ?? null,
    },
    team: { id: String(row.p_team_id), name: String(row.t_name) },
  };
}

export async function listApiKeys(db: Database): Promise<Array<ApiKeyRecord & { principal: Principal }>> {
  const rows = await db.rows(
    `SELECT k.*, p.id AS p_id, p.team_id, p.type, p.display_name, p.email
       FROM api_keys k JOIN principals p ON p.id = k.principal_id ORDER BY k.created_at, k.id`,
  );
  return rows.map((row) => ({
    ...toApiKey(row),
    principal: toPrincipal({ ...row, id: row.p_id ?? null }),
  }));
}

export async function revokeApiKey(
  db: Database,
  idOrPrefix: string,
  at: string,
): Promise<ApiKeyRecord | undefined> {
  return db.tx(async (tx) => {
    const rows = await tx.rows("SELECT id FROM api_keys WHERE id = $1 OR prefix = $1 FOR UPDATE", [
      idOrPrefix,
    ]);
    if (rows.length !== 1) return undefined;
    const row = await tx.row(
      "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2 RETURNING *",
      [at, String(rows[0]!.id)],
    );
    const revoked = toApiKey(row!);
    tx.signal("api_key_revoked", revoked.id);
    return revoked;
  });
}

export async function countActiveApiKeys(db: Database): Promise<number> {
  const row = await db.row("SELECT COUNT(*) AS n FROM api_keys WHERE revoked_at IS NULL");
  return Number(row?.n ?? 0);
}

export async function findUser(
  db: Database,
  teamId: string,
  idOrEmail: string,
): Promise<Principal | undefined> {
  const row = await db.row(
    `SELECT * FROM principals WHERE team_id = $1 AND type = 'user' AND deleted_at IS NULL
       AND (id = $2 OR lower(email) = lower($2)) ORDER BY id = $2 DESC, created_at LIMIT 1`,
    [teamId, idOrEmail],
  );
  return row ? toPrincipal(row) : undefined;
}
