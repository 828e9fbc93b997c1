import { shownSecretProblem } from "../model/config-secrets.ts";
import { RunError } from "../model/errors.ts";
import { defaultModelFor, harnessKeyOf } from "../model/harness-wire.ts";
import { mcpUrlAllowed } from "../model/mcp-url-allowlist.ts";
import type { AgentConfig, RunRecord } from "../model/run.ts";
import { parseSkillSpec } from "../model/skill-spec.ts";
import type { CreateRunInput, RunServiceOptions } from "./run-service.ts";
import { skillNameOf } from "./run-title.ts";

/** A new run's configuration as create resolves it: defaults, the harness, and the server's create-time checks. */

export type CreateTimeOptions = Pick<
  RunServiceOptions,
  "defaultModel" | "mcpAllowedUrls" | "environmentIds" | "skills" | "cost"
>;

/**
 * Create-time checks of what the server configures: the environment must exist; a skill readable now
 * (local directory or repo) must exist, and becomes the base prompt (and the name, when none is given).
 */
export async function resolveCreateTime(
  options: CreateTimeOptions,
  config: AgentConfig,
  input: CreateRunInput,
): Promise<RunRecord["agentSkill"]> {
  const shown = shownSecretProblem(config, "config");
  if (shown) throw new RunError("invalid_request", shown);
  for (const [name, server] of Object.entries(config.mcp_servers ?? {})) {
    const allowed = options.mcpAllowedUrls ?? [];
    if (server.url && !mcpUrlAllowed(server.url, allowed)) {
      throw new RunError(
        "invalid_request",
        `config.mcp_servers.${name}.url: ${server.url} is not an allowed MCP server URL on this server (${
          allowed.length ? `allowed: ${allowed.join(", ")}` : "none is allowed"
        }); an operator allows URLs with mcp.allowed_urls in dispatch.config.yaml`,
      );
    }
  }
  const envIds = options.environmentIds;
  if (config.environment_id && envIds && !envIds.includes(config.environment_id)) {
    throw new RunError(
      "invalid_request",
      `config.environment_id: no environment "${config.environment_id}" is configured on this server (${
        envIds.length ? `configured: ${envIds.join(", ")}` : "none is configured in dispatch.config.yaml"
      })`,
    );
  }
  const spec = config.skill_spec;
  if (!spec) return null;
  const field = input.config?.skill_spec ? "config.skill_spec" : "skill";
  // Refused whether or not this server resolves skills now: the executor resolves the same spec later.
  const parsed = parseSkillSpec(spec);
  if (typeof parsed === "string") throw new RunError("invalid_request", `${field}: ${parsed}`);
  if (!options.skills) return null;
  const found = await options.skills.resolveNow(spec);
  if (found.kind === "not_found") throw new RunError("invalid_request", `${field}: ${found.message}`);
  if (found.kind === "deferred") return null;
  const { skill } = found;
  config.base_prompt = config.base_prompt?.trim() ? `${skill.body}\n\n${config.base_prompt}` : skill.body;
  if (!input.config?.name) config.name = skill.name;
  return {
    name: skill.name,
    ...(skill.description ? { description: skill.description } : {}),
    full_path: skill.fullPath,
  };
}

/** A cost limit needs a model with a price: without one, nothing could count the run's calls. */
export function checkCostLimit(options: CreateTimeOptions, config: AgentConfig): void {
  const cost = options.cost;
  const serverLimit = config.max_cost_usd === undefined ? cost?.defaultMaxCostUsd : undefined;
  if (!cost || (config.max_cost_usd === undefined && serverLimit === undefined)) return;
  const unpriced = cost.unpricedModel(config);
  if (!unpriced) return;
  throw new RunError(
    "invalid_request",
    serverLimit === undefined
      ? `config.max_cost_usd: model ${unpriced} has no price on this server, so the run's cost limit could not be held; choose a model with a price, leave max_cost_usd out, or ask the operator to add one under prices in dispatch.config.yaml`
      : `config.model_id: model ${unpriced} has no price on this server, so the server's default cost limit (DISPATCH_MAX_COST_USD, $${serverLimit}) could not be held; choose a model with a price, or ask the operator to add one under prices in dispatch.config.yaml`,
  );
}

export function resolveConfig(options: CreateTimeOptions, input: CreateRunInput): AgentConfig {
  const given = Object.fromEntries(
    Object.entries(input.config ?? {}).filter(([, v]) => v !== null && v !== undefined),
  ) as AgentConfig;
  const skillSpec = given.skill_spec ?? input.skill ?? undefined;
  // An external agent (claude, codex, gemini) named without a model_id gets the default model only when
  // it is of the agent's provider, else its own default rather than a refusal (harness-wire.ts).
  const modelId = given.model_id ?? defaultModelFor(given.harness, options.defaultModel);
  const config: AgentConfig = { ...given };
  if (skillSpec) config.skill_spec = skillSpec;
  if (modelId) config.model_id = modelId;
  if (!config.name && skillSpec) config.name = skillNameOf(skillSpec);
  // Stored as the registry key; runs show it in Oz's form (harness-wire.ts).
  const harness = harnessKeyOf(given.harness ?? { type: "oz" }, modelId ? "builtin" : "scripted");
  if (typeof harness !== "string") throw new RunError("invalid_request", harness.problem);
  config.harness = { type: harness };
  return config;
}
