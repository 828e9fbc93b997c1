import { v7 as uuidv7 } from "uuid";
import type { AuditActor } from "../model/audit.ts";
import {
  type ApiKeyRole,
  BOOTSTRAP_ADMIN_PRINCIPAL,
  DEFAULT_TEAM,
  type PrincipalType,
} from "../model/identity.ts";
import type { Store } from "../store/store.ts";
import { generateApiKey, hashApiKey, keyPrefix } from "./api-keys.ts";

export interface NewKeyRequest {
  team?: string;
  principalUid?: string;
  principalType?: PrincipalType;
  displayName?: string;
  email?: string;
  name?: string;
  role?: ApiKeyRole;
  /** Use this key instead of generating one (DISPATCH_ADMIN_API_KEY). */
  key?: string;
  /** Who creates it, for the audit log: Dispatch itself (the bootstrap key) unless said. */
  by?: AuditActor;
}

/** Dispatch itself, as the audit log names it (the bootstrap admin key). */
export const DISPATCH_ITSELF: AuditActor = { actor: "dispatch", actorName: "Dispatch" };

/** Creates an API key for a principal (creating the team and principal when new); returns it once. */
export async function createApiKey(
  store: Store,
  req: NewKeyRequest,
): Promise<{ key: string; id: string; prefix: string }> {
  const teamId = req.team ?? DEFAULT_TEAM.id;
  await store.ensureTeam({ id: teamId, name: teamId === DEFAULT_TEAM.id ? DEFAULT_TEAM.name : teamId });
  const principalType = req.principalType ?? "service_account";
  const principalId =
    req.principalUid ??
    `${principalType === "user" ? "user" : "sa"}_${uuidv7().replaceAll("-", "").slice(-16)}`;
  const principal = await store.ensurePrincipal({
    id: principalId,
    teamId,
    type: principalType,
    displayName: req.displayName ?? principalId,
    email: req.email ?? null,
  });
  if (principal.teamId !== teamId) {
    throw new Error(`principal ${principalId} belongs to team ${principal.teamId}, not ${teamId}`);
  }
  const key = req.key ?? generateApiKey();
  const record = await store.insertApiKey({
    id: `key_${uuidv7().replaceAll("-", "").slice(-16)}`,
    principalId,
    name: req.name ?? "api key",
    role: req.role ?? "member",
    hash: hashApiKey(key),
    prefix: keyPrefix(key),
    createdAt: new Date().toISOString(),
  });
  await store.appendAuditEvent({
    teamId,
    at: record.createdAt,
    ...(req.by ?? DISPATCH_ITSELF),
    action: "api_key.created",
    target: record.id,
    details: { principal: principalId, role: record.role, name: record.name, prefix: record.prefix },
  });
  return { key, id: record.id, prefix: record.prefix };
}

/**
 * DISPATCH_ADMIN_API_KEY makes sure that key exists; without it, a first start with no key at all
 * generates one. Returns the generated key so the caller prints it once.
 */
export async function ensureAdminKey(
  store: Store,
  configured: string | undefined,
): Promise<string | undefined> {
  if (configured) {
    const hash = hashApiKey(configured);
    if (!(await store.findCallerByKeyHash(hash))) {
      try {
        await createApiKey(store, {
          key: configured,
          principalUid: BOOTSTRAP_ADMIN_PRINCIPAL,
          displayName: "Admin",
          name: "admin (DISPATCH_ADMIN_API_KEY)",
          role: "admin",
        });
      } catch (err) {
        // Replicas starting together on one database race to store the key: the one that lost finds it.
        if (!(await store.findCallerByKeyHash(hash))) throw err;
      }
    }
    return undefined;
  }
  if ((await store.countActiveApiKeys()) > 0) return undefined;
  const { key } = await createApiKey(store, {
    principalUid: BOOTSTRAP_ADMIN_PRINCIPAL,
    displayName: "Admin",
    name: "admin (generated)",
    role: "admin",
  });
  return key;
}
