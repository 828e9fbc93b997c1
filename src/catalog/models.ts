import { canonicalModelId, configModelResolver } from "../executor/harnesses/builtin/models.ts";
import type { ModelsConfig } from "../models-config.ts";

export type ModelProvider = "OPENAI" | "ANTHROPIC" | "GOOGLE" | "UNKNOWN";

export interface ModelInfo {
  id: string;
  display_name: string;
  provider: ModelProvider;
  vision_supported: boolean;
  description?: string;
}

export interface ModelList {
  default_model_id: string;
  models: ModelInfo[];
}

/** What a run without a model uses when no model is configured: the offline scripted harness. */
export const SCRIPTED_MODEL_ID = "scripted";

/**
 * The models a run can name (Oz `GET /agent/models`): each alias of `models.aliases` and
 * DISPATCH_DEFAULT_MODEL when it is not an alias. Dispatch cannot enumerate a provider's catalogue, so
 * only models the operator configured are listed. One that cannot be used (no API key, a looping alias)
 * is still listed, with the reason in its description, so that the operator sees what to fix.
 */
export function listModels(config: ModelsConfig): ModelList {
  const ids = Object.keys(config.aliases);
  if (config.defaultModel && !ids.includes(config.defaultModel)) ids.unshift(config.defaultModel);
  const models = ids.map((id) => describeModel(id, config));
  if (!config.defaultModel) return { default_model_id: SCRIPTED_MODEL_ID, models: [SCRIPTED, ...models] };
  return { default_model_id: config.defaultModel, models };
}

/** Listed when no DISPATCH_DEFAULT_MODEL is set, because that is what a run without a model_id uses. */
const SCRIPTED: ModelInfo = {
  id: SCRIPTED_MODEL_ID,
  display_name: "Scripted harness (offline, no model)",
  provider: "UNKNOWN",
  vision_supported: false,
  description:
    'No default model is configured, so a run without config.model_id uses the offline scripted harness (config.harness.type "scripted"): a deterministic stand-in that runs the prompt\'s "$ " lines, not an LLM. Set DISPATCH_DEFAULT_MODEL to make a model the default.',
};

function describeModel(id: string, config: ModelsConfig): ModelInfo {
  let target: string;
  try {
    target = canonicalModelId(id, config);
  } catch (err) {
    return unusable(id, id, (err as Error).message);
  }
  try {
    configModelResolver(config)(target);
  } catch (err) {
    return unusable(id, target, (err as Error).message);
  }
  return {
    id,
    display_name: target === id ? id : `${id} (${target})`,
    provider: providerOf(target),
    vision_supported: visionSupported(target),
    ...(target === id ? {} : { description: `alias of ${target}` }),
  };
}

function unusable(id: string, target: string, why: string): ModelInfo {
  return {
    id,
    display_name: target === id ? id : `${id} (${target})`,
    provider: providerOf(target),
    vision_supported: visionSupported(target),
    description: `not usable: ${why}`,
  };
}

function providerOf(id: string): ModelProvider {
  const provider = id.slice(0, Math.max(0, id.indexOf("/")));
  if (provider === "anthropic") return "ANTHROPIC";
  if (provider === "openai") return "OPENAI";
  if (provider === "google") return "GOOGLE";
  // openai-compatible servers host any model family: the wire protocol says nothing about the vendor.
  return "UNKNOWN";
}

/**
 * Whether the model takes images. Known families only: Claude 3 and later, GPT-4o, GPT-4.1, GPT-5 and
 * the o-series do; anything served by an openai-compatible endpoint is not assumed to.
 */
function visionSupported(id: string): boolean {
  const [provider, name = ""] = [id.slice(0, id.indexOf("/")), id.slice(id.indexOf("/") + 1)];
  if (provider === "anthropic") return /^claude-(3|[a-z]+-[4-9]|[4-9])/.test(name);
  if (provider === "openai") return /^(gpt-4o|gpt-4\.1|gpt-5|o[1-9])/.test(name);
  return false;
}
