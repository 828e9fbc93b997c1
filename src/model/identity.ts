/** Who acts in Dispatch: teams, their principals (people and service accounts) and API keys. */

export type PrincipalType = "user" | "service_account";

/** The team that integrations and the bootstrap admin key act in when none is named. */
export const DEFAULT_TEAM = { id: "team_default", name: "Default team" };

export interface Team {
  id: string;
  name: string;
}

export interface Principal {
  id: string;
  teamId: string;
  type: PrincipalType;
  displayName: string;
  email: string | null;
}

export type ApiKeyRole = "admin" | "member" | "read";

export interface ApiKeyRecord {
  id: string;
  principalId: string;
  name: string;
  role: ApiKeyRole;
  /** First characters of the key, safe to show in listings. */
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
}

/** What an API key authenticates as. */
export interface Caller {
  key: ApiKeyRecord;
  principal: Principal;
  team: Team;
}
