import type { ApiKeyRecord, Caller, Principal, Team } from "../../model/identity.ts";
import { toApiKey, toPrincipal } from "../rows.ts";
import type { NewApiKey } from "../store.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";

/** Teams, principals and API keys (keys are stored only as hashes). */

export async function ensureTeam(db: Database, team: Team): Promise<Team> {
  db.sql("INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING").run(
    team.id,
    team.name,
    new Date().toISOString(),
  );
  const row = db.sql("SELECT id, name FROM teams WHERE id = ?").get(team.id) as Row;
  return { id: String(row.id), name: String(row.name) };
}

export async function ensurePrincipal(db: Database, p: Principal): Promise<Principal> {
  db.sql(
    `INSERT INTO principals (id, team_id, type, display_name, email, created_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO NOTHING`,
  ).run(p.id, p.teamId, p.type, p.displayName, p.email, new Date().toISOString());
  return toPrincipal(db.sql("SELECT * FROM principals WHERE id = ?").get(p.id) as Row);
}

export async function insertApiKey(db: Database, k: NewApiKey): Promise<ApiKeyRecord> {
  db.sql(
    "INSERT INTO api_keys (id, principal_id, name, role, hash, prefix, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
  ).run(k.id, k.principalId, k.name, k.role, k.hash, k.prefix, k.createdAt);
  return toApiKey(db.sql("SELECT * FROM api_keys WHERE id = ?").get(k.id) as Row);
}

export async function findCallerByKeyHash(db: Database, hash: string): Promise<Caller | undefined> {
  const row = db
    .sql(
      `SELECT k.*, p.team_id AS p_team_id, p.type AS p_type, p.display_name AS p_display_name, p.email AS p_email,
              t.name AS t_name
         FROM api_keys k JOIN principals p ON p.id = k.principal_id JOIN teams t ON t.id = p.team_id
        WHERE k.hash = ? AND k.revoked_at IS NULL AND p.deleted_at IS NULL`,
    )
    .get(hash) as Row | undefined;
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
  const rows = db
    .sql(
      `SELECT k.*, p.id AS p_id, p.team_id, p.type, p.display_name, p.email
         FROM api_keys k JOIN principals p ON p.id = k.principal_id ORDER BY k.created_at, k.id`,
    )
    .all() as Row[];
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
  const revoked = db.tx(() => {
    const rows = db
      .sql("SELECT * FROM api_keys WHERE id = ? OR prefix = ?")
      .all(idOrPrefix, idOrPrefix) as Row[];
    if (rows.length !== 1) return undefined;
    const id = String(rows[0]!.id);
    db.sql("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?").run(at, id);
    return toApiKey(db.sql("SELECT * FROM api_keys WHERE id = ?").get(id) as Row);
  });
  if (revoked) db.signals.emit("api_key_revoked", revoked.id);
  return revoked;
}

export async function countActiveApiKeys(db: Database): Promise<number> {
  const row = db.sql("SELECT COUNT(*) AS n FROM api_keys WHERE revoked_at IS NULL").get() as Row;
  return Number(row.n);
}

export async function findUser(
  db: Database,
  teamId: string,
  idOrEmail: string,
): Promise<Principal | undefined> {
  const row = db
    .sql(
      `SELECT * FROM principals WHERE team_id = ? AND type = 'user' AND deleted_at IS NULL
         AND (id = ? OR lower(email) = lower(?)) ORDER BY id = ? DESC, created_at LIMIT 1`,
    )
    .get(teamId, idOrEmail, idOrEmail, idOrEmail) as Row | undefined;
  return row ? toPrincipal(row) : undefined;
}
