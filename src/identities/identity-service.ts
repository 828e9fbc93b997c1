import { v7 as uuidv7 } from "uuid";
import { auditEntry } from "../model/audit.ts";
import { RunError } from "../model/errors.ts";
import {
  type AgentIdentity,
  type AgentIdentityPatch,
  BOOTSTRAP_ADMIN_PRINCIPAL,
  type Caller,
} from "../model/identity.ts";
import { parseSkillSpec } from "../model/skill-spec.ts";
import type { Store } from "../store/store.ts";

export type IdentityStore = Pick<
  Store,
  | "createIdentity"
  | "getIdentity"
  | "listIdentities"
  | "updateIdentity"
  | "deleteIdentity"
  | "appendAuditEvent"
>;

/**
 * Agent identities (Oz `/agent/identities`): the service accounts of the caller's team. Another team's
 * identity is unknown (404), as runs are; only admin keys reach this service (the API checks the role).
 */
export class IdentityService {
  private readonly store: IdentityStore;

  constructor(store: IdentityStore) {
    this.store = store;
  }

  list(caller: Caller): Promise<AgentIdentity[]> {
    return this.store.listIdentities(caller.team.id);
  }

  async get(caller: Caller, id: string): Promise<AgentIdentity> {
    return (await this.store.getIdentity(caller.team.id, id)) ?? notFound(id);
  }

  async create(
    caller: Caller,
    input: Omit<AgentIdentityPatch, "name" | "skills"> & { name: string; skills?: string[] },
  ): Promise<AgentIdentity> {
    const created = await this.store.createIdentity({
      id: `sa_${uuidv7().replaceAll("-", "").slice(-16)}`,
      teamId: caller.team.id,
      name: input.name,
      description: input.description ?? null,
      prompt: input.prompt ?? null,
      baseModel: input.baseModel ?? null,
      skills: checkSkills(input.skills ?? []),
      createdAt: new Date().toISOString(),
    });
    await this.store.appendAuditEvent(
      auditEntry(caller, "identity.created", created.id, { name: created.name }),
    );
    return created;
  }

  async update(caller: Caller, id: string, patch: AgentIdentityPatch): Promise<AgentIdentity> {
    const checked = patch.skills ? { ...patch, skills: checkSkills(patch.skills) } : patch;
    const updated = (await this.store.updateIdentity(caller.team.id, id, checked)) ?? notFound(id);
    const changed = Object.keys(checked);
    await this.store.appendAuditEvent(auditEntry(caller, "identity.updated", id, { changed }));
    return updated;
  }

  /** Deletes the identity and revokes its API keys; the default identity is refused. */
  async delete(caller: Caller, id: string): Promise<void> {
    if (id === BOOTSTRAP_ADMIN_PRINCIPAL && (await this.store.getIdentity(caller.team.id, id))) {
      // 400, not 409: a 409 is retryable and clients would repeat a request that can never succeed.
      throw new RunError(
        "invalid_request",
        `"${id}" is the team's default identity (the bootstrap admin) and cannot be deleted; revoke single keys with dispatch keys revoke instead`,
      );
    }
    const deleted = await this.store.deleteIdentity(caller.team.id, id, new Date().toISOString());
    if (!deleted) notFound(id);
    await this.store.appendAuditEvent(
      auditEntry(caller, "identity.deleted", id, { revoked_key_ids: deleted.revokedKeyIds }),
    );
  }
}

function notFound(id: string): never {
  throw new RunError(
    "resource_not_found",
    `no agent identity "${id}" in this team; list them with GET /api/v1/agent/identities`,
  );
}

function checkSkills(skills: string[]): string[] {
  return skills.map((spec, i) => {
    const parsed = parseSkillSpec(spec);
    if (typeof parsed === "string") throw new RunError("invalid_request", `skills.${i}: ${parsed}`);
    return spec.trim();
  });
}
