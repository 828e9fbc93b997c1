import type { FastifyInstance } from "fastify";
import type { IdentityService } from "../../identities/identity-service.ts";
import type { AgentIdentity, AgentIdentityPatch } from "../../model/identity.ts";
import { parseBody, parseQuery } from "../parse.ts";
import { NoQuerySchema } from "../schemas/common.ts";
import { CreateAgentIdentityRequestSchema, UpdateAgentIdentityRequestSchema } from "../schemas/identities.ts";

export interface IdentityRoutesOptions {
  identities: Pick<IdentityService, "list" | "get" | "create" | "update" | "delete">;
}

/** /agent/identities: the team's service accounts (admin keys only: `config.admin`). */
export async function identityRoutes(app: FastifyInstance, opts: IdentityRoutesOptions): Promise<void> {
  const { identities } = opts;
  const admin = { config: { auth: true, admin: true } };
  type ById = { Params: { uid: string } };

  app.post("/api/v1/agent/identities", admin, async (req, reply) => {
    const body = parseBody(CreateAgentIdentityRequestSchema, req.body);
    const created = await identities.create(req.caller!, {
      name: body.name,
      ...changes(body),
    });
    return reply.code(201).send(toWire(created));
  });

  app.get("/api/v1/agent/identities", admin, async (req) => {
    parseQuery(NoQuerySchema, req.query);
    return { agents: (await identities.list(req.caller!)).map(toWire) };
  });

  app.get<ById>("/api/v1/agent/identities/:uid", admin, async (req) => {
    return toWire(await identities.get(req.caller!, req.params.uid));
  });

  app.put<ById>("/api/v1/agent/identities/:uid", admin, async (req) => {
    // No body changes nothing (clients send an empty JSON body as no body).
    const body = req.body === undefined ? {} : parseBody(UpdateAgentIdentityRequestSchema, req.body);
    const patch: AgentIdentityPatch = { ...(body.name ? { name: body.name } : {}), ...changes(body) };
    return toWire(await identities.update(req.caller!, req.params.uid, patch));
  });

  app.delete<ById>("/api/v1/agent/identities/:uid", admin, async (req, reply) => {
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
