import type { FastifyInstance } from "fastify";
import type { IdentityService } from "../../identities/identity-service.ts";
import type { AgentIdentity, AgentIdentityPatch } from "../../model/identity.ts";
import { json, operation, route } from "../operation.ts";
import { NoQuerySchema } from "../schemas/common.ts";
import {
  AgentIdentitySchema,
  CreateAgentIdentityRequestSchema,
  ListAgentIdentitiesResponseSchema,
  UpdateAgentIdentityRequestSchema,
} from "../schemas/identities.ts";

export interface IdentityRoutesOptions {
  identities: Pick<IdentityService, "list" | "get" | "create" | "update" | "delete">;
}

export const identityOperations = {
  createAgentIdentity: operation({
    id: "createAgentIdentity",
    method: "POST",
    path: "/agent/identities",
    tag: "identities",
    summary: "Create a service account of the team (admin keys only)",
    access: "admin",
    body: { schema: CreateAgentIdentityRequestSchema, required: true },
    responses: { 201: { description: "The new identity.", content: json(AgentIdentitySchema) } },
    errors: ["invalid_request", "unsupported_media_type"],
  }),
  listAgentIdentities: operation({
    id: "listAgentIdentities",
    method: "GET",
    path: "/agent/identities",
    tag: "identities",
    summary: "The team's service accounts, oldest first (admin keys only)",
    access: "admin",
    query: NoQuerySchema,
    responses: { 200: { description: "The identities.", content: json(ListAgentIdentitiesResponseSchema) } },
    errors: ["invalid_request"],
  }),
  getAgentIdentity: operation({
    id: "getAgentIdentity",
    method: "GET",
    path: "/agent/identities/{uid}",
    tag: "identities",
    summary: "One service account (admin keys only)",
    access: "admin",
    responses: { 200: { description: "The identity.", content: json(AgentIdentitySchema) } },
    errors: ["resource_not_found"],
  }),
  updateAgentIdentity: operation({
    id: "updateAgentIdentity",
    method: "PUT",
    path: "/agent/identities/{uid}",
    tag: "identities",
    summary: "Change a service account (admin keys only)",
    access: "admin",
    // No body changes nothing (clients send an empty JSON body as no body).
    body: { schema: UpdateAgentIdentityRequestSchema, required: false },
    responses: { 200: { description: "The identity as changed.", content: json(AgentIdentitySchema) } },
    errors: ["invalid_request", "resource_not_found", "unsupported_media_type"],
  }),
  deleteAgentIdentity: operation({
    id: "deleteAgentIdentity",
    method: "DELETE",
    path: "/agent/identities/{uid}",
    tag: "identities",
    summary: "Delete a service account and revoke its API keys (admin keys only)",
    access: "admin",
    responses: { 204: { description: "Deleted; its keys no longer authenticate." } },
    errors: ["invalid_request", "resource_not_found"],
  }),
};

/** /agent/identities: the team's service accounts (admin keys only). */
export async function identityRoutes(app: FastifyInstance, opts: IdentityRoutesOptions): Promise<void> {
  const { identities } = opts;
  const ops = identityOperations;

  route(app, ops.createAgentIdentity, async (req, reply, { body }) => {
    const created = await identities.create(req.caller!, {
      name: body.name,
      ...changes(body),
    });
    return reply.code(201).send(toWire(created));
  });

  route(app, ops.listAgentIdentities, async (req) => ({
    agents: (await identities.list(req.caller!)).map(toWire),
  }));

  route(app, ops.getAgentIdentity, async (req) => toWire(await identities.get(req.caller!, req.params.uid)));

  route(app, ops.updateAgentIdentity, async (req, _reply, { body = {} }) => {
    const patch: AgentIdentityPatch = { ...(body.name ? { name: body.name } : {}), ...changes(body) };
    return toWire(await identities.update(req.caller!, req.params.uid, patch));
  });

  route(app, ops.deleteAgentIdentity, async (req, reply) => {
    await identities.delete(req.caller!, req.params.uid);
    return reply.code(204).send();
  });
}

/** Oz update rules: absent or null leaves a field as it is; an empty string clears it. */
function changes(body: {
  description?: string | null | undefined;
  prompt?: string | null | undefined;
  base_model?: string | null | undefined;
  skills?: string[] | null | undefined;
}): Omit<AgentIdentityPatch, "name"> {
  const text = (v: string | null | undefined) => (v == null ? undefined : v === "" ? null : v);
  const out: Omit<AgentIdentityPatch, "name"> = {};
  const description = text(body.description);
  const prompt = text(body.prompt);
  const baseModel = text(body.base_model);
  if (description !== undefined) out.description = description;
  if (prompt !== undefined) out.prompt = prompt;
  if (baseModel !== undefined) out.baseModel = baseModel;
  if (body.skills != null) out.skills = body.skills;
  return out;
}

function toWire(identity: AgentIdentity) {
  return {
    uid: identity.id,
    name: identity.name,
    // Deleted identities are never returned: every identity shown can be used for runs.
    available: true,
    created_at: identity.createdAt,
    updated_at: identity.updatedAt ?? identity.createdAt,
    // Oz's required fields for what Dispatch does not have: no runners, no memory stores.
    default_runner_uid: "",
    memory: { attached_stores: [], auto_memory: { enabled: false } },
    ...(identity.description !== null ? { description: identity.description } : {}),
    ...(identity.prompt !== null ? { prompt: identity.prompt } : {}),
    ...(identity.baseModel !== null ? { base_model: identity.baseModel } : {}),
    skills: identity.skills,
    secrets: [],
  };
}
