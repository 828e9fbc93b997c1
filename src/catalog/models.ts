import { canonicalModelId, checkModel, visionSupported } from "../harnesses/builtin/models.ts";
import { AGENTS } from "../model/agent-wording.ts";
import { EXTERNAL_MODEL_PROVIDERS, type WireHarnessType } from "../model/harness-wire.ts";
import { MODEL_PROVIDERS, type ModelsConfig } from "../models-config.ts";

export type ModelProvider = "OPENAI" | "ANTHROPIC" | "GOOGLE" | "UNKNOWN";

export interface ModelInfo {
  id: string;
  display_name: string;
  provider: ModelProvider;
  vision_supported: boolean;
  description?: string;
  /**
   * Dispatch extension: the harnesses (`config.harness.type`) that can run this model id: `oz` (Dispatch's
   * builtin), `claude`, `codex`, `gemini`.
   */
  harnesses: WireHarnessType[];
}

export interface ModelList {
  default_model_id: string;
  models: ModelInfo[];
}

/** What a run without a model uses when no model is configured: the offline scripted harness. */
export const SCRIPTED_MODEL_ID = "scripted";

/**
 * The models a run can name (Oz `GET /agent/models`): each alias of `models.aliases` and
 * DISPATCH_DEFAULT_MODEL when it is not an alias, then the known models of each external agent whose
 * provider key is configured (AGENT_MODELS). Dispatch cannot enumerate a provider's catalogue, so only
 * these are listed. One that cannot be used (no API key, a looping alias) is still listed, with the reason
 * in its description, so that the operator sees what to fix. Each says which harnesses can run it.
 */
export function listModels(config: ModelsConfig): ModelList {
  const ids = Object.keys(config.aliases);
  if (config.defaultModel && !ids.includes(config.defaultModel)) ids.unshift(config.defaultModel);
  const models = ids.map((id) => describeModel(id, config));
  for (const [harness, provider] of Object.entries(EXTERNAL_MODEL_PROVIDERS)) {
    if (!providerKey(config, provider)) continue;
    for (const name of AGENT_MODELS[harness] ?? []) {
      const id = `${provider}/${name}`;
      if (models.some((m) => m.id === id)) continue; // configured: its harnesses say so already
      models.push(agentModel(id, harness as WireHarnessType));
    }
  }
  if (!config.defaultModel) return { default_model_id: SCRIPTED_MODEL_ID, models: [SCRIPTED, ...models] };
  return { default_model_id: config.defaultModel, models };
}

/**
 * Models each external agent is known to run, listed once its provider key is configured. Any other model
 * of the provider can be named too (`anthropic/<model>`); without a model_id the agent runs its default model
 * (EXTERNAL_DEFAULT_MODELS).
 */
const AGENT_MODELS: Readonly<Record<string, readonly string[]>> = {
  claude: ["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"],
  codex: ["gpt-5-codex", "gpt-5"],
  gemini: ["gemini-2.5-pro", "gemini-2.5-flash"],
};

function providerKey(config: ModelsConfig, provider: string): string | undefined {
  if (provider === "anthropic") return config.anthropic.apiKey;
  if (provider === "openai") return config.openai.apiKey;
  if (provider === "gemini") return config.gemini.apiKey;
  return undefined;
}

/** A known model of an external agent that the operator did not configure as a model of their own. */
function agentModel(id: string, harness: WireHarnessType): ModelInfo {
  const harnesses = harnessesFor(id, id);
  const others = harnesses.filter((h) => h !== harness).map((h) => (h === "oz" ? "the builtin harness" : h));
  return {
    id,
    display_name: id,
    provider: providerOf(id),
    vision_supported: visionSupported(id),
    description: `Run by ${AGENTS[harness]?.label ?? harness} (config.harness {"type": "${harness}"})${others.length ? `; also by ${others.join(", ")}` : ""}`,
    harnesses,
  };
}

/**
 * Which harnesses can run model id `id` (resolving to `target`): the builtin (`oz`) any model of its
 * providers, aliases included; an external agent a `provider/model` id of its own provider (it is handed
 * the id as written, so not an alias).
 */
function harnessesFor(id: string, target: string): WireHarnessType[] {
  const provider = target.slice(0, Math.max(0, target.indexOf("/")));
  const out: WireHarnessType[] = [];
  if ((MODEL_PROVIDERS as readonly string[]).includes(provider)) out.push("oz");
  for (const [harness, own] of Object.entries(EXTERNAL_MODEL_PROVIDERS)) {
    if (id === target && provider === own) out.push(harness as WireHarnessType);
  }
  return out;
}

/** Listed when no DISPATCH_DEFAULT_MODEL is set, because that is what a run without a model_id uses. */
const SCRIPTED: ModelInfo = {
  id: SCRIPTED_MODEL_ID,
  display_name: "Scripted harness (offline, no model)",
  provider: "UNKNOWN",
  vision_supported: false,
  harnesses: ["oz"],
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
    checkModel(target, config);
  } catch (err) {
    return unusable(id, target, (err as Error).message);
  }
  return {
    id,
    display_name: target === id ? id : `${id} (${target})`,
    provider: providerOf(target),
    vision_supported: visionSupported(target),
    ...(target === id ? {} : { description: `alias of ${target}` }),
    harnesses: harnessesFor(id, target),
  };
}

function unusable(id: string, target: string, why: string): ModelInfo {
  return {
    id,
    display_name: target === id ? id : `${id} (${target})`,
    provider: providerOf(target),
    vision_supported: visionSupported(target),
    description: `not usable: ${why}`,
    harnesses: harnessesFor(id, target),
  };
}

function providerOf(id: string): ModelProvider {
  const provider = id.slice(0, Math.max(0, id.indexOf("/")));
  if (provider === "anthropic") return "ANTHROPIC";
  if (provider === "openai") return "OPENAI";
  if (provider === "google" || provider === "gemini") return "GOOGLE";
  // openai-compatible servers host any model family: the wire protocol says nothing about the vendor.
  return "UNKNOWN";
}
