/** Who acts in Dispatch: teams, their principals (people and service accounts) and API keys. */

export type PrincipalType = "user" | "service_account";

/** The team that integrations and the bootstrap admin key act in when none is named. */
export const DEFAULT_TEAM = { id: "team_default", name: "Default team" };

/** The principal the bootstrap admin key acts as: every team's default identity, never deleted. */
export const BOOTSTRAP_ADMIN_PRINCIPAL = "admin";

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

/** A service account of a team as the API shows it (Oz "agent identity"): who runs act as. */
export interface AgentIdentity {
  id: string;
  teamId: string;
  name: string;
  description: string | null;
  /** Base prompt for runs executed as this identity. */
  prompt: string | null;
  baseModel: string | null;
  /** Skill specs attached to the identity, in order. */
  skills: string[];
  createdAt: string;
  /** The last update; absent until the first one (the wire shows created_at then). */
  updatedAt?: string;
}

/** The fields of an identity that can be changed; absent means unchanged, null clears. */
export interface AgentIdentityPatch {
  name?: string;
  description?: string | null;
  prompt?: string | null;
  baseModel?: string | null;
  skills?: string[];
}
